//! Upgradable and its blockers.

use rstest::rstest;
use strata_status::{
    ConditionStatus::{self, False, True, Unknown},
    ConditionType::{Available, Degraded, Paused, Progressing, Upgradable},
    Reason, upgradable_condition,
};

use crate::fixtures::update;

/// (available, progressing, degraded, paused) -> (status, reason).
#[rstest]
#[case::upgradable_when_available_and_calm(True, False, False, False, True, Reason::AS_EXPECTED)]
#[case::blocked_when_not_available(False, False, False, False, False, Reason::NOT_AVAILABLE)]
#[case::blocked_when_availability_unknown(
    Unknown,
    False,
    False,
    False,
    False,
    Reason::NOT_AVAILABLE
)]
#[case::blocked_when_degraded(True, False, True, False, False, Reason::DEGRADED)]
#[case::blocked_when_degraded_unknown(True, False, Unknown, False, False, Reason::DEGRADED)]
#[case::blocked_when_progressing(True, True, False, False, False, Reason::PROGRESSING)]
#[case::blocked_when_paused(True, False, False, True, False, Reason::RECONCILIATION_PAUSED)]
#[case::paused_is_first_blocker(False, True, True, True, False, Reason::RECONCILIATION_PAUSED)]
#[case::degraded_before_not_available(False, True, True, False, False, Reason::DEGRADED)]
#[case::not_available_before_progressing(False, True, False, False, False, Reason::NOT_AVAILABLE)]
fn blockers(
    #[case] available: ConditionStatus,
    #[case] progressing: ConditionStatus,
    #[case] degraded: ConditionStatus,
    #[case] paused: ConditionStatus,
    #[case] status: ConditionStatus,
    #[case] reason: Reason,
) {
    let result = upgradable_condition(
        &update(Available, available, Reason::AS_EXPECTED),
        &update(Progressing, progressing, Reason::ROLLOUT_IN_PROGRESS),
        &update(Degraded, degraded, Reason::PODS_FAILING),
        &update(Paused, paused, Reason::RECONCILIATION_PAUSED),
    );
    assert_eq!(result.type_, Upgradable);
    assert_eq!(
        (result.status, &result.reason),
        (status, &reason),
        "{result:?}"
    );
}

#[test]
fn message_lists_every_blocker_in_order() {
    let result = upgradable_condition(
        &update(Available, False, Reason::REPLICAS_UNAVAILABLE),
        &update(Progressing, True, Reason::ROLLOUT_IN_PROGRESS),
        &update(Degraded, True, Reason::PODS_FAILING),
        &update(Paused, True, Reason::RECONCILIATION_PAUSED),
    );
    assert_eq!(
        result.message,
        "Upgrades are blocked: reconciliation is paused (ReconciliationPaused); \
         the cluster is degraded (PodsFailing); the cluster is not available (ReplicasUnavailable); \
         the cluster is progressing (RolloutInProgress)."
    );
}
