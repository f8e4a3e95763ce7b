//! A change that reaches every role restarts the pods one at a time: journalnodes,
//! then namenodes with the active one last, then datanodes.

use std::collections::BTreeSet;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use pretty_assertions::assert_eq;
use serde_json::json;
use strata_operator::roll::REVISION_LABEL;
use strata_testing::Harness;
use strata_testing::http::{Answer, serve};
use strata_testing::wait::{condition, wait_for_condition};
use strata_testing::workloads::{run_until_settled, template_revision};

use crate::{CLUSTER, QUORUM, create_cluster, publish_znode, spec, start_with_namenodes};
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

/// A namenode HTTP server on loopback answering `/isActive` with `status`.
fn fake_namenode(status: &'static str) -> String {
    serve(move |_| Answer::new(status, ""))
}

#[tokio::test]
async fn journalnodes_then_namenodes_standby_first_then_datanodes() {
    let active = fake_namenode("200 OK");
    let standby = fake_namenode("405 Method Not Allowed");
    let harness = start_with_namenodes(vec![
        ("simple-hdfs-namenode-default-0".to_owned(), active),
        ("simple-hdfs-namenode-default-1".to_owned(), standby),
    ]);
    publish_znode(&harness, QUORUM).await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;

    // Every role's core-site.xml names the quorum, so every pod must restart.
    publish_znode(&harness, "zk-moved:2181/znode-1").await;
    harness.settle().await;
    let mut before = current_pods(&harness);
    let mut restarted = Vec::new();
    let mut reasons: Vec<String> = Vec::new();
    run_until_settled(&harness, || {
        let now = current_pods(&harness);
        restarted.extend(now.difference(&before).cloned());
        before = now;
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
        restarted,
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
