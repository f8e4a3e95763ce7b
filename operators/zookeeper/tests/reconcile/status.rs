//! The cluster status follows the StatefulSets and their Pods (ADR027), and reports the
//! deployed product version once every Pod runs it.

use k8s_openapi::api::apps::v1::StatefulSet;
use serde_json::json;
use strata_status::{ConditionStatus, ConditionType};
use zookeeper_operator::crd::ZookeeperCluster;

use crate::support::conditions::{
    status, wait_for_condition, wait_for_deployed_version, wait_for_reason,
};
use crate::support::started;
use crate::support::workload::{PodState, run_group, set_pod, set_stateful_set_status};
use crate::support::{
    Harness, patch_spec, single_group_spec, two_group_spec, wait_for, wait_for_event,
};

const STS: &str = "zk-server-default";

/// Changes what Pods report and waits until the operator has reconciled the change.
async fn after_reconcile(harness: &Harness, change: impl FnOnce()) {
    harness.settle().await;
    let before = harness.reconciles();
    change();
    assert!(
        harness.wait_for_reconcile_after(before).await,
        "the change triggered no reconcile"
    );
    harness.settle().await;
}

#[tokio::test]
async fn conditions_follow_the_stateful_set_and_its_pods() {
    let harness = started(single_group_spec(3), &["default"]).await;

    // The StatefulSet exists but no Pod has started yet.
    set_stateful_set_status(&harness, STS, 0, 0);
    let available = wait_for_condition(
        &harness,
        "zk",
        ConditionType::Available,
        ConditionStatus::False,
    )
    .await;
    assert_eq!(available.reason, "ReplicasUnavailable");
    wait_for_condition(
        &harness,
        "zk",
        ConditionType::Progressing,
        ConditionStatus::True,
    )
    .await;
    wait_for_condition(
        &harness,
        "zk",
        ConditionType::Degraded,
        ConditionStatus::False,
    )
    .await;

    // Every server runs and is ready.
    run_group(&harness, STS, 3);
    let available = wait_for_condition(
        &harness,
        "zk",
        ConditionType::Available,
        ConditionStatus::True,
    )
    .await;
    assert_eq!(available.reason, "AsExpected");
    assert!(available.last_transition_time.is_some());
    wait_for_condition(
        &harness,
        "zk",
        ConditionType::Progressing,
        ConditionStatus::False,
    )
    .await;
    wait_for_condition(
        &harness,
        "zk",
        ConditionType::Upgradable,
        ConditionStatus::True,
    )
    .await;
    wait_for_deployed_version(&harness, "zk", "3.9.5").await;
    wait_for_event(&harness, "zk", "Normal", "AsExpected").await;

    // One server failed: Degraded, not Progressing, and a Warning Event.
    set_pod(
        &harness,
        STS,
        2,
        PodState {
            phase: "Failed",
            ..PodState::RUNNING
        },
    );
    set_stateful_set_status(&harness, STS, 3, 2);
    wait_for_reason(
        &harness,
        "zk",
        ConditionType::Degraded,
        ConditionStatus::True,
        "PodPhaseFailed",
    )
    .await;
    wait_for_condition(
        &harness,
        "zk",
        ConditionType::Available,
        ConditionStatus::False,
    )
    .await;
    wait_for_condition(
        &harness,
        "zk",
        ConditionType::Progressing,
        ConditionStatus::False,
    )
    .await;
    wait_for_condition(
        &harness,
        "zk",
        ConditionType::Upgradable,
        ConditionStatus::False,
    )
    .await;
    wait_for_event(&harness, "zk", "Warning", "PodPhaseFailed").await;

    // A crash-looping server is Running, yet failing.
    set_pod(
        &harness,
        STS,
        2,
        PodState {
            waiting: Some("CrashLoopBackOff"),
            ..PodState::RUNNING
        },
    );
    let degraded = wait_for_reason(
        &harness,
        "zk",
        ConditionType::Degraded,
        ConditionStatus::True,
        "PodsFailing",
    )
    .await;
    assert!(
        degraded.message.contains("zk-server-default-2"),
        "the message names the Pod: {}",
        degraded.message
    );

    // A server whose node stopped reporting: availability is unknown.
    set_pod(
        &harness,
        STS,
        2,
        PodState {
            phase: "Unknown",
            ..PodState::RUNNING
        },
    );
    wait_for_reason(
        &harness,
        "zk",
        ConditionType::Available,
        ConditionStatus::Unknown,
        "PodPhaseUnknown",
    )
    .await;

    // Recovery.
    run_group(&harness, STS, 3);
    wait_for_condition(
        &harness,
        "zk",
        ConditionType::Available,
        ConditionStatus::True,
    )
    .await;
    wait_for_condition(
        &harness,
        "zk",
        ConditionType::Degraded,
        ConditionStatus::False,
    )
    .await;
}

#[tokio::test]
async fn a_rollout_is_progressing_until_the_stateful_set_controller_catches_up() {
    let harness = started(single_group_spec(3), &["default"]).await;
    run_group(&harness, STS, 3);
    wait_for_condition(
        &harness,
        "zk",
        ConditionType::Available,
        ConditionStatus::True,
    )
    .await;
    let generation = crate::support::stored::<StatefulSet>(&harness, STS)
        .metadata
        .generation;

    patch_spec(
        &harness,
        "zk",
        json!({"servers": {"config": {"tickTime": 3000}}}),
    )
    .await;
    wait_for::<StatefulSet>(&harness, STS, "a new Pod template", |sts| {
        sts.metadata.generation > generation
    })
    .await;
    let progressing = wait_for_reason(
        &harness,
        "zk",
        ConditionType::Progressing,
        ConditionStatus::True,
        "RolloutInProgress",
    )
    .await;
    assert!(
        progressing.message.contains(STS),
        "the message names the StatefulSet: {}",
        progressing.message
    );
    let cluster = crate::support::stored::<ZookeeperCluster>(&harness, "zk");
    assert_eq!(
        cluster.status.and_then(|status| status.observed_generation),
        cluster.metadata.generation,
        "the status was computed for the new spec"
    );
    assert_eq!(progressing.observed_generation, cluster.metadata.generation);

    run_group(&harness, STS, 3);
    wait_for_condition(
        &harness,
        "zk",
        ConditionType::Progressing,
        ConditionStatus::False,
    )
    .await;
}

#[tokio::test]
async fn available_needs_every_role_group() {
    let harness = started(two_group_spec(), &["primary", "secondary"]).await;

    run_group(&harness, "zk-server-primary", 3);
    set_stateful_set_status(&harness, "zk-server-secondary", 0, 0);
    let available = wait_for_reason(
        &harness,
        "zk",
        ConditionType::Available,
        ConditionStatus::False,
        "ReplicasUnavailable",
    )
    .await;
    assert!(
        available.message.contains("zk-server-secondary"),
        "the message names the group that is missing replicas: {}",
        available.message
    );
    wait_for_condition(
        &harness,
        "zk",
        ConditionType::Progressing,
        ConditionStatus::True,
    )
    .await;

    run_group(&harness, "zk-server-secondary", 2);
    wait_for_condition(
        &harness,
        "zk",
        ConditionType::Available,
        ConditionStatus::True,
    )
    .await;
    wait_for_condition(
        &harness,
        "zk",
        ConditionType::Progressing,
        ConditionStatus::False,
    )
    .await;
}

#[tokio::test]
async fn the_deployed_version_moves_only_once_every_pod_runs_it() {
    let harness = started(single_group_spec(3), &["default"]).await;

    // Pods from an older template: available, but not the desired version.
    for ordinal in 0..3 {
        set_pod(
            &harness,
            STS,
            ordinal,
            PodState {
                version: Some("3.9.4"),
                ..PodState::RUNNING
            },
        );
    }
    set_stateful_set_status(&harness, STS, 3, 3);
    wait_for_condition(
        &harness,
        "zk",
        ConditionType::Available,
        ConditionStatus::True,
    )
    .await;
    harness.settle().await;
    assert_eq!(
        status(&harness, "zk").and_then(|status| status.deployed_product_version),
        None,
        "no Pod runs 3.9.5 yet"
    );

    // Two of three Pods replaced.
    after_reconcile(&harness, || {
        set_pod(&harness, STS, 0, PodState::RUNNING);
        set_pod(&harness, STS, 1, PodState::RUNNING);
    })
    .await;
    assert_eq!(
        status(&harness, "zk").and_then(|status| status.deployed_product_version),
        None,
        "one Pod still runs 3.9.4"
    );

    set_pod(&harness, STS, 2, PodState::RUNNING);
    wait_for_deployed_version(&harness, "zk", "3.9.5").await;

    // An upgrade: the version moves only when the last Pod runs the new one.
    patch_spec(
        &harness,
        "zk",
        json!({"image": {"productVersion": "3.9.6"}}),
    )
    .await;
    wait_for::<StatefulSet>(
        &harness,
        STS,
        "the new version in the Pod template",
        |sts| {
            sts.spec
                .template
                .metadata
                .as_ref()
                .and_then(|meta| meta.labels.as_ref())
                .is_some_and(|labels| labels["app.kubernetes.io/version"] == "3.9.6")
        },
    )
    .await;
    after_reconcile(&harness, || {
        set_stateful_set_status(&harness, STS, 3, 3);
        for ordinal in 0..2 {
            set_pod(&harness, STS, ordinal, PodState::RUNNING);
        }
    })
    .await;
    assert_eq!(
        status(&harness, "zk").and_then(|status| status.deployed_product_version),
        Some("3.9.5".to_owned()),
        "one Pod still runs 3.9.5"
    );
    set_pod(&harness, STS, 2, PodState::RUNNING);
    wait_for_deployed_version(&harness, "zk", "3.9.6").await;
}
