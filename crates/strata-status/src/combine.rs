//! Combining the conditions of several workloads into cluster conditions.
//!
//! Every condition type combines by its own [`Aggregation`], using
//! three-valued (Kleene) logic:
//!
//! - `All` (Available, Upgradable): False if any source is False, else
//!   Unknown if any is Unknown, else True. **False beats Unknown**: the
//!   cluster is available only if every part is, so one part known to be
//!   unavailable settles the answer whatever the unknown part does. Reporting
//!   Unknown there would hide a known outage behind a guess.
//! - `Any` (Progressing, Degraded, Paused, Stopped): True if any source is
//!   True, else Unknown if any is Unknown, else False. True beats Unknown by
//!   the same argument.
//!
//! There is no global "worst status wins" order: for Available True is
//! good, for Degraded True is bad.
//!
//! The result's reason is the reason of the first source (by name) whose
//! status equals the result; the message joins the messages of all those
//! sources, sorted by name, so the output is deterministic.
//!
//! With zero workloads nothing runs, so the cluster is not Available
//! (False, `NoWorkloads`): an empty cluster must not pass `kubectl wait
//! --for=condition=Available`. It is not Progressing either (nothing was
//! observed moving) and not Degraded (nothing was observed failing).

use crate::{
    assess::WorkloadAssessment,
    condition::{Aggregation, ConditionStatus, ConditionType, ConditionUpdate},
    reason::Reason,
};

/// The cluster-wide Available, Progressing and Degraded conditions derived
/// from its workloads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedConditions {
    /// Available over all workloads.
    pub available: ConditionUpdate,
    /// Progressing over all workloads.
    pub progressing: ConditionUpdate,
    /// Degraded over all workloads.
    pub degraded: ConditionUpdate,
}

/// Combines per-workload assessments, see the module docs.
#[must_use]
pub fn combine(assessments: &[WorkloadAssessment]) -> ObservedConditions {
    let pick = |condition_type, field: fn(&WorkloadAssessment) -> &ConditionUpdate| {
        combine_conditions(
            condition_type,
            assessments.iter().map(|a| (a.workload.as_str(), field(a))),
        )
    };
    let available = pick(ConditionType::Available, |a| &a.available);
    let progressing = pick(ConditionType::Progressing, |a| &a.progressing);
    let degraded = pick(ConditionType::Degraded, |a| &a.degraded);
    ObservedConditions {
        available: available.unwrap_or_else(|| {
            ConditionUpdate::new(
                ConditionType::Available,
                ConditionStatus::False,
                Reason::NO_WORKLOADS,
                "No workloads are deployed for this cluster.",
            )
        }),
        progressing: progressing.unwrap_or_else(|| {
            ConditionUpdate::new(
                ConditionType::Progressing,
                ConditionStatus::False,
                Reason::NO_WORKLOADS,
                "No workloads are deployed for this cluster.",
            )
        }),
        degraded: degraded.unwrap_or_else(|| {
            ConditionUpdate::new(
                ConditionType::Degraded,
                ConditionStatus::False,
                Reason::AS_EXPECTED,
                "No workloads are deployed for this cluster, so none is failing.",
            )
        }),
    }
}

/// Combines named conditions of one type by that type's [`Aggregation`].
///
/// Usable for anything with conditions, e.g. mirroring the conditions of
/// sub-resources into their parent. Returns `None` without sources, because
/// what "nothing" means depends on the caller (see [`combine`]).
#[must_use]
pub fn combine_conditions<'a>(
    condition_type: ConditionType,
    sources: impl IntoIterator<Item = (&'a str, &'a ConditionUpdate)>,
) -> Option<ConditionUpdate> {
    let mut sources: Vec<(&str, &ConditionUpdate)> = sources.into_iter().collect();
    if sources.is_empty() {
        return None;
    }
    sources.sort_by(|a, b| a.0.cmp(b.0));
    let has = |status| sources.iter().any(|(_, update)| update.status == status);
    let (decisive, otherwise) = match condition_type.aggregation() {
        Aggregation::All => (ConditionStatus::False, ConditionStatus::True),
        Aggregation::Any => (ConditionStatus::True, ConditionStatus::False),
    };
    let status = if has(decisive) {
        decisive
    } else if has(ConditionStatus::Unknown) {
        ConditionStatus::Unknown
    } else {
        otherwise
    };
    let contributors: Vec<&ConditionUpdate> = sources
        .iter()
        .filter(|(_, update)| update.status == status)
        .map(|(_, update)| *update)
        .collect();
    let reason = contributors
        .first()
        .map_or(Reason::AS_EXPECTED, |update| update.reason.clone());
    let message = contributors
        .iter()
        .map(|update| update.message.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    Some(ConditionUpdate::new(
        condition_type,
        status,
        reason,
        message,
    ))
}
