//! Stop keeps every claim, pause writes nothing to children, a disabled PDB is pruned.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use pretty_assertions::assert_eq;
use serde_json::json;
use strata_testing::wait::{eventually, stored, stored_names};
use strata_testing::workloads::{provision_claims, run_until_settled};

use crate::{QUORUM, config_map_entry, create_cluster, patch_spec, publish_znode, spec, start};

const DATANODES: &str = "simple-hdfs-datanode-default";

#[tokio::test]
async fn a_stopped_cluster_runs_no_pods_and_keeps_every_claim() {
    let harness = start();
    publish_znode(&harness, QUORUM).await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;
    provision_claims(&harness);
    let claims = stored_names::<PersistentVolumeClaim>(&harness);
    assert_eq!(claims.len(), 8, "{claims:?}");

    patch_spec(&harness, json!({"clusterOperation": {"stopped": true}})).await;
    for set in [
        "simple-hdfs-journalnode-default",
        "simple-hdfs-namenode-default",
        DATANODES,
    ] {
        eventually(
            &format!("{set} scaled to zero"),
            || {
                let stored: StatefulSet = stored(&harness, set);
                (stored.spec.replicas == Some(0)).then_some(())
            },
            || stored::<StatefulSet>(&harness, set).spec.replicas,
        )
        .await;
    }
    run_until_settled(&harness, || {}).await;
    assert_eq!(stored_names::<PersistentVolumeClaim>(&harness), claims);
}

#[tokio::test]
async fn a_paused_cluster_gets_no_child_written() {
    let harness = start();
    publish_znode(&harness, QUORUM).await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;

    patch_spec(
        &harness,
        json!({"clusterOperation": {"reconciliationPaused": true}}),
    )
    .await;
    harness.settle().await;
    patch_spec(
        &harness,
        json!({"dataNodes": {"configOverrides": {"hdfs-site.xml": {"dfs.datanode.du.reserved": "1"}}}}),
    )
    .await;
    harness.settle().await;
    let hdfs_site = config_map_entry(&harness, DATANODES, "hdfs-site.xml").unwrap_or_default();
    assert!(
        !hdfs_site.contains("dfs.datanode.du.reserved"),
        "{hdfs_site}"
    );

    patch_spec(
        &harness,
        json!({"clusterOperation": {"reconciliationPaused": false}}),
    )
    .await;
    eventually(
        "the override applied once reconciliation resumes",
        || {
            config_map_entry(&harness, DATANODES, "hdfs-site.xml")
                .filter(|file| file.contains("dfs.datanode.du.reserved"))
        },
        || config_map_entry(&harness, DATANODES, "hdfs-site.xml"),
    )
    .await;
}

#[tokio::test]
async fn a_disabled_pdb_is_removed() {
    let harness = start();
    publish_znode(&harness, QUORUM).await;
    create_cluster(&harness, spec(json!({}))).await;
    harness.settle().await;
    assert_eq!(stored_names::<PodDisruptionBudget>(&harness).len(), 3);

    patch_spec(
        &harness,
        json!({"dataNodes": {
            "roleConfig": {"podDisruptionBudget": {"enabled": false}},
            "roleGroups": {"default": {"replicas": 3}}
        }}),
    )
    .await;
    eventually(
        "the datanode PDB pruned",
        || {
            let names = stored_names::<PodDisruptionBudget>(&harness);
            (!names.contains("simple-hdfs-datanode")).then_some(names)
        },
        || stored_names::<PodDisruptionBudget>(&harness),
    )
    .await;
}
