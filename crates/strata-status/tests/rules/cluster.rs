//! `cluster_conditions`: all six conditions from workloads, operations and
//! failures.

use std::collections::BTreeMap;

use rstest::rstest;
use strata_status::{
    ClusterInputs,
    ConditionStatus::{self, False, True},
    ConditionType::{self, Available, Degraded, Paused, Progressing, Stopped, Upgradable},
    ConditionUpdate, FailureKind, OperationState, Reason, ReconcileFailure, WorkloadObservation,
    cluster_conditions,
};
use strum::IntoEnumIterator;

use crate::fixtures::{Kind, plus, running, waiting_pod, workload};

fn operation(paused: bool, stopped: bool, command: Option<&str>) -> OperationState {
    let annotations = command
        .map(|c| BTreeMap::from([("operator-command".to_owned(), c.to_owned())]))
        .unwrap_or_default();
    OperationState::resolve(paused, stopped, &annotations)
}

fn healthy() -> Vec<WorkloadObservation> {
    vec![
        workload(Kind::StatefulSet, 3, 3)
            .named("server")
            .observe(&running(3)),
        workload(Kind::Deployment, 1, 1)
            .named("web")
            .observe(&running(1)),
    ]
}

fn conditions(
    workloads: &[WorkloadObservation],
    operation: &OperationState,
    failure: Option<&ReconcileFailure>,
) -> Vec<ConditionUpdate> {
    cluster_conditions(&ClusterInputs {
        workloads,
        operation,
        failure,
        progress: None,
        warnings: None,
        outage: None,
    })
}

fn get(conditions: &[ConditionUpdate], condition_type: ConditionType) -> &ConditionUpdate {
    conditions
        .iter()
        .find(|c| c.type_ == condition_type)
        .unwrap()
}

fn summary(conditions: &[ConditionUpdate]) -> Vec<(ConditionType, ConditionStatus, String)> {
    conditions
        .iter()
        .map(|c| (c.type_, c.status, c.reason.to_string()))
        .collect()
}

#[test]
fn all_six_in_display_order() {
    let result = conditions(&healthy(), &operation(false, false, None), None);
    let types: Vec<_> = result.iter().map(|c| c.type_).collect();
    assert_eq!(types, ConditionType::iter().take(6).collect::<Vec<_>>());
}

mod warnings {
    use strata_status::{ConditionStatus, SpecWarning, reason};

    use super::*;

    fn with_warnings(warnings: &[SpecWarning]) -> Vec<ConditionUpdate> {
        cluster_conditions(&ClusterInputs {
            workloads: &healthy(),
            operation: &operation(false, false, None),
            failure: None,
            progress: None,
            warnings: Some(warnings),
            outage: None,
        })
    }

    fn warning(updates: &[ConditionUpdate]) -> Option<(ConditionStatus, String, String)> {
        updates
            .iter()
            .find(|update| update.type_ == ConditionType::Warning)
            .map(|update| {
                (
                    update.status,
                    update.reason.to_string(),
                    update.message.clone(),
                )
            })
    }

    #[test]
    fn a_validated_spec_without_warnings_has_warning_false_last() {
        let updates = with_warnings(&[]);
        let types: Vec<_> = updates.iter().map(|c| c.type_).collect();
        assert_eq!(types, ConditionType::iter().collect::<Vec<_>>());
        assert_eq!(
            warning(&updates),
            Some((
                ConditionStatus::False,
                "AsExpected".to_owned(),
                "The spec has nothing to warn about.".to_owned()
            ))
        );
    }

    #[test]
    fn warnings_name_the_first_reason_and_every_message() {
        let updates = with_warnings(&[
            SpecWarning {
                reason: reason!("NoHighAvailability"),
                message: "one namenode".to_owned(),
            },
            SpecWarning {
                reason: reason!("WeakJournalQuorum"),
                message: "two journalnodes".to_owned(),
            },
        ]);
        assert_eq!(
            warning(&updates),
            Some((
                ConditionStatus::True,
                "NoHighAvailability".to_owned(),
                "one namenode. two journalnodes.".to_owned()
            ))
        );
        let degraded = updates
            .iter()
            .find(|update| update.type_ == ConditionType::Degraded)
            .map(|update| update.status);
        assert_eq!(
            degraded,
            Some(ConditionStatus::False),
            "a warning is not a fault"
        );
    }

    #[test]
    fn without_a_validated_spec_the_stored_warning_stays() {
        let updates = conditions(&healthy(), &operation(false, false, None), None);
        assert_eq!(warning(&updates), None);
    }
}

#[test]
fn healthy_cluster() {
    let result = conditions(&healthy(), &operation(false, false, None), None);
    assert_eq!(
        summary(&result),
        [
            (Available, True, "AsExpected".to_owned()),
            (Progressing, False, "AsExpected".to_owned()),
            (Degraded, False, "AsExpected".to_owned()),
            (Upgradable, True, "AsExpected".to_owned()),
            (Paused, False, "AsExpected".to_owned()),
            (Stopped, False, "AsExpected".to_owned()),
        ]
    );
}

#[rstest]
#[case::stopped_by_spec(operation(false, true, None))]
#[case::stopped_by_annotation(operation(false, false, Some("Stopped")))]
fn stopped_cluster_is_not_available_by_request(#[case] operation: OperationState) {
    // Replicas are 0 and the pods are gone: per workload that is "0 of 0 available".
    let workloads = [workload(Kind::StatefulSet, 0, 0).observe(&[])];
    let result = conditions(&workloads, &operation, None);
    assert_eq!(
        summary(&result),
        [
            (Available, False, "ClusterStopped".to_owned()),
            (Progressing, False, "ClusterStopped".to_owned()),
            (Degraded, False, "ClusterStopped".to_owned()),
            (Upgradable, False, "NotAvailable".to_owned()),
            (Paused, False, "AsExpected".to_owned()),
            (Stopped, True, "ClusterStopped".to_owned()),
        ]
    );
    assert!(
        get(&result, Available)
            .message
            .contains("no pods are running by request"),
        "{}",
        get(&result, Available).message
    );
}

#[test]
fn stopped_cluster_with_failure_is_degraded() {
    let failure = ReconcileFailure::transient("Applying the StatefulSet failed: connection reset.");
    let result = conditions(&healthy(), &operation(false, true, None), Some(&failure));
    let degraded = get(&result, Degraded);
    assert_eq!(
        (degraded.status, &degraded.reason),
        (True, &Reason::RECONCILE_ERROR_RETRYING)
    );
    assert_eq!(get(&result, Available).reason, Reason::CLUSTER_STOPPED);
}

#[test]
fn paused_cluster_still_reports_observed_state() {
    let workloads = [workload(Kind::StatefulSet, 3, 2)
        .named("server")
        .observe(&plus(
            running(2),
            waiting_pod("server-2", "Running", "CrashLoopBackOff"),
        ))];
    let result = conditions(&workloads, &operation(true, false, None), None);
    assert_eq!(
        summary(&result),
        [
            (Available, False, "ReplicasUnavailable".to_owned()),
            (Progressing, False, "PodsFailing".to_owned()),
            (Degraded, True, "PodsFailing".to_owned()),
            (Upgradable, False, "ReconciliationPaused".to_owned()),
            (Paused, True, "ReconciliationPaused".to_owned()),
            (Stopped, False, "AsExpected".to_owned()),
        ]
    );
}

#[test]
fn paused_and_stopped_together() {
    let result = conditions(&healthy(), &operation(true, true, None), None);
    assert_eq!(get(&result, Paused).status, True);
    assert_eq!(get(&result, Stopped).status, True);
    assert_eq!(get(&result, Available).reason, Reason::CLUSTER_STOPPED);
    assert_eq!(
        get(&result, Upgradable).reason,
        Reason::RECONCILIATION_PAUSED
    );
}

#[rstest]
#[case::transient_error_retries(
    ReconcileFailure::transient("Applying the ConfigMap failed: timeout"),
    Reason::RECONCILE_ERROR_RETRYING,
    "The operator retries automatically."
)]
#[case::invalid_spec_needs_user(
    ReconcileFailure::invalid_spec("spec.servers has no role groups"),
    Reason::INVALID_SPEC,
    "The operator cannot continue until this is fixed."
)]
#[case::needs_user_action(
    ReconcileFailure::needs_user("Secret superset-credentials does not exist"),
    Reason::NEEDS_USER_ACTION,
    "The operator cannot continue until this is fixed."
)]
#[case::custom_needs_user_reason(
    ReconcileFailure::new(FailureKind::NeedsUser, strata_status::reason!("ZnodeMissing"), "ZNode simple-znode does not exist."),
    strata_status::reason!("ZnodeMissing"), "The operator cannot continue until this is fixed.")]
fn failure_makes_degraded_true(
    #[case] failure: ReconcileFailure,
    #[case] reason: Reason,
    #[case] follow_up: &str,
) {
    let result = conditions(&healthy(), &operation(false, false, None), Some(&failure));
    let degraded = get(&result, Degraded);
    assert_eq!((degraded.status, &degraded.reason), (True, &reason));
    let expected_start = format!("{}. {follow_up}", failure.message.trim_end_matches('.'));
    assert!(
        degraded.message.starts_with(&expected_start),
        "{}",
        degraded.message
    );
    // Observed state stays visible next to the failure.
    assert_eq!(get(&result, Available).status, True);
    assert_eq!(get(&result, Upgradable).reason, Reason::DEGRADED);
}

#[test]
fn failure_message_does_not_carry_a_healthy_observation() {
    let failure = ReconcileFailure::invalid_spec("spec.servers has no role groups");
    for workloads in [healthy(), Vec::new()] {
        let result = conditions(&workloads, &operation(false, false, None), Some(&failure));
        let message = &get(&result, Degraded).message;
        assert_eq!(
            message,
            "spec.servers has no role groups. The operator cannot continue until this is fixed.",
            "only degraded workloads add their observation to a failure"
        );
    }
}

#[test]
fn unknown_operator_command_makes_degraded_true() {
    let result = conditions(&healthy(), &operation(false, false, Some("Pause")), None);
    let degraded = get(&result, Degraded);
    assert_eq!(
        (degraded.status, &degraded.reason),
        (True, &Reason::UNKNOWN_OPERATOR_COMMAND)
    );
    assert_eq!(get(&result, Paused).status, False);
}

#[test]
fn reconcile_failure_reason_wins_over_unknown_command_but_both_are_told() {
    let failure = ReconcileFailure::invalid_spec("spec.servers has no role groups");
    let result = conditions(
        &healthy(),
        &operation(false, false, Some("Pause")),
        Some(&failure),
    );
    let degraded = get(&result, Degraded);
    assert_eq!(degraded.reason, Reason::INVALID_SPEC);
    assert!(
        degraded.message.contains("spec.servers"),
        "{}",
        degraded.message
    );
    assert!(
        degraded.message.contains("operator-command"),
        "{}",
        degraded.message
    );
}

#[test]
fn no_workloads_is_not_available() {
    let result = conditions(&[], &operation(false, false, None), None);
    assert_eq!(
        (
            get(&result, Available).status,
            &get(&result, Available).reason
        ),
        (False, &Reason::NO_WORKLOADS)
    );
    assert_eq!(get(&result, Upgradable).reason, Reason::NOT_AVAILABLE);
}

#[test]
fn rollout_blocks_upgrades() {
    let workloads = [workload(Kind::DaemonSet, 3, 3)
        .updated(1)
        .observe(&running(3))];
    let result = conditions(&workloads, &operation(false, false, None), None);
    assert_eq!(
        get(&result, Progressing).reason,
        Reason::ROLLOUT_IN_PROGRESS
    );
    assert_eq!(
        (
            get(&result, Upgradable).status,
            &get(&result, Upgradable).reason
        ),
        (False, &Reason::PROGRESSING)
    );
}

mod driven_steps {
    use super::*;
    use strata_status::{ProgressStep, reason};

    fn adding_server() -> ProgressStep {
        ProgressStep {
            reason: reason!("AddingServer"),
            message: "Adding server 2".to_owned(),
        }
    }

    fn with_step(
        workloads: &[WorkloadObservation],
        operation: &OperationState,
    ) -> Vec<ConditionUpdate> {
        cluster_conditions(&ClusterInputs {
            workloads,
            operation,
            failure: None,
            progress: Some(&adding_server()),
            warnings: None,
            outage: None,
        })
    }

    #[test]
    fn a_driven_step_keeps_progressing_true_between_settled_rollouts() {
        let workloads = [workload(Kind::StatefulSet, 3, 3).observe(&running(3))];
        let conditions = with_step(&workloads, &OperationState::default());
        let progressing = get(&conditions, ConditionType::Progressing);
        assert_eq!(
            (progressing.status, progressing.reason.as_str()),
            (ConditionStatus::True, "AddingServer")
        );
        assert_eq!(progressing.message, "Adding server 2.");
    }

    #[test]
    fn stopping_wins_over_a_driven_step() {
        let operation = OperationState {
            stopped: Some(strata_status::OperationTrigger::Spec),
            ..OperationState::default()
        };
        let conditions = with_step(&[], &operation);
        let progressing = get(&conditions, ConditionType::Progressing);
        assert_eq!(progressing.reason.as_str(), "ClusterStopped");
    }
}

mod outage {
    use strata_status::{ConditionStatus, ServiceOutage, reason};

    use super::*;

    fn no_active_namenode() -> ServiceOutage {
        ServiceOutage {
            reason: reason!("NoActiveNameNode"),
            message: "Every namenode is standby".to_owned(),
        }
    }

    fn with_outage(
        workloads: &[WorkloadObservation],
        operation: &OperationState,
    ) -> Vec<ConditionUpdate> {
        cluster_conditions(&ClusterInputs {
            workloads,
            operation,
            failure: None,
            progress: None,
            warnings: None,
            outage: Some(&no_active_namenode()),
        })
    }

    fn status_and_reason(
        updates: &[ConditionUpdate],
        condition_type: ConditionType,
    ) -> (ConditionStatus, String) {
        let update = get(updates, condition_type);
        (update.status, update.reason.to_string())
    }

    #[test]
    fn an_outage_behind_ready_pods_makes_the_cluster_unavailable_and_degraded() {
        let updates = with_outage(&healthy(), &operation(false, false, None));
        for condition_type in [ConditionType::Available, ConditionType::Degraded] {
            let expected = if condition_type == ConditionType::Available {
                ConditionStatus::False
            } else {
                ConditionStatus::True
            };
            assert_eq!(
                status_and_reason(&updates, condition_type),
                (expected, "NoActiveNameNode".to_owned())
            );
        }
        assert_eq!(
            get(&updates, ConditionType::Available).message,
            "Every namenode is standby."
        );
    }

    #[test]
    fn workloads_that_are_not_available_yet_speak_for_themselves() {
        let starting = [workload(Kind::StatefulSet, 3, 1).observe(&running(1))];
        let with = with_outage(&starting, &operation(false, false, None));
        let without = conditions(&starting, &operation(false, false, None), None);
        assert_eq!(with, without);
    }

    #[test]
    fn a_stopped_cluster_reports_no_outage() {
        let updates = with_outage(&[], &operation(false, true, None));
        assert_eq!(
            status_and_reason(&updates, ConditionType::Degraded),
            (ConditionStatus::False, "ClusterStopped".to_owned())
        );
    }
}
