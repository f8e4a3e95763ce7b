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

/// The namenode's JMX `NameNodeInfo` answer for datanodes with admin states; a
/// `" (dead)"` suffix lists the datanode under `DeadNodes`.
fn namenode_info(states: &BTreeMap<String, &str>) -> String {
    let mut lists = [serde_json::Map::new(), serde_json::Map::new()];
    for (host, state) in states {
        let (state, list) = match state.strip_suffix(" (dead)") {
            Some(state) => (state, 1),
            None => (*state, 0),
        };
        lists[list].insert(
            format!("{host}:9866"),
            json!({"adminState": state, "xferaddr": "10.0.0.1:9866", "lastContact": 1}),
        );
    }
    let [live, dead] = lists;
    json!({"beans": [{
        "name": "Hadoop:service=NameNode,name=NameNodeInfo",
        "ClusterId": "CID-sim-1",
        "LiveNodes": serde_json::Value::Object(live).to_string(),
        "DeadNodes": serde_json::Value::Object(dead).to_string()
    }]})
    .to_string()
}

/// The active namenode's JMX `FSNamesystem` answer with `low_redundancy` blocks.
fn fs_namesystem(low_redundancy: u64) -> String {
    json!({"beans": [{
        "name": "Hadoop:service=NameNode,name=FSNamesystem",
        "tag.HAState": "active",
        "LowRedundancyBlocks": low_redundancy,
        "PendingReconstructionBlocks": 0,
        "MissingBlocks": 0
    }]})
    .to_string()
}

/// What the simulated active namenode reports: datanode admin states and the number
/// of blocks low on redundancy.
#[derive(Default)]
struct NameNodeView {
    states: BTreeMap<String, &'static str>,
    low_redundancy: u64,
}

/// A namenode HTTP server on loopback: `/jmx` answers with the current view,
/// `/isActive` with 200.
fn simulated_namenode(view: Arc<Mutex<NameNodeView>>) -> String {
    serve(move |request| {
        let view = view.lock().expect("the view lock");
        if request.starts_with("GET /jmx?qry=Hadoop:service=NameNode,name=FSNamesystem") {
            Answer::new("200 OK", fs_namesystem(view.low_redundancy))
        } else if request.starts_with("GET /jmx") {
            Answer::new("200 OK", namenode_info(&view.states))
        } else {
            Answer::new("200 OK", "I am Active!")
        }
    })
}

/// A running cluster of four datanodes, every one In Service, with the simulated
/// namenode's view to change.
async fn four_datanodes_in_service() -> (strata_testing::Harness, Arc<Mutex<NameNodeView>>) {
    let view = Arc::new(Mutex::new(NameNodeView {
        states: (0..4)
            .map(|ordinal| (host(ordinal), "In Service"))
            .collect(),
        low_redundancy: 0,
    }));
    let namenode = simulated_namenode(view.clone());
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
    (harness, view)
}

fn replicas(harness: &strata_testing::Harness) -> Option<i32> {
    stored::<StatefulSet>(harness, DATANODES).spec.replicas
}

#[tokio::test]
async fn a_datanode_leaves_only_once_the_namenode_has_decommissioned_it() {
    let (harness, view) = four_datanodes_in_service().await;
    let set = |host: String, state: &'static str| {
        view.lock()
            .expect("the view lock")
            .states
            .insert(host, state);
    };
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

    set(host(3), "Decommission In Progress");
    run_until_settled(&harness, || {}).await;
    assert_eq!(replicas(&harness), Some(4), "held while blocks are copied");

    set(host(3), "Decommissioned");
    // No Kubernetes object changes: the operator asks the namenode again by itself.
    eventually(
        "the datanode StatefulSet shrunk to 3",
        || (replicas(&harness) == Some(3)).then_some(()),
        || replicas(&harness),
    )
    .await;
    run_until_settled(&harness, || {}).await;
    // Its pod is gone, but the namenode counts it alive for minutes: returning it to
    // service now would count its replicas again.
    let progressing = wait_for_reason::<HdfsCluster>(
        &harness,
        CLUSTER,
        ConditionType::Progressing,
        ConditionStatus::True,
        "DecommissioningDataNodes",
    )
    .await;
    assert!(
        progressing
            .message
            .contains("until the namenode declares them dead"),
        "{progressing:?}"
    );
    assert_eq!(
        config_map_entry(&harness, "simple-hdfs-namenode-state", "datanodes"),
        Some(format!("{}\n", host(3))),
        "still excluded while the namenode counts it alive"
    );

    set(host(3), "Decommissioned (dead)");
    eventually(
        "the host out of the exclude list once the namenode lists it dead",
        || {
            config_map_entry(&harness, "simple-hdfs-namenode-state", "datanodes")
                .filter(String::is_empty)
        },
        || config_map_entry(&harness, "simple-hdfs-namenode-state", "datanodes"),
    )
    .await;
}

/// Hadoop marks a datanode that is dead when it is excluded `Decommissioned` at once,
/// and it is live and `Decommissioned` when it returns, before any of its blocks is
/// copied. The active namenode's block counts hold the shrink until they are.
#[tokio::test]
async fn a_datanode_back_from_a_dead_decommission_leaves_only_once_its_blocks_are_copied() {
    let (harness, view) = four_datanodes_in_service().await;

    // Datanode 3 died; excluded while dead, the namenode marks it Decommissioned.
    view.lock()
        .expect("the view lock")
        .states
        .insert(host(3), "Decommissioned (dead)");
    patch_spec(
        &harness,
        json!({"dataNodes": {"roleGroups": {"default": {"replicas": 3}}}}),
    )
    .await;
    run_until_settled(&harness, || {}).await;
    assert_eq!(replicas(&harness), Some(4), "held while it is dead");

    // It runs again: live and Decommissioned, and its blocks have no other replica yet.
    {
        let mut view = view.lock().expect("the view lock");
        view.states.insert(host(3), "Decommissioned");
        view.low_redundancy = 12;
    }
    let progressing = wait_for_reason::<HdfsCluster>(
        &harness,
        CLUSTER,
        ConditionType::Progressing,
        ConditionStatus::True,
        "DecommissioningDataNodes",
    )
    .await;
    eventually(
        "the message naming the block counts",
        || {
            strata_testing::wait::condition::<HdfsCluster>(
                &harness,
                CLUSTER,
                ConditionType::Progressing,
            )
            .filter(|condition| condition.message.contains("LowRedundancyBlocks 12"))
        },
        || progressing.message.clone(),
    )
    .await;
    run_until_settled(&harness, || {}).await;
    assert_eq!(
        replicas(&harness),
        Some(4),
        "held while its blocks lack replicas"
    );

    view.lock().expect("the view lock").low_redundancy = 0;
    eventually(
        "the datanode StatefulSet shrunk to 3 once every block has its replicas",
        || (replicas(&harness) == Some(3)).then_some(()),
        || replicas(&harness),
    )
    .await;
}

#[tokio::test]
async fn a_scale_down_below_the_replication_is_refused() {
    let namenode = simulated_namenode(Arc::new(Mutex::new(NameNodeView::default())));
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

/// A namenode or datanode role group that still runs pods cannot leave the spec (a
/// removal, or a rename): nothing is pruned, and Degraded names the group (issue 21,
/// item 7 for namenodes).
#[rstest::rstest]
#[case::datanodes("dataNodes", 3, "DataNodeGroupRemoved", "simple-hdfs-datanode-extra")]
#[case::namenodes("nameNodes", 2, "NameNodeGroupRemoved", "simple-hdfs-namenode-extra")]
#[tokio::test]
async fn a_group_that_still_runs_pods_cannot_leave_the_spec(
    #[case] role: &str,
    #[case] default_replicas: u16,
    #[case] reason: &str,
    #[case] extra: &str,
) {
    let harness = start_with_namenodes(Vec::new());
    publish_znode(&harness, QUORUM).await;
    create_cluster(
        &harness,
        spec(json!({role: {"roleGroups": {
            "default": {"replicas": default_replicas},
            "extra": {"replicas": 1}
        }}})),
    )
    .await;
    run_until_settled(&harness, || {}).await;

    patch_spec(&harness, json!({role: {"roleGroups": {"extra": null}}})).await;
    let degraded = wait_for_degraded::<HdfsCluster>(&harness, CLUSTER, reason).await;
    assert!(degraded.message.contains(extra), "{}", degraded.message);
    let extra: StatefulSet = stored(&harness, extra);
    assert_eq!(extra.spec.replicas, Some(1), "nothing was pruned");
}
