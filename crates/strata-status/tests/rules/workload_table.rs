//! The ADR027 table, one named case per row, plus one named case per
//! documented addition. Every case runs for all three workload kinds.

use k8s_openapi::api::core::v1::Pod;
use rstest::rstest;
use strata_status::{
    ConditionStatus::{self, False, True, Unknown},
    ConditionType::{self, Available, Degraded, Progressing},
    ConditionUpdate, Reason, WorkloadAssessment,
};

use crate::fixtures::{
    Kind, deployment_progressing_message, plus, pod, running, waiting_init_pod, waiting_pod,
    workload,
};

fn condition(assessment: &WorkloadAssessment, condition_type: ConditionType) -> &ConditionUpdate {
    match condition_type {
        Available => &assessment.available,
        Progressing => &assessment.progressing,
        Degraded => &assessment.degraded,
        other => panic!("a workload has no {other} condition"),
    }
}

#[rstest]
// Available
#[case::available_true_when_all_replicas_available(
    3,
    3,
    running(3),
    Available,
    True,
    Reason::AS_EXPECTED
)]
#[case::available_false_when_replicas_missing_and_no_pod_unknown(
    3,
    1,
    plus(running(1), pod("pod-1", "Pending")),
    Available,
    False,
    Reason::REPLICAS_UNAVAILABLE
)]
#[case::available_unknown_when_replicas_missing_and_a_pod_unknown(
    3,
    2,
    plus(running(2), pod("pod-2", "Unknown")),
    Available,
    Unknown,
    Reason::POD_PHASE_UNKNOWN
)]
// Progressing
#[case::progressing_true_when_replicas_missing_and_no_pod_failed(
    3,
    1,
    plus(running(1), pod("pod-1", "Pending")),
    Progressing,
    True,
    Reason::REPLICAS_CHANGING
)]
#[case::progressing_false_when_all_replicas_available(
    3,
    3,
    running(3),
    Progressing,
    False,
    Reason::AS_EXPECTED
)]
#[case::progressing_false_when_replicas_missing_and_a_pod_failed(
    3,
    2,
    plus(running(2), pod("pod-2", "Failed")),
    Progressing,
    False,
    Reason::POD_PHASE_FAILED
)]
// Degraded
#[case::degraded_true_when_replicas_missing_and_a_pod_unknown(
    3,
    2,
    plus(running(2), pod("pod-2", "Unknown")),
    Degraded,
    True,
    Reason::POD_PHASE_UNKNOWN
)]
#[case::degraded_true_when_replicas_missing_and_a_pod_failed(
    3,
    2,
    plus(running(2), pod("pod-2", "Failed")),
    Degraded,
    True,
    Reason::POD_PHASE_FAILED
)]
#[case::degraded_false_when_all_replicas_available(
    3,
    3,
    running(3),
    Degraded,
    False,
    Reason::AS_EXPECTED
)]
fn adr027_row(
    #[values(Kind::StatefulSet, Kind::Deployment, Kind::DaemonSet)] kind: Kind,
    #[case] desired: i32,
    #[case] available: i32,
    #[case] pods: Vec<Pod>,
    #[case] condition_type: ConditionType,
    #[case] status: ConditionStatus,
    #[case] reason: Reason,
) {
    let assessment = workload(kind, desired, available).observe(&pods).assess();
    let actual = condition(&assessment, condition_type);
    assert_eq!(
        (actual.type_, actual.status, &actual.reason),
        (condition_type, status, &reason),
        "{actual:?}"
    );
}

/// Additions to the table: failing containers, stale pods, surplus replicas.
/// Each case gives the expected (Available, Progressing, Degraded).
#[rstest]
#[case::crash_loop_counts_as_failing_pod(
    3, 2, plus(running(2), waiting_pod("pod-2", "Running", "CrashLoopBackOff")),
    (False, Reason::REPLICAS_UNAVAILABLE), (False, Reason::PODS_FAILING), (True, Reason::PODS_FAILING))]
#[case::image_pull_backoff_counts_as_failing_pod(
    3, 2, plus(running(2), waiting_pod("pod-2", "Pending", "ImagePullBackOff")),
    (False, Reason::REPLICAS_UNAVAILABLE), (False, Reason::PODS_FAILING), (True, Reason::PODS_FAILING))]
#[case::err_image_pull_counts_as_failing_pod(
    3, 2, plus(running(2), waiting_pod("pod-2", "Pending", "ErrImagePull")),
    (False, Reason::REPLICAS_UNAVAILABLE), (False, Reason::PODS_FAILING), (True, Reason::PODS_FAILING))]
#[case::create_container_config_error_counts_as_failing_pod(
    3, 2, plus(running(2), waiting_pod("pod-2", "Pending", "CreateContainerConfigError")),
    (False, Reason::REPLICAS_UNAVAILABLE), (False, Reason::PODS_FAILING), (True, Reason::PODS_FAILING))]
#[case::init_container_crash_loop_counts_as_failing_pod(
    3, 2, plus(running(2), waiting_init_pod("pod-2", "CrashLoopBackOff")),
    (False, Reason::REPLICAS_UNAVAILABLE), (False, Reason::PODS_FAILING), (True, Reason::PODS_FAILING))]
#[case::container_creating_is_not_failing(
    3, 2, plus(running(2), waiting_pod("pod-2", "Pending", "ContainerCreating")),
    (False, Reason::REPLICAS_UNAVAILABLE), (True, Reason::REPLICAS_CHANGING), (False, Reason::AS_EXPECTED))]
#[case::replicas_starting_is_not_degraded(
    3, 1, plus(running(1), pod("pod-1", "Pending")),
    (False, Reason::REPLICAS_UNAVAILABLE), (True, Reason::REPLICAS_CHANGING), (False, Reason::AS_EXPECTED))]
#[case::phase_failed_wins_reason_over_failing_containers(
    4, 2, plus(plus(running(2), waiting_pod("pod-2", "Running", "CrashLoopBackOff")), pod("pod-3", "Failed")),
    (False, Reason::REPLICAS_UNAVAILABLE), (False, Reason::POD_PHASE_FAILED), (True, Reason::POD_PHASE_FAILED))]
#[case::failing_container_wins_degraded_reason_over_unknown_phase(
    4, 2, plus(plus(running(2), waiting_pod("pod-2", "Running", "CrashLoopBackOff")), pod("pod-3", "Unknown")),
    (Unknown, Reason::POD_PHASE_UNKNOWN), (False, Reason::PODS_FAILING), (True, Reason::PODS_FAILING))]
#[case::evicted_pod_ignored_when_all_replicas_available(
    3, 3, plus(running(3), pod("pod-old", "Failed")),
    (True, Reason::AS_EXPECTED), (False, Reason::AS_EXPECTED), (False, Reason::AS_EXPECTED))]
#[case::crash_looping_leftover_ignored_when_all_replicas_available(
    3, 3, plus(running(3), waiting_pod("pod-old", "Running", "CrashLoopBackOff")),
    (True, Reason::AS_EXPECTED), (False, Reason::AS_EXPECTED), (False, Reason::AS_EXPECTED))]
#[case::surplus_replicas_are_available_and_progressing(
    2, 3, running(3),
    (True, Reason::AS_EXPECTED), (True, Reason::REPLICAS_CHANGING), (False, Reason::AS_EXPECTED))]
#[case::surplus_replicas_with_failed_pod_still_progressing(
    2, 3, plus(running(3), pod("pod-old", "Failed")),
    (True, Reason::AS_EXPECTED), (True, Reason::REPLICAS_CHANGING), (False, Reason::AS_EXPECTED))]
#[case::pod_without_status_counts_as_pending(
    2, 1, plus(running(1), Pod { status: None, ..pod("pod-1", "Running") }),
    (False, Reason::REPLICAS_UNAVAILABLE), (True, Reason::REPLICAS_CHANGING), (False, Reason::AS_EXPECTED))]
#[case::unrecognised_phase_counts_as_unknown(
    2, 1, plus(running(1), pod("pod-1", "Lost")),
    (Unknown, Reason::POD_PHASE_UNKNOWN), (True, Reason::REPLICAS_CHANGING), (True, Reason::POD_PHASE_UNKNOWN))]
#[case::scaled_to_zero_is_available(
    0, 0, vec![],
    (True, Reason::AS_EXPECTED), (False, Reason::AS_EXPECTED), (False, Reason::AS_EXPECTED))]
fn addition(
    #[values(Kind::StatefulSet, Kind::Deployment, Kind::DaemonSet)] kind: Kind,
    #[case] desired: i32,
    #[case] available: i32,
    #[case] pods: Vec<Pod>,
    #[case] expected_available: (ConditionStatus, Reason),
    #[case] expected_progressing: (ConditionStatus, Reason),
    #[case] expected_degraded: (ConditionStatus, Reason),
) {
    let assessment = workload(kind, desired, available).observe(&pods).assess();
    let actual = |c: &ConditionUpdate| (c.status, c.reason.clone());
    assert_eq!(
        [
            actual(&assessment.available),
            actual(&assessment.progressing),
            actual(&assessment.degraded)
        ],
        [expected_available, expected_progressing, expected_degraded],
        "{assessment:#?}"
    );
}

/// Rollouts make Progressing True, whatever the replica counts say.
#[rstest]
#[case::rollout_when_observed_generation_behind(workload(Kind::StatefulSet, 3, 3).observed_generation(Some(1)))]
#[case::rollout_when_observed_generation_missing(workload(Kind::StatefulSet, 3, 3).observed_generation(None))]
#[case::rollout_when_updated_replicas_behind(workload(Kind::StatefulSet, 3, 3).updated(1))]
#[case::rollout_when_revision_changes(workload(Kind::StatefulSet, 3, 3).revisions("rev-1", "rev-2"))]
#[case::rollout_when_revision_changes_with_explicit_rolling_update(workload(Kind::StatefulSet, 3, 3).revisions("rev-1", "rev-2").update_strategy("RollingUpdate"))]
#[case::deployment_rollout_when_observed_generation_behind(workload(Kind::Deployment, 3, 3).observed_generation(Some(1)))]
#[case::deployment_rollout_when_updated_replicas_behind(workload(Kind::Deployment, 3, 3).updated(2))]
#[case::daemon_set_rollout_when_observed_generation_behind(workload(Kind::DaemonSet, 3, 3).observed_generation(Some(1)))]
#[case::daemon_set_rollout_when_updated_replicas_behind(workload(Kind::DaemonSet, 3, 3).updated(0))]
fn rollout_makes_progressing_true(#[case] workload: crate::fixtures::Workload) {
    let assessment = workload.observe(&running(3)).assess();
    assert_eq!(
        (
            assessment.progressing.status,
            &assessment.progressing.reason
        ),
        (True, &Reason::ROLLOUT_IN_PROGRESS),
        "{:?}",
        assessment.progressing
    );
    assert!(
        assessment.progressing.message.contains("is rolling out"),
        "{}",
        assessment.progressing.message
    );
    assert_eq!(assessment.available.status, True);
    assert_eq!(assessment.degraded.status, False);
}

#[rstest]
#[case::on_delete_revision_difference_is_not_a_rollout(workload(Kind::StatefulSet, 3, 3).revisions("rev-1", "rev-2").update_strategy("OnDelete"))]
#[case::settled_stateful_set(workload(Kind::StatefulSet, 3, 3))]
#[case::settled_deployment(workload(Kind::Deployment, 3, 3))]
#[case::settled_daemon_set(workload(Kind::DaemonSet, 3, 3))]
fn settled_workload_is_not_progressing(#[case] workload: crate::fixtures::Workload) {
    let assessment = workload.observe(&running(3)).assess();
    assert_eq!(
        (
            assessment.progressing.status,
            &assessment.progressing.reason
        ),
        (False, &Reason::AS_EXPECTED),
        "{:?}",
        assessment.progressing
    );
}

#[rstest]
fn rollout_beats_failing_pods_for_progressing(
    #[values(Kind::StatefulSet, Kind::Deployment, Kind::DaemonSet)] kind: Kind,
) {
    let pods = plus(
        running(2),
        waiting_pod("pod-2", "Running", "CrashLoopBackOff"),
    );
    let assessment = workload(kind, 3, 2).updated(1).observe(&pods).assess();
    assert_eq!(assessment.progressing.reason, Reason::ROLLOUT_IN_PROGRESS);
    assert_eq!(assessment.progressing.status, True);
    assert_eq!(
        (assessment.degraded.status, &assessment.degraded.reason),
        (True, &Reason::PODS_FAILING)
    );
}

#[rstest]
fn messages_name_workload_and_sorted_pods(
    #[values(Kind::StatefulSet, Kind::Deployment, Kind::DaemonSet)] kind: Kind,
) {
    let pods = vec![
        pod("web-c", "Unknown"),
        pod("web-a", "Unknown"),
        pod("web-b", "Running"),
        waiting_pod("web-e", "Running", "CrashLoopBackOff"),
        waiting_init_pod("web-d", "ErrImagePull"),
    ];
    let assessment = workload(kind, 5, 1).named("web").observe(&pods).assess();
    let kind_name = format!("{kind:?}");
    assert_eq!(
        assessment.available.message,
        format!(
            "{kind_name} web has 1 of 5 desired replicas available. Pods with phase Unknown: [web-a, web-c]."
        )
    );
    assert_eq!(
        assessment.degraded.message,
        format!(
            "{kind_name} web has 1 of 5 desired replicas available. Pods with failing containers: \
             [web-d (init container init ErrImagePull), web-e (container main CrashLoopBackOff)]. \
             Pods with phase Unknown: [web-a, web-c]."
        )
    );
    assert_eq!(assessment.workload, format!("{kind_name} web"));
}

#[test]
fn healthy_messages_are_sentences() {
    let assessment = workload(Kind::StatefulSet, 3, 3)
        .named("zk")
        .observe(&running(3))
        .assess();
    assert_eq!(
        assessment.available.message,
        "StatefulSet zk has 3 of 3 desired replicas available."
    );
    assert_eq!(
        assessment.progressing.message,
        "StatefulSet zk has 3 of 3 desired replicas available and is not rolling out."
    );
    assert_eq!(
        assessment.degraded.message,
        "StatefulSet zk has 3 of 3 desired replicas available and no failing pods."
    );
}

/// A partitioned RollingUpdate leaves the pods below the partition at the old
/// revision on purpose, so the rollout is done once every pod at or above it
/// is updated. Three replicas, revision `rev-1` to `rev-2`; each case gives
/// the expected Progressing status and reason.
#[rstest]
#[case::partition_0_rolling_out(workload(Kind::StatefulSet, 3, 3).partition(0).updated(1).revisions("rev-1", "rev-2"),
    (True, Reason::ROLLOUT_IN_PROGRESS))]
#[case::partition_0_rolled_out(workload(Kind::StatefulSet, 3, 3).partition(0).updated(3).revisions("rev-2", "rev-2"),
    (False, Reason::AS_EXPECTED))]
#[case::partition_mid_way_rolling_out(workload(Kind::StatefulSet, 3, 3).partition(1).updated(1).revisions("rev-1", "rev-2"),
    (True, Reason::ROLLOUT_IN_PROGRESS))]
#[case::partition_mid_way_rolled_out(workload(Kind::StatefulSet, 3, 3).partition(1).updated(2).revisions("rev-1", "rev-2"),
    (False, Reason::AS_EXPECTED))]
#[case::partition_mid_way_rolled_out_with_explicit_rolling_update(
    workload(Kind::StatefulSet, 3, 3).update_strategy("RollingUpdate").partition(2).updated(1).revisions("rev-1", "rev-2"),
    (False, Reason::AS_EXPECTED))]
#[case::partition_mid_way_rolled_out_with_replica_missing(workload(Kind::StatefulSet, 3, 2).partition(1).updated(2).revisions("rev-1", "rev-2"),
    (True, Reason::REPLICAS_CHANGING))]
#[case::partition_mid_way_observed_generation_behind(
    workload(Kind::StatefulSet, 3, 3).partition(1).updated(2).revisions("rev-1", "rev-2").observed_generation(Some(1)),
    (True, Reason::ROLLOUT_IN_PROGRESS))]
#[case::partition_equal_to_replicas(workload(Kind::StatefulSet, 3, 3).partition(3).updated(0).revisions("rev-1", "rev-2"),
    (False, Reason::AS_EXPECTED))]
#[case::partition_above_replicas(workload(Kind::StatefulSet, 3, 3).partition(10).updated(0).revisions("rev-1", "rev-2"),
    (False, Reason::AS_EXPECTED))]
fn partitioned_rolling_update(
    #[case] workload: crate::fixtures::Workload,
    #[case] expected_progressing: (ConditionStatus, Reason),
) {
    let assessment = workload.observe(&running(3)).assess();
    assert_eq!(
        (
            assessment.progressing.status,
            assessment.progressing.reason.clone()
        ),
        expected_progressing,
        "{:?}",
        assessment.progressing
    );
    assert_eq!(assessment.degraded.status, False);
}

#[test]
fn partitioned_rollout_message_names_the_partition() {
    let assessment = workload(Kind::StatefulSet, 3, 3)
        .named("zk")
        .partition(1)
        .updated(1)
        .revisions("rev-1", "rev-2")
        .observe(&running(3))
        .assess();
    assert_eq!(
        assessment.progressing.message,
        "StatefulSet zk is rolling out: 1 of 2 replicas at or above partition 1 run the newest pod template."
    );
}

/// The Deployment controller gives up on a rollout after
/// `progressDeadlineSeconds` and sets its own Progressing condition False
/// with reason `ProgressDeadlineExceeded`. Each case gives the expected
/// (Available, Progressing, Degraded).
#[rstest]
#[case::deadline_exceeded_with_replicas_missing(
    workload(Kind::Deployment, 3, 2).updated(1).deployment_progressing("False", "ProgressDeadlineExceeded"),
    plus(running(2), waiting_pod("pod-2", "Running", "CrashLoopBackOff")),
    (False, Reason::REPLICAS_UNAVAILABLE), (False, Reason::PROGRESS_DEADLINE_EXCEEDED), (True, Reason::PROGRESS_DEADLINE_EXCEEDED))]
#[case::deadline_exceeded_while_old_pods_serve(
    workload(Kind::Deployment, 3, 3).updated(1).deployment_progressing("False", "ProgressDeadlineExceeded"),
    plus(running(3), pod("pod-new", "Pending")),
    (True, Reason::AS_EXPECTED), (False, Reason::PROGRESS_DEADLINE_EXCEEDED), (True, Reason::PROGRESS_DEADLINE_EXCEEDED))]
#[case::deadline_exceeded_with_all_replicas_updated_but_unavailable(
    workload(Kind::Deployment, 3, 1).deployment_progressing("False", "ProgressDeadlineExceeded"),
    plus(running(1), pod("pod-1", "Pending")),
    (False, Reason::REPLICAS_UNAVAILABLE), (False, Reason::PROGRESS_DEADLINE_EXCEEDED), (True, Reason::PROGRESS_DEADLINE_EXCEEDED))]
#[case::deadline_from_an_older_generation_is_ignored(
    workload(Kind::Deployment, 3, 3).updated(1).observed_generation(Some(1)).deployment_progressing("False", "ProgressDeadlineExceeded"),
    running(3),
    (True, Reason::AS_EXPECTED), (True, Reason::ROLLOUT_IN_PROGRESS), (False, Reason::AS_EXPECTED))]
#[case::deployment_progressing_true_is_not_degraded(
    workload(Kind::Deployment, 3, 3).updated(1).deployment_progressing("True", "ReplicaSetUpdated"),
    running(3),
    (True, Reason::AS_EXPECTED), (True, Reason::ROLLOUT_IN_PROGRESS), (False, Reason::AS_EXPECTED))]
#[case::deployment_rolled_out_is_settled(
    workload(Kind::Deployment, 3, 3).deployment_progressing("True", "NewReplicaSetAvailable"),
    running(3),
    (True, Reason::AS_EXPECTED), (False, Reason::AS_EXPECTED), (False, Reason::AS_EXPECTED))]
#[case::paused_deployment_is_not_degraded(
    workload(Kind::Deployment, 3, 3).updated(1).deployment_progressing("Unknown", "DeploymentPaused"),
    running(3),
    (True, Reason::AS_EXPECTED), (True, Reason::ROLLOUT_IN_PROGRESS), (False, Reason::AS_EXPECTED))]
fn deployment_progress_deadline(
    #[case] workload: crate::fixtures::Workload,
    #[case] pods: Vec<Pod>,
    #[case] expected_available: (ConditionStatus, Reason),
    #[case] expected_progressing: (ConditionStatus, Reason),
    #[case] expected_degraded: (ConditionStatus, Reason),
) {
    let assessment = workload.observe(&pods).assess();
    let actual = |c: &ConditionUpdate| (c.status, c.reason.clone());
    assert_eq!(
        [
            actual(&assessment.available),
            actual(&assessment.progressing),
            actual(&assessment.degraded)
        ],
        [expected_available, expected_progressing, expected_degraded],
        "{assessment:#?}"
    );
}

#[test]
fn deadline_messages_quote_the_deployment_controller() {
    let pods = plus(
        running(2),
        waiting_pod("pod-2", "Running", "CrashLoopBackOff"),
    );
    let assessment = workload(Kind::Deployment, 3, 2)
        .named("web")
        .updated(1)
        .deployment_progressing("False", "ProgressDeadlineExceeded")
        .observe(&pods)
        .assess();
    let controller = deployment_progressing_message("web", "ProgressDeadlineExceeded");
    assert_eq!(
        assessment.progressing.message,
        format!(
            "Deployment web exceeded its progress deadline: {controller} \
             Deployment web has 2 of 3 desired replicas available."
        )
    );
    assert_eq!(
        assessment.degraded.message,
        format!(
            "Deployment web exceeded its progress deadline: {controller} \
             Deployment web has 2 of 3 desired replicas available. \
             Pods with failing containers: [pod-2 (container main CrashLoopBackOff)]."
        )
    );
}
