//! Trino connections: a Trino that does not exist yet is named, and Superset follows
//! its discovery ConfigMap once it appears and when it changes.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;
use strata_testing::wait::{eventually, stored_names, wait_for_degraded};

use crate::secrets::references_hash;
use crate::{CLUSTER, create_cluster, create_user_secrets, spec, start};
use superset_operator::crd::SupersetCluster;

#[tokio::test]
async fn a_trino_without_discovery_is_named_and_its_discovery_rolls_the_pods() {
    let harness = start();
    create_user_secrets(&harness).await;
    create_cluster(
        &harness,
        spec(json!({
            "image": {"custom": "registry.example.com/superset-trino:6.1.0", "productVersion": "6.1.0"},
            "clusterConfig": {
                "metadataDatabase": {"postgresql": {
                    "host": "postgresql.default.svc", "database": "superset",
                    "credentialsSecret": "superset-db"
                }},
                "adminUser": {"secretName": "superset-admin"},
                "trinoConnections": [{"name": "Trino", "discoveryConfigMap": "simple-trino"}]
            }
        })),
    )
    .await;
    let degraded =
        wait_for_degraded::<SupersetCluster>(&harness, CLUSTER, "ConfigMapMissing").await;
    assert!(
        degraded.message.contains("default/simple-trino")
            && degraded.message.contains("TRINO_HOST"),
        "{degraded:?}"
    );
    assert!(stored_names::<StatefulSet>(&harness).is_empty());

    let config_maps: Api<ConfigMap> = Api::namespaced(harness.server.client(), harness.namespace);
    let discovery: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "simple-trino", "namespace": harness.namespace},
        "data": {"TRINO_HOST": "simple-trino-coordinator.default.svc.cluster.local",
                 "TRINO_PORT": "8443", "TRINO_TLS": "true", "ca.crt": "a CA"}
    }))
    .unwrap_or_else(|error| panic!("{error}"));
    config_maps
        .create(&PostParams::default(), &discovery)
        .await
        .unwrap_or_else(|error| panic!("the discovery ConfigMap is created: {error}"));
    let first = eventually(
        "the StatefulSet once Trino's discovery exists",
        || references_hash(&harness),
        || stored_names::<StatefulSet>(&harness),
    )
    .await;

    config_maps
        .patch(
            "simple-trino",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"TRINO_PORT": "8444"}})),
        )
        .await
        .unwrap_or_else(|error| panic!("the discovery ConfigMap is patched: {error}"));
    eventually(
        "a new references hash once Trino moved",
        || references_hash(&harness).filter(|now| *now != first),
        || references_hash(&harness),
    )
    .await;
}
