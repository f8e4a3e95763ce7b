//! The Secrets `render` shows without values, filled in as the operators fill them at
//! run time:
//! - each ZookeeperCluster with TLS by the operator's certificates gets the CA and
//!   per-role-group certificates its certificate step makes on a first reconcile, and
//!   the discovery ConfigMaps that point at it (its own and its ZNodes') get the CA, as
//!   the ZooKeeper operator publishes it;
//! - each TrinoCluster gets what `trino_operator::render::fill` fills: its internal
//!   shared secret, its shutdown and metrics users' passwords, its certificates (with the CA in its
//!   discovery ConfigMap) and its users' password file, made from the users Secret of
//!   the same manifest;
//! - each HDFS cluster's ZKFC keystore (`<hdfs>-zookeeper-client`) gets its store.

use std::time::SystemTime;

use anyhow::Context;
use k8s_openapi::api::core::v1::Secret;
use serde_json::Value;
use strata_operator::certificates::{StoredSecrets, plan_certificates};
use strata_operator::render::fill_rendered_secret;
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
            fill_rendered_secret(objects, &sealed).map_err(|error| anyhow::anyhow!("{error}"))?;
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
    trino_operator::render::fill::fill_runtime_values(documents, objects)
        .map_err(|error| anyhow::anyhow!("{error}"))?;
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
