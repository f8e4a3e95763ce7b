//! The Secrets `render` shows without values, filled in as the operators fill them at
//! run time:
//! - each ZookeeperCluster with TLS by the operator's certificates gets the CA and
//!   per-role-group certificates its certificate step makes on a first reconcile, and
//!   the discovery ConfigMaps that point at it (its own and its ZNodes') get the CA, as
//!   the ZooKeeper operator publishes it;
//! - each TrinoCluster gets its internal shared secret, its shutdown user's password,
//!   its certificates (with the CA in its discovery ConfigMap) and its users' password
//!   file, made from the users Secret of the same manifest;
//! - each HDFS cluster's ZKFC keystore (`<hdfs>-zookeeper-client`) gets its store.

use std::time::SystemTime;

use anyhow::Context;
use k8s_openapi::api::core::v1::Secret;
use serde_json::Value;
use strata_operator::certificates::{StoredSecrets, plan_certificates};
use zookeeper_operator::build::certificates::certificate_request;
use zookeeper_operator::crd::ZookeeperCluster;
use zookeeper_operator::validate::{CertificateSource, DEFAULT_CLUSTER_DOMAIN, ValidatedCluster};

/// Fills the Secrets of `objects` that the operators of `documents` make at run time.
pub(super) fn fill_secrets(documents: &[Value], objects: &mut Vec<Value>) -> anyhow::Result<()> {
    for document in documents
        .iter()
        .filter(|document| document["kind"] == "ZookeeperCluster")
    {
        let mut document = document.clone();
        if document["metadata"]["namespace"].is_null() {
            // Where `render` places objects without a namespace, as `kubectl apply` does.
            document["metadata"]["namespace"] = Value::String("default".to_owned());
        }
        let cluster: ZookeeperCluster = serde_json::from_value(document)
            .context("a ZookeeperCluster that rendered does not read back")?;
        let validated = ValidatedCluster::new(&cluster, DEFAULT_CLUSTER_DOMAIN)
            .map_err(|error| anyhow::anyhow!("{error}"))?;
        let Some(CertificateSource::Operator { lifetime }) =
            validated.tls.as_ref().map(|tls| &tls.certificates)
        else {
            continue;
        };
        let request = certificate_request(&validated, *lifetime);
        let certificates =
            plan_certificates(&request, &StoredSecrets::default(), SystemTime::now())
                .map_err(|error| anyhow::anyhow!("{error}"))?;
        for sealed in certificates.sealed_secrets() {
            replace_secret(objects, &sealed)?;
        }
        let hosts = format!(
            "{}.{}.svc.",
            validated.identity.name.as_str(),
            validated.identity.namespace
        );
        for object in objects.iter_mut().filter(|object| {
            object["kind"] == "ConfigMap"
                && object["data"]["ZOOKEEPER_TLS"] == "true"
                && object["data"]["ZOOKEEPER_HOSTS"]
                    .as_str()
                    .is_some_and(|value| value.starts_with(&hosts))
        }) {
            object["data"]["ca.crt"] = Value::String(certificates.ca_pem.clone());
        }
    }
    for document in documents
        .iter()
        .filter(|document| document["kind"] == "TrinoCluster")
    {
        fill_trino(document, documents, objects)?;
    }
    for object in objects.iter_mut().filter(|object| {
        object["kind"] == "Secret"
            && object["metadata"]["labels"]["app.kubernetes.io/name"] == "hdfs"
            && object["metadata"]["name"]
                .as_str()
                .is_some_and(|name| name.ends_with("-zookeeper-client"))
    }) {
        let mut secret: Secret = serde_json::from_value(object.clone())?;
        hdfs_operator::config::zookeeper_tls::fill_client_keystore(&mut secret)
            .map_err(|error| anyhow::anyhow!("the ZKFC keystore: {error}"))?;
        *object = serde_json::to_value(&secret)?;
    }
    Ok(())
}

/// A TrinoCluster's Secrets: the internal shared secret and the shutdown user's
/// password (generated, as the operator does once), the certificates with the CA in the
/// discovery ConfigMap, and the users' password file from the users Secret of the same
/// manifest.
fn fill_trino(
    document: &Value,
    documents: &[Value],
    objects: &mut Vec<Value>,
) -> anyhow::Result<()> {
    use trino_operator::build::{internal_secret, security};
    let mut document = document.clone();
    if document["metadata"]["namespace"].is_null() {
        document["metadata"]["namespace"] = Value::String("default".to_owned());
    }
    let cluster: trino_operator::crd::TrinoCluster = serde_json::from_value(document)
        .context("a TrinoCluster that rendered does not read back")?;
    let validated =
        trino_operator::validate::ValidatedCluster::new(&cluster, &[], DEFAULT_CLUSTER_DOMAIN)
            .map_err(|error| anyhow::anyhow!("{error}"))?;
    let namespace = validated.identity.namespace.clone();
    let fill =
        |objects: &mut [Value], name: String, fill: fn(&mut Secret) -> Result<(), String>| {
            let Some(object) = objects.iter_mut().find(|object| {
                object["kind"] == "Secret"
                    && object["metadata"]["name"] == name.as_str()
                    && object["metadata"]["namespace"] == namespace.as_str()
            }) else {
                return Ok(());
            };
            let mut secret: Secret = serde_json::from_value(object.clone())?;
            fill(&mut secret).map_err(|error| anyhow::anyhow!("Secret {name}: {error}"))?;
            *object = serde_json::to_value(&secret)?;
            anyhow::Ok(())
        };
    fill(
        objects,
        internal_secret::internal_secret_name(&validated),
        internal_secret::fill_internal_secret,
    )?;
    fill(
        objects,
        security::graceful_shutdown_secret_name(&validated),
        security::fill_graceful_shutdown_secret,
    )?;
    if let Some(CertificateSource::Operator { lifetime }) = &validated.security.tls {
        let request =
            trino_operator::build::certificates::certificate_request(&validated, *lifetime);
        let certificates =
            plan_certificates(&request, &StoredSecrets::default(), SystemTime::now())
                .map_err(|error| anyhow::anyhow!("{error}"))?;
        for sealed in certificates.sealed_secrets() {
            replace_secret(objects, &sealed)?;
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
        let secret = documents
            .iter()
            .find(|object| {
                object["kind"] == "Secret" && object["metadata"]["name"] == users.as_str()
            })
            .with_context(|| format!("the users Secret {users} is not in the manifest"))?;
        let secret: Secret = serde_json::from_value(secret.clone())?;
        let mut values: std::collections::BTreeMap<String, Vec<u8>> = secret
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
        let file = trino_operator::config::password_file::password_file(
            &values,
            trino_operator::config::server::SHUTDOWN_USER,
        )
        .map_err(|problem| anyhow::anyhow!("Secret {users}: {problem}"))?;
        let name = security::password_db_secret_name(&validated);
        let password_db = Secret {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(name),
                namespace: Some(namespace.clone()),
                ..Default::default()
            },
            data: Some(std::collections::BTreeMap::from([(
                "password.db".to_owned(),
                k8s_openapi::ByteString(file.text().as_bytes().to_vec()),
            )])),
            ..Secret::default()
        };
        let mut value = serde_json::to_value(&password_db)?;
        value["apiVersion"] = Value::String("v1".to_owned());
        value["kind"] = Value::String("Secret".to_owned());
        objects.push(value);
    }
    Ok(())
}

/// Puts `sealed` in place of the rendered Secret of the same name and namespace.
fn replace_secret(objects: &mut [Value], sealed: &Secret) -> anyhow::Result<()> {
    let value = serde_json::to_value(sealed)?;
    let rendered = objects.iter_mut().find(|object| {
        object["kind"] == "Secret"
            && object["metadata"]["name"] == value["metadata"]["name"]
            && object["metadata"]["namespace"] == value["metadata"]["namespace"]
    });
    match rendered {
        Some(object) => {
            object["data"] = value["data"].clone();
            Ok(())
        }
        None => anyhow::bail!(
            "the operator rendered no Secret {}",
            value["metadata"]["name"]
        ),
    }
}
