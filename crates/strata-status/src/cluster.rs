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
//! - **Driven steps** (a membership change the operator runs server by
//!   server) make Progressing True with the step's reason, unless stopped.
//! - **Failures** (the reconcile failure and an unknown `operator-command`
//!   value) make Degraded True with the first failure's reason; the message
//!   lists all of them, then what was observed on the workloads.
//! - **An outage the product reports** while every workload looks available
//!   (an HDFS whose namenodes are all Ready and all standby) makes Available
//!   False and Degraded True with its reason, unless stopped. While the
//!   workloads are not available yet, they speak for themselves.

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
    /// A step the operator itself drives (a membership change, a roll it
    /// restarts pod by pod), which the workloads alone cannot show.
    pub progress: Option<&'a ProgressStep>,
    /// What validation warned about; `None` when validation did not get that
    /// far, so the stored Warning condition stays as it is.
    pub warnings: Option<&'a [SpecWarning]>,
    /// What the product itself reports as down, which Ready pods cannot show.
    pub outage: Option<&'a ServiceOutage>,
}

/// The product does not serve although its pods are Ready, as the operator
/// learned from the product itself (no active HDFS namenode).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceOutage {
    /// The Available and Degraded reason, such as `NoActiveNameNode`.
    pub reason: Reason,
    /// What does not work, and where to look.
    pub message: String,
}

/// Something a valid spec asks for that runs with less safety than the user
/// may think. It makes the Warning condition True and, when it appears, a
/// Warning Event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecWarning {
    /// The Warning condition's reason, such as `NoHighAvailability`.
    pub reason: Reason,
    /// What it costs and how to lift it.
    pub message: String,
}

/// The Warning condition: True with the first warning's reason and every
/// warning's message, False when there is none.
#[must_use]
pub fn warning_condition(warnings: &[SpecWarning]) -> ConditionUpdate {
    match warnings.first() {
        Some(first) => ConditionUpdate::new(
            ConditionType::Warning,
            ConditionStatus::True,
            first.reason.clone(),
            warnings
                .iter()
                .map(|warning| sentence(&warning.message))
                .collect::<Vec<_>>()
                .join(" "),
        ),
        None => ConditionUpdate::new(
            ConditionType::Warning,
            ConditionStatus::False,
            Reason::AS_EXPECTED,
            "The spec has nothing to warn about.",
        ),
    }
}

/// A step of a change the operator drives itself. While one runs,
/// Progressing is True with its reason, even when every pod is ready between
/// two steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgressStep {
    /// The Progressing reason, such as `AddingServer`.
    pub reason: Reason,
    /// What happens, naming servers and pods.
    pub message: String,
}

/// Computes all six ADR027 conditions and, when validation got that far, the
/// Warning condition, sorted by [`ConditionType`] order.
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
        let progressing = match inputs.progress {
            Some(step) => driven_progress(step, &observed.progressing),
            None => observed.progressing,
        };
        match inputs.outage {
            Some(outage) if observed.available.status == ConditionStatus::True => (
                ConditionUpdate::new(
                    ConditionType::Available,
                    ConditionStatus::False,
                    outage.reason.clone(),
                    sentence(&outage.message),
                ),
                progressing,
                ConditionUpdate::new(
                    ConditionType::Degraded,
                    ConditionStatus::True,
                    outage.reason.clone(),
                    sentence(&outage.message),
                ),
            ),
            _ => (observed.available, progressing, observed.degraded),
        }
    };

    let failures: Vec<ReconcileFailure> = inputs
        .failure
        .cloned()
        .into_iter()
        .chain(inputs.operation.unknown_command_failure())
        .collect();
    let degraded = degraded_with_failures(observed_degraded, &failures);
    let upgradable = upgradable_condition(&available, &progressing, &degraded, &paused);

    let mut conditions = vec![
        available,
        progressing,
        degraded,
        upgradable,
        paused,
        stopped,
    ];
    conditions.extend(inputs.warnings.map(warning_condition));
    conditions
}

/// Progressing True with the driven step's reason; what the workloads show
/// follows when they are progressing too.
fn driven_progress(step: &ProgressStep, observed: &ConditionUpdate) -> ConditionUpdate {
    let mut message = sentence(&step.message);
    if observed.status == ConditionStatus::True && !observed.message.is_empty() {
        message = format!("{message} {}", sentence(&observed.message));
    }
    ConditionUpdate::new(
        ConditionType::Progressing,
        ConditionStatus::True,
        step.reason.clone(),
        message,
    )
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
