//! Status structs, steady state and `needs_write`.

use rstest::rstest;
use strata_status::{
    ClusterStatus, ConditionStatus, ConditionType, Reason, ResourceStatus, needs_write,
};

use crate::fixtures::{at, update};

fn updates() -> Vec<strata_status::ConditionUpdate> {
    vec![
        update(
            ConditionType::Available,
            ConditionStatus::True,
            Reason::AS_EXPECTED,
        ),
        update(
            ConditionType::Degraded,
            ConditionStatus::False,
            Reason::AS_EXPECTED,
        ),
    ]
}

fn status_at(second: i64, version: Option<&str>) -> ClusterStatus {
    <ClusterStatus>::next(
        None,
        updates(),
        at(second),
        Some(3),
        version.map(str::to_owned),
    )
}

#[rstest]
#[case::nothing_stored(None, status_at(100, None), true)]
#[case::identical(Some(status_at(100, None)), status_at(100, None), false)]
#[case::different_version(Some(status_at(100, None)), status_at(100, Some("1.0")), true)]
#[case::different_transition_time(Some(status_at(100, None)), status_at(200, None), true)]
fn needs_write_only_on_difference(
    #[case] stored: Option<ClusterStatus>,
    #[case] computed: ClusterStatus,
    #[case] expected: bool,
) {
    assert_eq!(needs_write(stored.as_ref(), &computed), expected);
}

#[test]
fn steady_state_writes_nothing_after_a_round_trip() {
    let first = <ClusterStatus>::next(None, updates(), at(100), Some(3), Some("1.0".to_owned()));
    // What the API server hands back on the next reconcile.
    let stored: ClusterStatus =
        serde_json::from_value(serde_json::to_value(&first).unwrap()).unwrap();
    let later = <ClusterStatus>::next(
        Some(&stored),
        updates(),
        at(5_000),
        Some(3),
        Some("1.0".to_owned()),
    );
    assert!(
        !needs_write(Some(&stored), &later),
        "{stored:#?}\n{later:#?}"
    );
}

#[test]
fn new_generation_needs_a_write() {
    let stored = <ClusterStatus>::next(None, updates(), at(100), Some(3), None);
    let later = <ClusterStatus>::next(Some(&stored), updates(), at(200), Some(4), None);
    assert!(needs_write(Some(&stored), &later));
    // The generation changed, the statuses did not: transition times stay.
    assert_eq!(
        later
            .condition(ConditionType::Available)
            .unwrap()
            .last_transition_time,
        Some(at(100))
    );
    assert_eq!(later.observed_generation, Some(4));
}

#[test]
fn resource_status_keeps_transition_times() {
    let stored = ResourceStatus::next(None, updates(), at(100), Some(1));
    let later = ResourceStatus::next(Some(&stored), updates(), at(900), Some(1));
    assert!(!needs_write(Some(&stored), &later));
    assert_eq!(
        later.condition(ConditionType::Degraded).unwrap().status,
        ConditionStatus::False
    );
}

#[test]
fn empty_status_serializes_to_empty_object() {
    assert_eq!(
        serde_json::to_value(<ClusterStatus>::default()).unwrap(),
        serde_json::json!({})
    );
    assert_eq!(
        serde_json::to_value(ResourceStatus::default()).unwrap(),
        serde_json::json!({})
    );
}

#[test]
fn cluster_status_uses_camel_case() {
    let json = serde_json::to_value(status_at(100, Some("3.9.3"))).unwrap();
    assert_eq!(json["deployedProductVersion"], "3.9.3");
    assert_eq!(json["observedGeneration"], 3);
    assert_eq!(
        json["conditions"][0]["lastTransitionTime"],
        "1970-01-01T00:01:40Z"
    );
}

/// A status as a newer operator version left it: our conditions plus one of
/// a type this version does not know.
fn status_from_newer_operator() -> ClusterStatus {
    let mut json = serde_json::to_value(status_at(100, Some("1.0"))).unwrap();
    json["conditions"].as_array_mut().unwrap().push(
        serde_json::json!({"type": "Foo", "status": "True", "reason": "Newer", "message": "?"}),
    );
    serde_json::from_value(json).unwrap()
}

#[test]
fn next_status_drops_unknown_condition_types_and_writes_once() {
    let stored = status_from_newer_operator();
    assert_eq!(stored.conditions.len(), 3);
    let next = <ClusterStatus>::next(
        Some(&stored),
        updates(),
        at(200),
        Some(3),
        Some("1.0".to_owned()),
    );
    assert_eq!(next, status_at(100, Some("1.0")));
    assert!(needs_write(Some(&stored), &next));
    let after = <ClusterStatus>::next(
        Some(&next),
        updates(),
        at(300),
        Some(3),
        Some("1.0".to_owned()),
    );
    assert!(!needs_write(Some(&next), &after));
}

#[test]
fn resource_status_drops_unknown_condition_types() {
    let stored: ResourceStatus = serde_json::from_value(serde_json::json!({
        "conditions": [{"type": "Foo", "status": "False"}],
        "observedGeneration": 1,
    }))
    .unwrap();
    let next = ResourceStatus::next(Some(&stored), updates(), at(100), Some(1));
    assert_eq!(
        next,
        ResourceStatus::next(None, updates(), at(100), Some(1))
    );
}
