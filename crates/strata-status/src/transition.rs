//! Turning computed [`ConditionUpdate`]s into stored [`ClusterCondition`]s.
//!
//! This is where `lastTransitionTime` lives: a reconcile only says what the
//! conditions are now; whether that is a transition depends on what was
//! stored before.

use std::collections::BTreeMap;

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};

use crate::condition::{ClusterCondition, ConditionType, ConditionUpdate};

/// Merges `updates` into the `previous` conditions.
///
/// - A condition that appears for the first time gets `lastTransitionTime =
///   now`.
/// - A condition whose status is unchanged keeps its `lastTransitionTime`,
///   even when reason or message change; a transition is a status change.
/// - A condition whose status changed gets `now`.
/// - Updated conditions get `observed_generation`; conditions of known types
///   that were not updated are kept exactly as stored.
/// - Conditions of types this operator does not know
///   ([`StoredConditionType::Other`](crate::StoredConditionType::Other), written by a newer operator version
///   before a rollback) are dropped: this operator does not own them, could
///   never update them, and would otherwise keep stale claims in the status.
/// - When `updates` holds one type twice, the last one wins. When `previous`
///   holds one type twice (hand-edited status), the first one is used.
/// - The result is sorted by [`ConditionType`] order.
///
/// `now` is truncated to whole seconds because `metav1.Time` is serialized
/// with second precision; without that, the value read back from the API
/// server would differ from the one computed and steady state would never be
/// reached.
#[must_use]
pub fn apply_updates(
    previous: &[ClusterCondition],
    updates: impl IntoIterator<Item = ConditionUpdate>,
    now: Time,
    observed_generation: Option<i64>,
) -> Vec<ClusterCondition> {
    let now = truncate_to_seconds(now);
    let mut merged: BTreeMap<ConditionType, ClusterCondition> = BTreeMap::new();
    for condition in previous {
        if let Some(condition_type) = condition.type_.known() {
            merged
                .entry(condition_type)
                .or_insert_with(|| condition.clone());
        }
    }
    let mut latest: BTreeMap<ConditionType, ConditionUpdate> = BTreeMap::new();
    for update in updates {
        latest.insert(update.type_, update);
    }
    for (condition_type, update) in latest {
        let last_transition_time = match merged.get(&condition_type) {
            Some(stored) if stored.status == update.status => stored
                .last_transition_time
                .clone()
                .or_else(|| Some(now.clone())),
            _ => Some(now.clone()),
        };
        merged.insert(
            condition_type,
            ClusterCondition {
                type_: condition_type.into(),
                status: update.status,
                reason: update.reason.into(),
                message: update.message,
                last_transition_time,
                observed_generation,
            },
        );
    }
    merged.into_values().collect()
}

/// Drops sub-second precision, matching what the API server stores.
fn truncate_to_seconds(time: Time) -> Time {
    Timestamp::from_second(time.0.as_second()).map_or(time, Time)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use k8s_openapi::jiff::SignedDuration;

    use super::*;

    #[test]
    fn truncates_now_to_whole_seconds() {
        let precise = Time(
            Timestamp::from_second(1_000)
                .unwrap()
                .checked_add(SignedDuration::from_millis(750))
                .unwrap(),
        );
        assert_eq!(
            truncate_to_seconds(precise),
            Time(Timestamp::from_second(1_000).unwrap())
        );
    }
}
