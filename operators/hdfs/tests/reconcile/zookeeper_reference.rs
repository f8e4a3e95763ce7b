//! The ZNode discovery ConfigMap is a reference: nothing is applied until it exists, its
//! appearance is noticed without a resync, and a change to it re-renders the config.

use k8s_openapi::api::apps::v1::StatefulSet;
use pretty_assertions::assert_eq;
use serde_json::json;
use strata_testing::wait::{eventually, stored_names, wait_for_degraded, wait_for_event};

use crate::{CLUSTER, QUORUM, config_map_entry, create_cluster, publish_znode, spec, start};
use hdfs_operator::crd::HdfsCluster;

#[tokio::test]
async fn a_missing_znode_config_map_is_degraded_until_it_appears() {
    let harness = start();
    create_cluster(&harness, spec(json!({}))).await;

    let degraded =
        wait_for_degraded::<HdfsCluster>(&harness, CLUSTER, "ZookeeperConfigMapMissing").await;
    assert!(
        degraded.message.contains("default/hdfs-znode"),
        "{degraded:?}"
    );
    wait_for_event(&harness, CLUSTER, "Warning", "ZookeeperConfigMapMissing").await;
    harness.settle().await;
    assert_eq!(
        stored_names::<StatefulSet>(&harness).len(),
        0,
        "nothing is applied without the ZooKeeper connection"
    );

    publish_znode(&harness, QUORUM).await;
    eventually(
        "the StatefulSets once the ConfigMap exists",
        || (stored_names::<StatefulSet>(&harness).len() == 3).then_some(()),
        || stored_names::<StatefulSet>(&harness),
    )
    .await;
    let core_site = config_map_entry(&harness, "simple-hdfs-namenode-default", "core-site.xml")
        .unwrap_or_default();
    assert!(core_site.contains(QUORUM), "{core_site}");
}

#[tokio::test]
async fn a_config_map_without_the_zookeeper_key_is_named() {
    let harness = start();
    publish_znode(&harness, " ").await;
    create_cluster(&harness, spec(json!({}))).await;
    let degraded =
        wait_for_degraded::<HdfsCluster>(&harness, CLUSTER, "ZookeeperConfigMapInvalid").await;
    assert!(degraded.message.contains("ZOOKEEPER"), "{degraded:?}");
}

/// Only the namenodes' ZKFCs use ZooKeeper, so only their files name it (issue 21,
/// item 15): a ZooKeeper move changes nothing a journalnode or datanode reads.
#[tokio::test]
async fn a_changed_zookeeper_connection_reaches_the_namenodes_only() {
    let harness = start();
    publish_znode(&harness, QUORUM).await;
    create_cluster(&harness, spec(json!({}))).await;
    harness.settle().await;

    let moved = "zk-new:2181/znode-2";
    publish_znode(&harness, moved).await;
    eventually(
        "the new quorum in the namenodes' core-site.xml",
        || {
            config_map_entry(&harness, "simple-hdfs-namenode-default", "core-site.xml")
                .filter(|file| file.contains(moved))
        },
        || config_map_entry(&harness, "simple-hdfs-namenode-default", "core-site.xml"),
    )
    .await;
    for group in [
        "simple-hdfs-journalnode-default",
        "simple-hdfs-datanode-default",
    ] {
        let file = config_map_entry(&harness, group, "core-site.xml").unwrap_or_default();
        assert!(
            file.contains("fs.defaultFS") && !file.contains("ha.zookeeper.quorum"),
            "{group}: {file}"
        );
    }
}
