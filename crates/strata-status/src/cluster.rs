//! The one entry point: all six conditions of a cluster.
//!
//! Rules on top of the per-workload table and [`combine`]:
//!
//! - **Stopped** overrides the observed Available and Progressing: Available
//!   False and Progressing False, both `ClusterStopped`, because zero pods
//!   is what the user asked for. Degraded is False (`ClusterStopped`) unless
//!   there is a failure.
//! - **Paused** hides nothing: the observed conditions are still computed,
//!   so the user sees what the cluster does while the operator stands still.
//!   Upgradable is False (`ReconciliationPaused`).
//! - **Failures** (the reconcile failure and an unknown `operator-command`
//!   value) make Degraded True with the first failure's reason; the message
//!   lists all of them, then what was observed on the workloads.

use crate::{
    combine::combine,
    condition::{ConditionStatus, ConditionType, ConditionUpdate},
    error::{ReconcileFailure, sentence},
    operation::OperationState,
    reason::Reason,
    upgradable::upgradable_condition,
    workload::WorkloadObservation,
};

/// Everything the conditions of a cluster are computed from.
#[derive(Clone, Copy, Debug)]
pub struct ClusterInputs<'a> {
    /// The cluster's workloads with their pods.
    pub workloads: &'a [WorkloadObservation],
    /// Paused / Stopped, see [`OperationState::resolve`].
    pub operation: &'a OperationState,
    /// The failure of this reconcile, if it failed.
    pub failure: Option<&'a ReconcileFailure>,
}

/// Computes all six conditions, sorted by [`ConditionType`] order.
#[must_use]
pub fn cluster_conditions(inputs: &ClusterInputs<'_>) -> Vec<ConditionUpdate> {
    let assessments: Vec<_> = inputs
        .workloads
        .iter()
        .map(WorkloadObservation::assess)
        .collect();
    let observed = combine(&assessments);
    let paused = inputs.operation.paused_condition();
    let stopped = inputs.operation.stopped_condition();

    let (available, progressing, observed_degraded) = if inputs.operation.is_stopped() {
        (
            ConditionUpdate::new(
                ConditionType::Available,
                ConditionStatus::False,
                Reason::CLUSTER_STOPPED,
                "The cluster is stopped; no pods are running by request.",
            ),
            ConditionUpdate::new(
                ConditionType::Progressing,
                ConditionStatus::False,
                Reason::CLUSTER_STOPPED,
                "The cluster is stopped; nothing is rolled out.",
            ),
            ConditionUpdate::new(
                ConditionType::Degraded,
                ConditionStatus::False,
                Reason::CLUSTER_STOPPED,
                "The cluster is stopped; no pods are expected.",
            ),
        )
    } else {
        (observed.available, observed.progressing, observed.degraded)
    };

    let failures: Vec<ReconcileFailure> = inputs
        .failure
        .cloned()
        .into_iter()
        .chain(inputs.operation.unknown_command_failure())
        .collect();
    let degraded = degraded_with_failures(observed_degraded, &failures);
    let upgradable = upgradable_condition(&available, &progressing, &degraded, &paused);

    vec![
        available,
        progressing,
        degraded,
        upgradable,
        paused,
        stopped,
    ]
}

/// Degraded True from the failures (first one's reason), followed by the
/// observed message when the workloads are degraded too; the observed
/// condition when there are no failures.
fn degraded_with_failures(
    observed: ConditionUpdate,
    failures: &[ReconcileFailure],
) -> ConditionUpdate {
    let Some(first) = failures.first() else {
        return observed;
    };
    let mut parts: Vec<String> = failures
        .iter()
        .map(|failure| failure.degraded_condition().message)
        .collect();
    if observed.status == ConditionStatus::True && !observed.message.is_empty() {
        parts.push(sentence(&observed.message));
    }
    ConditionUpdate::new(
        ConditionType::Degraded,
        ConditionStatus::True,
        first.reason.clone(),
        parts.join(" "),
    )
}
