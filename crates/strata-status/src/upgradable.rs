//! The Upgradable condition: may a product version change start now?
//!
//! True only when the cluster is Available (True), not Degraded (False), not
//! Progressing (False) and not Paused (False). Unknown counts as blocking:
//! an upgrade must not start on a guess.
//!
//! Otherwise False. The reason is the first blocker in this order, chosen
//! by what the user has to deal with first:
//!
//! 1. `ReconciliationPaused`: a paused operator applies no upgrade at all.
//! 2. `Degraded`: something is broken and needs attention.
//! 3. `NotAvailable`: replicas are missing (often a consequence of 2).
//! 4. `Progressing`: a change is still rolling out; waiting is enough.
//!
//! The message lists every blocker, with the blocking condition's reason.

use crate::{
    condition::{ConditionStatus, ConditionType, ConditionUpdate},
    reason::Reason,
};

/// Derives Upgradable from the other conditions, see the module docs.
#[must_use]
pub fn upgradable_condition(
    available: &ConditionUpdate,
    progressing: &ConditionUpdate,
    degraded: &ConditionUpdate,
    paused: &ConditionUpdate,
) -> ConditionUpdate {
    let checks = [
        (
            paused,
            ConditionStatus::False,
            Reason::RECONCILIATION_PAUSED,
            "reconciliation is paused",
        ),
        (
            degraded,
            ConditionStatus::False,
            Reason::DEGRADED,
            "the cluster is degraded",
        ),
        (
            available,
            ConditionStatus::True,
            Reason::NOT_AVAILABLE,
            "the cluster is not available",
        ),
        (
            progressing,
            ConditionStatus::False,
            Reason::PROGRESSING,
            "the cluster is progressing",
        ),
    ];
    let blockers: Vec<(Reason, String)> = checks
        .into_iter()
        .filter(|(condition, required, _, _)| condition.status != *required)
        .map(|(condition, _, reason, text)| {
            let qualifier = if condition.status == ConditionStatus::Unknown {
                " (status Unknown)"
            } else {
                ""
            };
            (reason, format!("{text}{qualifier} ({})", condition.reason))
        })
        .collect();
    match blockers.first() {
        None => ConditionUpdate::new(
            ConditionType::Upgradable,
            ConditionStatus::True,
            Reason::AS_EXPECTED,
            "The cluster is available, not degraded, not progressing and not paused.",
        ),
        Some((reason, _)) => {
            let texts: Vec<&str> = blockers.iter().map(|(_, text)| text.as_str()).collect();
            ConditionUpdate::new(
                ConditionType::Upgradable,
                ConditionStatus::False,
                reason.clone(),
                format!("Upgrades are blocked: {}.", texts.join("; ")),
            )
        }
    }
}
