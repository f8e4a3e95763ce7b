//! lastTransitionTime and merge rules of `apply_updates`.

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::SignedDuration};
use rstest::rstest;
use strata_status::{
    ClusterCondition,
    ConditionStatus::{False, True, Unknown},
    ConditionType::{Available, Degraded, Paused, Progressing, Stopped},
    ConditionUpdate, Reason, apply_updates,
};

use crate::fixtures::{at, update};

const T0: i64 = 1_700_000_000;
const T1: i64 = T0 + 60;

fn stored(update: ConditionUpdate, time: i64, generation: i64) -> ClusterCondition {
    apply_updates(&[], [update], at(time), Some(generation))
        .pop()
        .unwrap()
}

#[rstest]
#[case::first_appearance_sets_now(None, update(Available, True, Reason::AS_EXPECTED), Some(T1))]
#[case::unchanged_status_keeps_time(
    Some(update(Available, True, Reason::AS_EXPECTED)),
    update(Available, True, Reason::AS_EXPECTED),
    Some(T0)
)]
#[case::unchanged_status_with_new_reason_keeps_time(
    Some(update(Degraded, True, Reason::PODS_FAILING)),
    update(Degraded, True, Reason::POD_PHASE_FAILED),
    Some(T0)
)]
#[case::unchanged_status_with_new_message_keeps_time(
    Some(update(Progressing, True, Reason::ROLLOUT_IN_PROGRESS)),
    ConditionUpdate::new(Progressing, True, Reason::ROLLOUT_IN_PROGRESS, "Something else."),
    Some(T0)
)]
#[case::status_change_true_to_false_sets_now(
    Some(update(Available, True, Reason::AS_EXPECTED)),
    update(Available, False, Reason::REPLICAS_UNAVAILABLE),
    Some(T1)
)]
#[case::status_change_false_to_unknown_sets_now(
    Some(update(Available, False, Reason::REPLICAS_UNAVAILABLE)),
    update(Available, Unknown, Reason::POD_PHASE_UNKNOWN),
    Some(T1)
)]
fn last_transition_time(
    #[case] previous: Option<ConditionUpdate>,
    #[case] next: ConditionUpdate,
    #[case] expected_second: Option<i64>,
) {
    let previous: Vec<ClusterCondition> = previous.map(|u| stored(u, T0, 1)).into_iter().collect();
    let result = apply_updates(&previous, [next.clone()], at(T1), Some(2));
    assert_eq!(result.len(), 1);
    let condition = &result[0];
    assert_eq!(condition.last_transition_time, expected_second.map(at));
    assert_eq!(condition.status, next.status);
    assert_eq!(condition.reason, next.reason.as_str());
    assert_eq!(condition.message, next.message);
    assert_eq!(condition.observed_generation, Some(2));
}

#[test]
fn stored_condition_without_time_gets_now() {
    let mut previous = stored(update(Paused, False, Reason::AS_EXPECTED), T0, 1);
    previous.last_transition_time = None;
    let result = apply_updates(
        &[previous],
        [update(Paused, False, Reason::AS_EXPECTED)],
        at(T1),
        None,
    );
    assert_eq!(result[0].last_transition_time, Some(at(T1)));
}

#[test]
fn types_not_updated_are_kept_as_stored() {
    let stopped = stored(update(Stopped, False, Reason::AS_EXPECTED), T0, 1);
    let result = apply_updates(
        std::slice::from_ref(&stopped),
        [update(Available, True, Reason::AS_EXPECTED)],
        at(T1),
        Some(2),
    );
    assert_eq!(result.len(), 2);
    assert_eq!(result[1], stopped);
}

#[test]
fn output_is_sorted_by_condition_type() {
    let result = apply_updates(
        &[stored(update(Stopped, False, Reason::AS_EXPECTED), T0, 1)],
        [
            update(Paused, False, Reason::AS_EXPECTED),
            update(Degraded, False, Reason::AS_EXPECTED),
            update(Available, True, Reason::AS_EXPECTED),
        ],
        at(T1),
        Some(1),
    );
    let types: Vec<_> = result.iter().map(|c| c.type_.clone()).collect();
    assert_eq!(types, [Available, Degraded, Paused, Stopped]);
}

#[test]
fn last_update_of_a_type_wins() {
    let result = apply_updates(
        &[],
        [
            update(Available, True, Reason::AS_EXPECTED),
            update(Available, False, Reason::REPLICAS_UNAVAILABLE),
        ],
        at(T0),
        None,
    );
    assert_eq!(result.len(), 1);
    assert_eq!(result[0].status, False);
}

#[test]
fn duplicate_stored_types_collapse_to_the_first() {
    let first = stored(update(Available, True, Reason::AS_EXPECTED), T0, 1);
    let second = stored(
        update(Available, False, Reason::REPLICAS_UNAVAILABLE),
        T0 + 5,
        1,
    );
    let result = apply_updates(&[first.clone(), second], [], at(T1), None);
    assert_eq!(result, [first]);
}

#[test]
fn identical_inputs_at_a_later_time_change_nothing() {
    let updates = [
        update(Available, True, Reason::AS_EXPECTED),
        update(Progressing, False, Reason::AS_EXPECTED),
        update(Degraded, False, Reason::AS_EXPECTED),
    ];
    let first = apply_updates(&[], updates.clone(), at(T0), Some(4));
    let second = apply_updates(&first, updates, at(T1), Some(4));
    assert_eq!(second, first);
}

#[test]
fn sub_second_now_round_trips_through_json() {
    let precise = Time(at(T0).0 + SignedDuration::from_millis(999));
    let computed = apply_updates(
        &[],
        [update(Available, True, Reason::AS_EXPECTED)],
        precise,
        Some(1),
    );
    let json = serde_json::to_string(&computed).unwrap();
    let read_back: Vec<ClusterCondition> = serde_json::from_str(&json).unwrap();
    assert_eq!(read_back, computed);
    assert_eq!(computed[0].last_transition_time, Some(at(T0)));
}

/// A condition of a type written by a newer operator version, as read back.
fn foreign(name: &str) -> ClusterCondition {
    serde_json::from_value(serde_json::json!({
        "type": name,
        "status": "True",
        "reason": "Newer",
        "message": "Written by a newer operator version.",
        "lastTransitionTime": "2023-11-14T22:13:20Z",
        "observedGeneration": 1,
    }))
    .unwrap()
}

/// Conditions of types this operator does not own are dropped from the next
/// status, wherever they were stored; the known ones follow the usual rules.
#[rstest]
#[case::unknown_type_next_to_updated_ones(
    vec![stored(update(Available, True, Reason::AS_EXPECTED), T0, 1), foreign("Foo")],
    vec![update(Available, True, Reason::AS_EXPECTED), update(Degraded, False, Reason::AS_EXPECTED)],
    vec![(Available, Some(T0)), (Degraded, Some(T1))])]
#[case::unknown_type_first_in_the_list(
    vec![foreign("Foo"), stored(update(Stopped, False, Reason::AS_EXPECTED), T0, 1)],
    vec![update(Available, True, Reason::AS_EXPECTED)],
    vec![(Available, Some(T1)), (Stopped, Some(T0))])]
#[case::unknown_type_without_updates(
    vec![stored(update(Paused, False, Reason::AS_EXPECTED), T0, 1), foreign("Foo")],
    vec![],
    vec![(Paused, Some(T0))])]
#[case::only_unknown_types(vec![foreign("Foo"), foreign("Bar")], vec![], vec![])]
#[case::lower_case_name_of_a_known_type(
    vec![foreign("available")],
    vec![update(Available, False, Reason::REPLICAS_UNAVAILABLE)],
    vec![(Available, Some(T1))])]
fn unknown_stored_types_are_dropped(
    #[case] previous: Vec<ClusterCondition>,
    #[case] updates: Vec<ConditionUpdate>,
    #[case] expected: Vec<(strata_status::ConditionType, Option<i64>)>,
) {
    let result = apply_updates(&previous, updates, at(T1), Some(2));
    let actual: Vec<_> = result
        .iter()
        .map(|c| (c.type_.known(), c.last_transition_time.clone()))
        .collect();
    let expected: Vec<_> = expected
        .into_iter()
        .map(|(type_, second)| (Some(type_), second.map(at)))
        .collect();
    assert_eq!(actual, expected, "{result:#?}");
}
