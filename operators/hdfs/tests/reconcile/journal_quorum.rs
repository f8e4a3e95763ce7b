//! Journalnode membership changes that would lose acknowledged edits, or prune the
//! journalnodes the active namenode writes to, are refused before anything is applied,
//! also while the cluster is stopped.

use k8s_openapi::api::apps::v1::StatefulSet;
use serde_json::json;
use strata_testing::wait::{eventually, stored, wait_for_degraded};
use strata_testing::workloads::run_until_settled;

use crate::{
    CLUSTER, QUORUM, config_map_entry, create_cluster, patch_spec, publish_znode, spec, start,
};
use hdfs_operator::crd::HdfsCluster;

const JOURNALNODES: &str = "simple-hdfs-journalnode-default";

fn journalnode_replicas(harness: &strata_testing::Harness) -> Option<i32> {
    stored::<StatefulSet>(harness, JOURNALNODES).spec.replicas
}

#[tokio::test]
async fn a_shrink_below_half_of_the_journalnodes_is_refused_and_one_step_is_allowed() {
    let harness = start();
    publish_znode(&harness, QUORUM).await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;
    assert_eq!(recorded_journalnodes(&harness), 3);

    shrinking_to_one_is_refused_as_keeping_one_of_three(&harness).await;
    run_until_settled(&harness, || {}).await;
    assert_eq!(
        journalnode_replicas(&harness),
        Some(3),
        "nothing was applied"
    );

    // Stopping the cluster scales everything to 0: the recorded quorum still guards.
    patch_spec(
        &harness,
        json!({"clusterOperation": {"stopped": true},
               "journalNodes": {"roleGroups": {"default": {"replicas": 3}}}}),
    )
    .await;
    run_until_settled(&harness, || {}).await;
    assert_eq!(journalnode_replicas(&harness), Some(0));
    shrinking_to_one_is_refused_as_keeping_one_of_three(&harness).await;

    // 3 → 2 is allowed, but while no namenode runs on it, the next step is still
    // checked against the 3 that hold the edits: 2 → 1 is 3 → 1.
    patch_spec(
        &harness,
        json!({"journalNodes": {"roleGroups": {"default": {"replicas": 2}}}}),
    )
    .await;
    run_until_settled(&harness, || {}).await;
    assert_eq!(
        recorded_journalnodes(&harness),
        3,
        "the namenodes have not run on 2"
    );
    shrinking_to_one_is_refused_as_keeping_one_of_three(&harness).await;

    patch_spec(
        &harness,
        json!({"clusterOperation": {"stopped": false},
               "journalNodes": {"roleGroups": {"default": {"replicas": 2}}}}),
    )
    .await;
    run_until_settled(&harness, || {}).await;
    assert_eq!(
        journalnode_replicas(&harness),
        Some(2),
        "3 to 2 keeps a journalnode of every majority"
    );
    eventually(
        "the 2 journalnodes recorded once the namenodes run on them",
        || (recorded_journalnodes(&harness) == 2).then_some(()),
        || recorded_journalnodes(&harness),
    )
    .await;
}

/// Asks for one journalnode, and waits for the refusal that counts the three the
/// namenodes write to.
async fn shrinking_to_one_is_refused_as_keeping_one_of_three(harness: &strata_testing::Harness) {
    patch_spec(
        harness,
        json!({"journalNodes": {"roleGroups": {"default": {"replicas": 1}}}}),
    )
    .await;
    let degraded = wait_for_degraded::<HdfsCluster>(harness, CLUSTER, "JournalQuorumLost").await;
    assert!(
        degraded.message.contains("keep 1 of the 3"),
        "{}",
        degraded.message
    );
}

/// How many journalnodes the namenode state records.
fn recorded_journalnodes(harness: &strata_testing::Harness) -> usize {
    config_map_entry(harness, "simple-hdfs-namenode-state", "journalnodes")
        .unwrap_or_default()
        .lines()
        .count()
}

#[tokio::test]
async fn a_renamed_journalnode_group_is_refused_and_nothing_is_pruned() {
    let harness = start();
    publish_znode(&harness, QUORUM).await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;

    patch_spec(
        &harness,
        json!({"journalNodes": {"roleGroups": {"default": null, "jn": {"replicas": 3}}}}),
    )
    .await;
    let degraded =
        wait_for_degraded::<HdfsCluster>(&harness, CLUSTER, "JournalNodeGroupRemoved").await;
    assert!(
        degraded.message.contains(JOURNALNODES),
        "{}",
        degraded.message
    );
    run_until_settled(&harness, || {}).await;
    assert_eq!(
        journalnode_replicas(&harness),
        Some(3),
        "nothing was pruned"
    );
    assert!(
        harness
            .server
            .get_typed::<StatefulSet>(harness.namespace, "simple-hdfs-journalnode-jn")
            .is_none(),
        "nothing was applied"
    );
}
