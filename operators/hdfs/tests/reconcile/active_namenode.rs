//! Ready pods are not enough: the cluster is Available only while a namenode is
//! active, which the operator asks the namenodes (`GET /isActive`), since a standby
//! answers its readiness probe too.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::json;
use strata_testing::http::{Answer, serve};
use strata_testing::wait::{wait_for_condition, wait_for_reason};
use strata_testing::workloads::run_until_settled;

use crate::{
    CLUSTER, FIRST_NAMENODE, QUORUM, create_cluster, publish_znode, spec, start_with_namenodes,
};
use hdfs_operator::crd::HdfsCluster;
use strata_status::{ConditionStatus, ConditionType};

/// A namenode that answers `/isActive` with 405 (standby) until `active` is set.
fn switchable_namenode(active: Arc<AtomicBool>) -> String {
    serve(move |_| {
        if active.load(Ordering::SeqCst) {
            Answer::new("200 OK", "I am Active!")
        } else {
            Answer::new("405 Method Not Allowed", "I am Standby")
        }
    })
}

#[tokio::test]
async fn a_cluster_whose_namenodes_are_all_standby_is_not_available_until_one_is_elected() {
    let active = Arc::new(AtomicBool::new(false));
    let harness = start_with_namenodes(vec![(
        FIRST_NAMENODE.to_owned(),
        switchable_namenode(active.clone()),
    )]);
    publish_znode(&harness, QUORUM).await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;

    let available = wait_for_reason::<HdfsCluster>(
        &harness,
        CLUSTER,
        ConditionType::Available,
        ConditionStatus::False,
        "NoActiveNameNode",
    )
    .await;
    assert!(
        available
            .message
            .contains("none of simple-hdfs-namenode-default-0")
            && available.message.contains(QUORUM),
        "{}",
        available.message
    );
    wait_for_reason::<HdfsCluster>(
        &harness,
        CLUSTER,
        ConditionType::Degraded,
        ConditionStatus::True,
        "NoActiveNameNode",
    )
    .await;
    strata_testing::wait::wait_for_event(&harness, CLUSTER, "Warning", "NoActiveNameNode").await;

    // The ZKFCs elect one; no Kubernetes object changes, the operator asks again.
    active.store(true, Ordering::SeqCst);
    wait_for_condition::<HdfsCluster>(
        &harness,
        CLUSTER,
        ConditionType::Available,
        ConditionStatus::True,
    )
    .await;
    wait_for_condition::<HdfsCluster>(
        &harness,
        CLUSTER,
        ConditionType::Degraded,
        ConditionStatus::False,
    )
    .await;
}
