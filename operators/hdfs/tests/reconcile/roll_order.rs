//! A change that reaches every role restarts the pods one at a time: journalnodes,
//! then namenodes with the active one last (once the standby is out of safe mode),
//! then datanodes. A ZooKeeper move restarts only the namenodes.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use pretty_assertions::assert_eq;
use serde_json::json;
use strata_operator::roll::REVISION_LABEL;
use strata_testing::Harness;
use strata_testing::http::{Answer, serve};
use strata_testing::wait::{condition, wait_for_condition};
use strata_testing::workloads::{run_until_settled, template_revision};

use crate::{
    CLUSTER, FIRST_NAMENODE, QUORUM, SECOND_NAMENODE, ZNODE_CONFIG_MAP, create_cluster, patch_spec,
    publish_znode, spec, standby_answer, start_with_namenodes,
};
use hdfs_operator::crd::HdfsCluster;
use strata_status::{ConditionStatus, ConditionType};

/// Pods created from their StatefulSet's current template.
fn current_pods(harness: &Harness) -> BTreeSet<String> {
    let sets = harness.server.list_typed::<StatefulSet>();
    harness
        .server
        .list_typed::<Pod>()
        .into_iter()
        .filter(|pod| {
            let name = pod.metadata.name.clone().unwrap_or_default();
            let revision = pod
                .metadata
                .labels
                .as_ref()
                .and_then(|labels| labels.get(REVISION_LABEL));
            sets.iter().any(|set| {
                let set_name = set.metadata.name.clone().unwrap_or_default();
                name.starts_with(&format!("{set_name}-"))
                    && revision == Some(&template_revision(set))
            })
        })
        .filter_map(|pod| pod.metadata.name)
        .collect()
}

/// A standby namenode on loopback whose safe mode (`Safemode`) is what `safe_mode`
/// holds at each request.
fn fake_standby(safe_mode: Arc<Mutex<String>>) -> String {
    serve(move |request| {
        let safe_mode = safe_mode.lock().expect("the safe mode").clone();
        standby_answer(request, &safe_mode)
    })
}

/// The operator with an active namenode and a standby whose safe mode is what
/// `safe_mode` holds, and the example cluster, settled.
async fn settled_cluster(safe_mode: Arc<Mutex<String>>) -> Harness {
    let active = serve(|_| Answer::new("200 OK", ""));
    let harness = start_with_namenodes(vec![
        (FIRST_NAMENODE.to_owned(), active),
        (SECOND_NAMENODE.to_owned(), fake_standby(safe_mode)),
    ]);
    publish_znode(&harness, QUORUM).await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;
    harness
}

/// The pods restarted onto their StatefulSet's latest template, in order.
struct Restarts {
    before: BTreeSet<String>,
    restarted: Vec<String>,
}

impl Restarts {
    fn from(harness: &Harness) -> Self {
        Self {
            before: current_pods(harness),
            restarted: Vec::new(),
        }
    }

    /// Notes the pods that became current since the last look.
    fn record(&mut self, harness: &Harness) {
        let now = current_pods(harness);
        self.restarted.extend(now.difference(&self.before).cloned());
        self.before = now;
    }
}

/// A change that reaches every role's files: `dfs.replication` is in every
/// `hdfs-site.xml`.
async fn replicate_twice(harness: &Harness) {
    patch_spec(
        harness,
        json!({"clusterConfig": {"zookeeperConfigMapName": ZNODE_CONFIG_MAP, "dfsReplication": 2}}),
    )
    .await;
    harness.settle().await;
}

/// Only the ZKFCs use ZooKeeper (issue 21, item 15): a ZooKeeper move restarts the
/// namenodes, standby first, and no journalnode or datanode.
#[tokio::test]
async fn a_zookeeper_move_restarts_only_the_namenodes() {
    let harness = settled_cluster(Arc::default()).await;

    publish_znode(&harness, "zk-moved:2181/znode-1").await;
    harness.settle().await;
    let mut restarts = Restarts::from(&harness);
    run_until_settled(&harness, || restarts.record(&harness)).await;
    assert_eq!(restarts.restarted, [SECOND_NAMENODE, FIRST_NAMENODE]);
}

#[tokio::test]
async fn journalnodes_then_namenodes_standby_first_then_datanodes() {
    let harness = settled_cluster(Arc::default()).await;

    // Every role's hdfs-site.xml names the replication, so every pod must restart.
    replicate_twice(&harness).await;
    let mut restarts = Restarts::from(&harness);
    let mut reasons: Vec<String> = Vec::new();
    run_until_settled(&harness, || {
        restarts.record(&harness);
        let progressing = condition::<HdfsCluster>(&harness, CLUSTER, ConditionType::Progressing)
            .filter(|condition| condition.status == ConditionStatus::True)
            .map(|condition| condition.reason);
        if let Some(reason) = progressing
            && reasons.last() != Some(&reason)
            && reason.starts_with("Rolling")
        {
            reasons.push(reason);
        }
    })
    .await;

    assert_eq!(
        restarts.restarted,
        [
            "simple-hdfs-journalnode-default-0",
            "simple-hdfs-journalnode-default-1",
            "simple-hdfs-journalnode-default-2",
            "simple-hdfs-namenode-default-1",
            "simple-hdfs-namenode-default-0",
            "simple-hdfs-datanode-default-0",
            "simple-hdfs-datanode-default-1",
            "simple-hdfs-datanode-default-2",
        ]
    );
    assert_eq!(
        reasons,
        [
            "RollingJournalNodes",
            "RollingNameNodes",
            "RollingDataNodes"
        ]
    );
    wait_for_condition::<HdfsCluster>(
        &harness,
        CLUSTER,
        ConditionType::Progressing,
        ConditionStatus::False,
    )
    .await;
}

/// A standby in safe mode would take over unable to accept writes (issue 21, item 8):
/// the roll restarts it, then holds the active back until it leaves safe mode.
#[tokio::test]
async fn the_active_namenode_restarts_only_once_the_standby_is_out_of_safe_mode() {
    const TIP: &str = "Safe mode is ON. The reported blocks 0 needs additional 5 blocks to \
        reach the threshold 0.9990 of total blocks 5.";
    let safe_mode = Arc::new(Mutex::new(String::new()));
    let harness = settled_cluster(safe_mode.clone()).await;

    // The restarted standby comes back in safe mode, as a real one does.
    *safe_mode.lock().expect("the safe mode") = TIP.to_owned();
    replicate_twice(&harness).await;
    let mut restarts = Restarts::from(&harness);
    run_until_settled(&harness, || restarts.record(&harness)).await;
    let restarted = &restarts.restarted;
    assert_eq!(
        restarted.last().map(String::as_str),
        Some(SECOND_NAMENODE),
        "the roll stops after the standby: {restarted:?}"
    );
    let waiting = wait_for_condition::<HdfsCluster>(
        &harness,
        CLUSTER,
        ConditionType::Progressing,
        ConditionStatus::True,
    )
    .await;
    assert_eq!(waiting.reason, "RollingNameNodes");
    assert!(
        waiting
            .message
            .contains(&format!("before {FIRST_NAMENODE} restarts"))
            && waiting
                .message
                .contains(&format!("{SECOND_NAMENODE} is in safe mode")),
        "{}",
        waiting.message
    );

    safe_mode.lock().expect("the safe mode").clear();
    run_until_settled(&harness, || restarts.record(&harness)).await;
    let restarted = &restarts.restarted;
    assert_eq!(
        restarted[restarted.len() - 4..],
        [
            FIRST_NAMENODE,
            "simple-hdfs-datanode-default-0",
            "simple-hdfs-datanode-default-1",
            "simple-hdfs-datanode-default-2",
        ],
        "{restarted:?}"
    );
}
