//! A new cluster: every object, Available through the pods, the SECRET_KEY Secret
//! created once, and stop, pause and PDB.

use std::collections::BTreeSet;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use pretty_assertions::assert_eq;
use serde_json::json;
use strata_status::{ConditionStatus, ConditionType};
use strata_testing::wait::{
    eventually, stored, stored_names, wait_for_available, wait_for_condition,
};
use strata_testing::workloads::run_until_settled;

use crate::{CLUSTER, create_cluster, create_user_secrets, patch_spec, spec, start, start_on};
use superset_operator::crd::SupersetCluster;

fn names(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

#[tokio::test]
async fn a_new_cluster_gets_every_object_and_becomes_available() {
    let harness = start();
    create_user_secrets(&harness).await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;

    assert_eq!(
        stored_names::<StatefulSet>(&harness),
        names(&["simple-superset-node-default"])
    );
    assert_eq!(
        stored_names::<ConfigMap>(&harness),
        names(&["simple-superset-node-default", "simple-superset-packages"])
    );
    assert_eq!(
        stored_names::<Service>(&harness),
        names(&[
            "simple-superset",
            "simple-superset-node-default",
            "simple-superset-node-default-metrics"
        ])
    );
    assert_eq!(
        stored_names::<PodDisruptionBudget>(&harness),
        names(&["simple-superset-node"])
    );
    assert!(stored_names::<Secret>(&harness).contains("simple-superset-secret-key"));
    wait_for_condition::<SupersetCluster>(
        &harness,
        CLUSTER,
        ConditionType::Available,
        ConditionStatus::True,
    )
    .await;
    let status = stored::<SupersetCluster>(&harness, CLUSTER)
        .status
        .unwrap_or_default();
    assert_eq!(status.deployed_product_version.as_deref(), Some("6.1.0"));
}

#[tokio::test]
async fn the_secret_key_is_created_once_and_survives_reconciles_and_an_operator_restart() {
    let harness = start();
    create_user_secrets(&harness).await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;
    let key = |harness: &strata_testing::Harness| {
        stored::<Secret>(harness, "simple-superset-secret-key")
            .data
            .and_then(|data| data.get("SECRET_KEY").cloned())
            .map(|value| value.0)
    };
    let first = key(&harness).expect("a generated key");
    assert_eq!(first.len(), 64, "32 random bytes, hex-encoded");

    patch_spec(&harness, json!({"clusterConfig": {"rowLimit": 1000}})).await;
    run_until_settled(&harness, || {}).await;
    assert_eq!(key(&harness), Some(first.clone()));

    let server = harness.server.clone();
    drop(harness);
    let restarted = start_on(server);
    patch_spec(&restarted, json!({"clusterConfig": {"rowLimit": 2000}})).await;
    run_until_settled(&restarted, || {}).await;
    assert_eq!(key(&restarted), Some(first));
}

#[tokio::test]
async fn stop_pause_and_a_disabled_pdb() {
    let harness = start();
    create_user_secrets(&harness).await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;

    patch_spec(
        &harness,
        json!({"clusterConfig": {"rowLimit": 7},
        "clusterOperation": {"reconciliationPaused": true}}),
    )
    .await;
    harness.settle().await;
    let config = stored::<ConfigMap>(&harness, "simple-superset-node-default")
        .data
        .unwrap_or_default();
    assert!(!config["superset_config.py"].contains("ROW_LIMIT = 7"));

    patch_spec(
        &harness,
        json!({"clusterOperation": {"reconciliationPaused": false, "stopped": true},
        "nodes": {"roleConfig": {"podDisruptionBudget": {"enabled": false}},
                  "roleGroups": {"default": {"replicas": 2}}}}),
    )
    .await;
    eventually(
        "the web servers scaled to zero and the PDB pruned",
        || {
            let set: StatefulSet = stored(&harness, "simple-superset-node-default");
            (set.spec.replicas == Some(0)
                && stored_names::<PodDisruptionBudget>(&harness).is_empty())
            .then_some(())
        },
        || {
            stored::<StatefulSet>(&harness, "simple-superset-node-default")
                .spec
                .replicas
        },
    )
    .await;
    wait_for_condition::<SupersetCluster>(
        &harness,
        CLUSTER,
        ConditionType::Stopped,
        ConditionStatus::True,
    )
    .await;
}

/// The revision label of each of the cluster's pods, by name.
fn pod_revisions(harness: &strata_testing::Harness) -> Vec<(String, Option<String>, bool)> {
    let mut pods: Vec<(String, Option<String>, bool)> = harness
        .server
        .list_typed::<k8s_openapi::api::core::v1::Pod>()
        .into_iter()
        .map(|pod| {
            let ready = pod
                .status
                .as_ref()
                .and_then(|status| status.container_statuses.as_deref())
                .is_some_and(|containers| containers.iter().all(|container| container.ready));
            (
                pod.metadata.name.clone().unwrap_or_default(),
                pod.metadata
                    .labels
                    .as_ref()
                    .and_then(|labels| labels.get("controller-revision-hash").cloned()),
                ready,
            )
        })
        .collect();
    pods.sort();
    pods
}

#[tokio::test]
async fn a_pod_broken_by_a_bad_revision_is_replaced_once_the_spec_is_fixed() {
    let harness = start();
    create_user_secrets(&harness).await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;
    wait_for_available::<SupersetCluster>(&harness, CLUSTER).await;

    // A bad revision: the StatefulSet controller replaces the highest pod, which
    // then crash-loops, and the ordered roll stops there.
    let failing = json!({"metadata": {"annotations": {
        strata_testing::workloads::SIMULATED_FAILURE_ANNOTATION: "CrashLoopBackOff"}}});
    patch_spec(
        &harness,
        json!({"nodes": {"podOverrides": failing,
        "roleGroups": {"default": {"replicas": 2}}}}),
    )
    .await;
    run_until_settled(&harness, || {}).await;
    let broken = pod_revisions(&harness);
    assert!(
        broken.iter().any(|(_, _, ready)| !ready),
        "a pod of the bad revision crash-loops: {broken:?}"
    );

    // The user fixes the spec. The StatefulSet controller alone would wait for the
    // broken pod forever (OrderedReady); the operator replaces it.
    patch_spec(
        &harness,
        json!({"nodes": {"podOverrides": null,
        "roleGroups": {"default": {"replicas": 2}}}}),
    )
    .await;
    run_until_settled(&harness, || {}).await;
    let set: StatefulSet = stored(&harness, "simple-superset-node-default");
    let update_revision = set.status.and_then(|status| status.update_revision);
    let healed = pod_revisions(&harness);
    assert!(
        healed
            .iter()
            .all(|(_, revision, ready)| *ready && *revision == update_revision),
        "every pod runs the fixed revision and is ready: {healed:?}, update revision \
         {update_revision:?}"
    );
    wait_for_available::<SupersetCluster>(&harness, CLUSTER).await;
}
