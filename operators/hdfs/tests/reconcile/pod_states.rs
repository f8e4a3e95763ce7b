//! The status through the pods: a datanode that is not Ready makes the cluster
//! unavailable, and a namenode that finds a state it must not start from says why
//! through its init container's termination message, which the cluster reports instead
//! of the crash loop it causes.

use k8s_openapi::api::core::v1::Pod;
use serde_json::json;
use strata_status::{ConditionStatus, ConditionType};
use strata_testing::wait::{wait_for_available, wait_for_degraded, wait_for_reason};
use strata_testing::workloads::{PodState, run_until_settled, set_pod, step_stateful_sets};

use crate::{CLUSTER, QUORUM, create_cluster, publish_znode, spec, start};
use hdfs_operator::crd::HdfsCluster;

#[tokio::test]
async fn a_partial_format_is_degraded_with_the_scripts_reason() {
    let harness = start();
    publish_znode(&harness, QUORUM).await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;

    // The kubelet's view after format-namenode.sh stopped the pod on a name directory
    // with VERSION and no fsimage, and restarted it a few times.
    harness
        .server
        .patch_status_direct::<Pod>(
            harness.namespace,
            "simple-hdfs-namenode-default-1",
            json!({
                "phase": "Pending",
                "initContainerStatuses": [{
                    "name": "format-namenode",
                    "image": "docker.io/apache/hadoop:3.4.2",
                    "imageID": "",
                    "ready": false,
                    "restartCount": 4,
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                    "lastState": {"terminated": {
                        "exitCode": 1,
                        "reason": "Error",
                        "message": "PartialFormat\n/data/name holds current/VERSION but no fsimage: move it aside so the pod bootstraps from the active namenode\n"
                    }}
                }],
                "containerStatuses": [
                    {"name": "namenode", "image": "", "imageID": "", "ready": false, "restartCount": 0,
                     "state": {"waiting": {"reason": "PodInitializing"}}},
                    {"name": "zkfc", "image": "", "imageID": "", "ready": false, "restartCount": 0,
                     "state": {"waiting": {"reason": "PodInitializing"}}}
                ]
            }),
        )
        .expect("the pod status is written");
    // The StatefulSet controller counts one ready namenode less.
    step_stateful_sets(&harness);

    let degraded = wait_for_degraded::<HdfsCluster>(&harness, CLUSTER, "PartialFormat").await;
    assert!(
        degraded.message.contains("move it aside"),
        "{}",
        degraded.message
    );
}

#[tokio::test]
async fn a_datanode_that_is_not_registered_makes_the_cluster_unavailable_until_it_is() {
    let harness = start();
    publish_znode(&harness, QUORUM).await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;

    // Its readiness probe fails while no namenode has its registration.
    set_pod(
        &harness,
        "simple-hdfs-datanode-default",
        2,
        PodState::NOT_READY,
    );
    step_stateful_sets(&harness);
    let available = wait_for_reason::<HdfsCluster>(
        &harness,
        CLUSTER,
        ConditionType::Available,
        ConditionStatus::False,
        "ReplicasUnavailable",
    )
    .await;
    assert!(
        available.message.contains("simple-hdfs-datanode-default"),
        "{}",
        available.message
    );

    set_pod(
        &harness,
        "simple-hdfs-datanode-default",
        2,
        PodState::RUNNING,
    );
    step_stateful_sets(&harness);
    wait_for_available::<HdfsCluster>(&harness, CLUSTER).await;
}
