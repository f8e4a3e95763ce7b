//! Datanode scale-down with a simulated namenode: the leaving datanode is excluded
//! first, the StatefulSet shrinks only once the namenode reports it Decommissioned,
//! and a scale-down below `dfsReplication` is refused. The same namenode gives the
//! cluster ID the status records.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::apps::v1::StatefulSet;
use pretty_assertions::assert_eq;
use serde_json::json;
use strata_status::{ConditionStatus, ConditionType};
use strata_testing::http::{Answer, serve};
use strata_testing::wait::{eventually, stored, wait_for_degraded, wait_for_reason};
use strata_testing::workloads::run_until_settled;

use crate::{
    CLUSTER, QUORUM, config_map_entry, create_cluster, patch_spec, publish_znode, spec,
    start_with_namenodes,
};
use hdfs_operator::crd::HdfsCluster;

const DATANODES: &str = "simple-hdfs-datanode-default";

fn host(ordinal: u16) -> String {
    format!("{DATANODES}-{ordinal}.{DATANODES}.default.svc.cluster.local")
}

/// The namenode's JMX `NameNodeInfo` answer for datanodes with admin states.
fn namenode_info(states: &BTreeMap<String, &str>) -> String {
    let live: serde_json::Map<String, serde_json::Value> = states
        .iter()
        .map(|(host, state)| {
            (
                format!("{host}:9866"),
                json!({"adminState": state, "xferaddr": "10.0.0.1:9866", "lastContact": 1}),
            )
        })
        .collect();
    json!({"beans": [{
        "name": "Hadoop:service=NameNode,name=NameNodeInfo",
        "ClusterId": "CID-sim-1",
        "LiveNodes": serde_json::Value::Object(live).to_string(),
        "DeadNodes": "{}"
    }]})
    .to_string()
}

/// A namenode HTTP server on loopback: `/jmx` answers with the current `states`,
/// `/isActive` with 200.
fn simulated_namenode(states: Arc<Mutex<BTreeMap<String, &'static str>>>) -> String {
    serve(move |request| {
        if request.starts_with("GET /jmx") {
            Answer::new(
                "200 OK",
                namenode_info(&states.lock().expect("the states lock")),
            )
        } else {
            Answer::new("200 OK", "I am Active!")
        }
    })
}

fn replicas(harness: &strata_testing::Harness) -> Option<i32> {
    stored::<StatefulSet>(harness, DATANODES).spec.replicas
}

#[tokio::test]
async fn a_datanode_leaves_only_once_the_namenode_has_decommissioned_it() {
    let states = Arc::new(Mutex::new(
        (0..4)
            .map(|ordinal| (host(ordinal), "In Service"))
            .collect::<BTreeMap<_, _>>(),
    ));
    let namenode = simulated_namenode(states.clone());
    let harness = start_with_namenodes(vec![(
        "simple-hdfs-namenode-default-0".to_owned(),
        namenode,
    )]);
    publish_znode(&harness, QUORUM).await;
    create_cluster(
        &harness,
        spec(json!({"dataNodes": {"roleGroups": {"default": {"replicas": 4}}}})),
    )
    .await;
    run_until_settled(&harness, || {}).await;
    eventually(
        "the cluster ID in the status",
        || {
            stored::<HdfsCluster>(&harness, CLUSTER)
                .status
                .and_then(|status| status.product.cluster_id)
        },
        || stored::<HdfsCluster>(&harness, CLUSTER).status,
    )
    .await;
    assert_eq!(
        config_map_entry(&harness, "simple-hdfs-namenode-state", "cluster-id").as_deref(),
        Some("CID-sim-1")
    );

    patch_spec(
        &harness,
        json!({"dataNodes": {"roleGroups": {"default": {"replicas": 3}}}}),
    )
    .await;
    let progressing = wait_for_reason::<HdfsCluster>(
        &harness,
        CLUSTER,
        ConditionType::Progressing,
        ConditionStatus::True,
        "DecommissioningDataNodes",
    )
    .await;
    assert!(
        progressing.message.contains(&format!("{DATANODES}-3")),
        "{progressing:?}"
    );
    assert_eq!(
        config_map_entry(&harness, "simple-hdfs-namenode-state", "datanodes"),
        Some(format!("{}\n", host(3)))
    );
    run_until_settled(&harness, || {}).await;
    assert_eq!(replicas(&harness), Some(4), "held while decommissioning");

    states
        .lock()
        .expect("the states lock")
        .insert(host(3), "Decommission In Progress");
    run_until_settled(&harness, || {}).await;
    assert_eq!(replicas(&harness), Some(4), "held while blocks are copied");

    states
        .lock()
        .expect("the states lock")
        .insert(host(3), "Decommissioned");
    // No Kubernetes object changes: the operator asks the namenode again by itself.
    eventually(
        "the datanode StatefulSet shrunk to 3",
        || (replicas(&harness) == Some(3)).then_some(()),
        || replicas(&harness),
    )
    .await;
    run_until_settled(&harness, || {}).await;
    eventually(
        "the host out of the exclude list once its pod is gone",
        || {
            config_map_entry(&harness, "simple-hdfs-namenode-state", "datanodes")
                .filter(String::is_empty)
        },
        || config_map_entry(&harness, "simple-hdfs-namenode-state", "datanodes"),
    )
    .await;
}

#[tokio::test]
async fn a_scale_down_below_the_replication_is_refused() {
    let states = Arc::new(Mutex::new(BTreeMap::new()));
    let namenode = simulated_namenode(states);
    let harness = start_with_namenodes(vec![(
        "simple-hdfs-namenode-default-0".to_owned(),
        namenode,
    )]);
    publish_znode(&harness, QUORUM).await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;

    patch_spec(
        &harness,
        json!({"dataNodes": {"roleGroups": {"default": {"replicas": 2}}}}),
    )
    .await;
    let degraded =
        wait_for_degraded::<HdfsCluster>(&harness, CLUSTER, "ScaleDownBelowReplication").await;
    assert!(degraded.message.contains('3'), "{degraded:?}");
    assert_eq!(replicas(&harness), Some(3));
}

#[tokio::test]
async fn a_datanode_group_that_still_runs_datanodes_cannot_leave_the_spec() {
    let harness = start_with_namenodes(Vec::new());
    publish_znode(&harness, QUORUM).await;
    create_cluster(
        &harness,
        spec(json!({"dataNodes": {"roleGroups": {
            "default": {"replicas": 3},
            "extra": {"replicas": 1}
        }}})),
    )
    .await;
    run_until_settled(&harness, || {}).await;

    patch_spec(
        &harness,
        json!({"dataNodes": {"roleGroups": {"extra": null}}}),
    )
    .await;
    let degraded =
        wait_for_degraded::<HdfsCluster>(&harness, CLUSTER, "DataNodeGroupRemoved").await;
    assert!(
        degraded.message.contains("simple-hdfs-datanode-extra"),
        "{}",
        degraded.message
    );
    let extra: StatefulSet = stored(&harness, "simple-hdfs-datanode-extra");
    assert_eq!(extra.spec.replicas, Some(1), "nothing was pruned");
}
