//! What the operator makes only in the cluster, filled into `render`'s objects for a
//! manifest run outside one (`cargo xtask run`, and other products' real tests that
//! need a real Trino): the internal shared secret and the shutdown and metrics users' passwords,
//! generated as the operator generates them once; the certificates, with the CA in
//! the discovery ConfigMap; and the users' password file, from the users Secret of
//! the same manifest.

use std::collections::BTreeMap;
use std::time::SystemTime;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;
use strata_operator::certificates::{StoredSecrets, plan_certificates};
use strata_operator::render::fill_rendered_secret;
use strata_operator::tls::CertificateSource;

use crate::build::certificates::certificate_request;
use crate::build::{internal_secret, security};
use crate::config::password_file::password_file;
use crate::config::server::OPERATOR_USERS;
use crate::crd::TrinoCluster;
use crate::validate::{DEFAULT_CLUSTER_DOMAIN, ValidatedCluster};

/// Fills the run-time values of every TrinoCluster of `documents` into `objects`.
pub fn fill_runtime_values(documents: &[Value], objects: &mut Vec<Value>) -> Result<(), String> {
    for document in documents
        .iter()
        .filter(|document| document["kind"] == "TrinoCluster")
    {
        fill_cluster(document, documents, objects)?;
    }
    Ok(())
}

fn fill_cluster(
    document: &Value,
    documents: &[Value],
    objects: &mut Vec<Value>,
) -> Result<(), String> {
    let mut document = document.clone();
    if document["metadata"]["namespace"].is_null() {
        // Where `render` places objects without a namespace, as `kubectl apply` does.
        document["metadata"]["namespace"] = Value::String("default".to_owned());
    }
    let cluster: TrinoCluster = serde_json::from_value(document)
        .map_err(|error| format!("a TrinoCluster that rendered does not read back: {error}"))?;
    let validated = ValidatedCluster::new(&cluster, &[], DEFAULT_CLUSTER_DOMAIN)
        .map_err(|error| error.to_string())?;
    let namespace = validated.identity.namespace.clone();
    fill_generated(
        objects,
        &namespace,
        &internal_secret::internal_secret_name(&validated),
        internal_secret::fill_internal_secret,
    )?;
    fill_generated(
        objects,
        &namespace,
        &security::graceful_shutdown_secret_name(&validated),
        security::fill_graceful_shutdown_secret,
    )?;
    fill_generated(
        objects,
        &namespace,
        &security::metrics_secret_name(&validated),
        security::fill_metrics_secret,
    )?;
    if let Some(CertificateSource::Operator { lifetime }) = &validated.security.tls {
        let request = certificate_request(&validated, *lifetime);
        let certificates =
            plan_certificates(&request, &StoredSecrets::default(), SystemTime::now())
                .map_err(|error| error.to_string())?;
        for sealed in certificates.sealed_secrets() {
            fill_rendered_secret(objects, &sealed)?;
        }
        if let Some(discovery) = objects.iter_mut().find(|object| {
            object["kind"] == "ConfigMap"
                && object["metadata"]["name"] == validated.identity.name.as_str()
                && object["metadata"]["namespace"] == namespace.as_str()
        }) {
            discovery["data"]["ca.crt"] = Value::String(certificates.ca_pem.clone());
        }
    }
    if let Some(users) = &validated.security.users_secret {
        objects.push(password_db(&validated, users, documents)?);
    }
    Ok(())
}

/// Fills the rendered Secret `name` with `fill`, as the operator does when it creates
/// the Secret once.
fn fill_generated(
    objects: &mut [Value],
    namespace: &str,
    name: &str,
    fill: fn(&mut Secret) -> Result<(), String>,
) -> Result<(), String> {
    let Some(object) = objects.iter_mut().find(|object| {
        object["kind"] == "Secret"
            && object["metadata"]["name"] == name
            && object["metadata"]["namespace"] == namespace
    }) else {
        return Ok(());
    };
    let mut secret: Secret =
        serde_json::from_value(object.clone()).map_err(|error| error.to_string())?;
    fill(&mut secret).map_err(|error| format!("Secret {name}: {error}"))?;
    *object = serde_json::to_value(&secret).map_err(|error| error.to_string())?;
    Ok(())
}

/// `<trino>-password-db`, from the users Secret `users` of `documents`.
fn password_db(
    validated: &ValidatedCluster,
    users: &str,
    documents: &[Value],
) -> Result<Value, String> {
    let secret = documents
        .iter()
        .find(|object| object["kind"] == "Secret" && object["metadata"]["name"] == users)
        .ok_or_else(|| format!("the users Secret {users} is not in the manifest"))?;
    let secret: Secret =
        serde_json::from_value(secret.clone()).map_err(|error| error.to_string())?;
    let mut values: BTreeMap<String, Vec<u8>> = secret
        .data
        .unwrap_or_default()
        .into_iter()
        .map(|(key, value)| (key, value.0))
        .collect();
    values.extend(
        secret
            .string_data
            .unwrap_or_default()
            .into_iter()
            .map(|(key, value)| (key, value.into_bytes())),
    );
    let file = password_file(&values, &OPERATOR_USERS)
        .map_err(|problem| format!("Secret {users}: {problem}"))?;
    let password_db = Secret {
        metadata: ObjectMeta {
            name: Some(security::password_db_secret_name(validated)),
            namespace: Some(validated.identity.namespace.clone()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(
            "password.db".to_owned(),
            ByteString(file.text().as_bytes().to_vec()),
        )])),
        ..Secret::default()
    };
    let mut value = serde_json::to_value(&password_db).map_err(|error| error.to_string())?;
    value["apiVersion"] = Value::String("v1".to_owned());
    value["kind"] = Value::String("Secret".to_owned());
    Ok(value)
}
