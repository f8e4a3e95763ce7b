//! TLS to the metadata database: the CA's ConfigMap is checked before anything is
//! applied, and a new CA rolls the pods, which read it once into their TLS context.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use strata_testing::Harness;
use strata_testing::wait::{eventually, stored_names, wait_for_degraded, wait_for_event};

use crate::secrets::references_hash;
use crate::{CLUSTER, create_cluster, create_user_secrets, spec, start};
use superset_operator::crd::SupersetCluster;

fn config_maps(harness: &Harness) -> Api<ConfigMap> {
    Api::namespaced(harness.server.client(), harness.namespace)
}

fn ca_config_map(harness: &Harness, pem: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "db-ca", "namespace": harness.namespace},
        "data": {"ca.crt": pem}
    }))
    .unwrap_or_else(|error| panic!("the ConfigMap deserialises: {error}"))
}

fn tls_spec() -> Value {
    spec(json!({"clusterConfig": {
        "metadataDatabase": {"postgresql": {
            "host": "postgresql.default.svc", "database": "superset",
            "credentialsSecret": "superset-db",
            "tls": {"sslMode": "verify-full", "caCertificate": {"configMapName": "db-ca"}}
        }},
        "adminUser": {"secretName": "superset-admin"}
    }}))
}

#[tokio::test]
async fn a_missing_database_ca_is_named_and_a_new_ca_rolls_the_pods() {
    let harness = start();
    create_user_secrets(&harness).await;
    create_cluster(&harness, tls_spec()).await;
    let degraded =
        wait_for_degraded::<SupersetCluster>(&harness, CLUSTER, "ConfigMapMissing").await;
    assert!(
        degraded.message.contains("default/db-ca")
            && degraded.message.contains("tls.caCertificate"),
        "{degraded:?}"
    );
    wait_for_event(&harness, CLUSTER, "Warning", "ConfigMapMissing").await;
    harness.settle().await;
    assert!(stored_names::<StatefulSet>(&harness).is_empty());

    config_maps(&harness)
        .create(&PostParams::default(), &ca_config_map(&harness, "first CA"))
        .await
        .unwrap_or_else(|error| panic!("the CA ConfigMap is created: {error}"));
    let first = eventually(
        "the StatefulSet, with a references hash, once the CA exists",
        || references_hash(&harness),
        || stored_names::<StatefulSet>(&harness),
    )
    .await;

    config_maps(&harness)
        .patch(
            "db-ca",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"ca.crt": "second CA"}})),
        )
        .await
        .unwrap_or_else(|error| panic!("the CA ConfigMap is patched: {error}"));
    eventually(
        "a new references hash after the CA changed",
        || references_hash(&harness).filter(|now| *now != first),
        || references_hash(&harness),
    )
    .await;
}
