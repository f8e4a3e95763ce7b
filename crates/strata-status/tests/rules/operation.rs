//! Paused and Stopped from spec and annotation (ADR027 rows and precedence).

use std::collections::BTreeMap;

use rstest::rstest;
use strata_status::{
    ConditionStatus::{self, False, True},
    FailureKind, OperationState,
    OperationTrigger::{self, Annotation, Spec},
    Reason,
};

fn annotations(command: Option<&str>) -> BTreeMap<String, String> {
    command
        .map(|value| BTreeMap::from([("operator-command".to_owned(), value.to_owned())]))
        .unwrap_or_default()
}

/// The four ADR027 rows for Paused and Stopped.
#[rstest]
#[case::paused_true_when_annotation_paused(Some("Paused"), True, False)]
#[case::paused_false_when_annotation_not_paused(Some("Stopped"), False, True)]
#[case::stopped_true_when_annotation_stopped(Some("Stopped"), False, True)]
#[case::stopped_false_when_annotation_not_stopped(Some("Paused"), True, False)]
#[case::both_false_without_annotation(None, False, False)]
fn adr027_row(
    #[case] command: Option<&str>,
    #[case] paused: ConditionStatus,
    #[case] stopped: ConditionStatus,
) {
    let state = OperationState::resolve(false, false, &annotations(command));
    let paused_condition = state.paused_condition();
    let stopped_condition = state.stopped_condition();
    assert_eq!(paused_condition.status, paused, "{paused_condition:?}");
    assert_eq!(stopped_condition.status, stopped, "{stopped_condition:?}");
    let expected_paused_reason = if paused == True {
        Reason::RECONCILIATION_PAUSED
    } else {
        Reason::AS_EXPECTED
    };
    let expected_stopped_reason = if stopped == True {
        Reason::CLUSTER_STOPPED
    } else {
        Reason::AS_EXPECTED
    };
    assert_eq!(paused_condition.reason, expected_paused_reason);
    assert_eq!(stopped_condition.reason, expected_stopped_reason);
}

#[rstest]
#[case::spec_paused_only(true, false, None, Some(Spec), None)]
#[case::spec_stopped_only(false, true, None, None, Some(Spec))]
#[case::spec_both(true, true, None, Some(Spec), Some(Spec))]
#[case::annotation_paused_only(false, false, Some("Paused"), Some(Annotation), None)]
#[case::annotation_stopped_only(false, false, Some("Stopped"), None, Some(Annotation))]
#[case::spec_wins_as_trigger_when_both_pause(true, false, Some("Paused"), Some(Spec), None)]
#[case::spec_wins_as_trigger_when_both_stop(false, true, Some("Stopped"), None, Some(Spec))]
#[case::spec_paused_and_annotation_stopped_combine(
    true,
    false,
    Some("Stopped"),
    Some(Spec),
    Some(Annotation)
)]
#[case::annotation_cannot_lift_spec_pause(true, false, Some("Running"), Some(Spec), None)]
#[case::annotation_value_is_case_sensitive(false, false, Some("paused"), None, None)]
fn precedence(
    #[case] spec_paused: bool,
    #[case] spec_stopped: bool,
    #[case] command: Option<&str>,
    #[case] paused: Option<OperationTrigger>,
    #[case] stopped: Option<OperationTrigger>,
) {
    let state = OperationState::resolve(spec_paused, spec_stopped, &annotations(command));
    assert_eq!((state.paused, state.stopped), (paused, stopped));
    assert_eq!(state.is_paused(), paused.is_some());
    assert_eq!(state.is_stopped(), stopped.is_some());
}

#[rstest]
#[case::spec_pause_names_field(true, None, "spec.clusterOperation.reconciliationPaused")]
#[case::annotation_pause_names_annotation(false, Some("Paused"), "operator-command=Paused")]
fn paused_message_names_trigger(
    #[case] spec_paused: bool,
    #[case] command: Option<&str>,
    #[case] expected: &str,
) {
    let message = OperationState::resolve(spec_paused, false, &annotations(command))
        .paused_condition()
        .message;
    assert!(message.contains(expected), "{message}");
}

#[rstest]
#[case::spec_stop_names_field(true, None, "spec.clusterOperation.stopped")]
#[case::annotation_stop_names_annotation(false, Some("Stopped"), "operator-command=Stopped")]
fn stopped_message_names_trigger(
    #[case] spec_stopped: bool,
    #[case] command: Option<&str>,
    #[case] expected: &str,
) {
    let message = OperationState::resolve(false, spec_stopped, &annotations(command))
        .stopped_condition()
        .message;
    assert!(message.contains(expected), "{message}");
    assert!(message.contains("all replicas are set to 0"), "{message}");
}

#[rstest]
#[case::lower_case_value("paused")]
#[case::other_word("Restart")]
#[case::empty_value("")]
fn unknown_annotation_value_is_reported(#[case] value: &str) {
    let state = OperationState::resolve(false, false, &annotations(Some(value)));
    assert_eq!(state.unknown_command.as_deref(), Some(value));
    let failure = state.unknown_command_failure().unwrap();
    assert_eq!(failure.kind, FailureKind::NeedsUser);
    assert_eq!(failure.reason, Reason::UNKNOWN_OPERATOR_COMMAND);
    assert!(
        failure.message.contains(&format!("{value:?}")),
        "{}",
        failure.message
    );
}

#[rstest]
#[case::paused(Some("Paused"))]
#[case::stopped(Some("Stopped"))]
#[case::absent(None)]
fn known_annotation_values_report_nothing(#[case] command: Option<&str>) {
    let state = OperationState::resolve(false, false, &annotations(command));
    assert_eq!(state.unknown_command, None);
    assert_eq!(state.unknown_command_failure(), None);
}

#[test]
fn other_annotations_are_ignored() {
    let annotations = BTreeMap::from([(
        "strata.dev/operator-command".to_owned(),
        "Paused".to_owned(),
    )]);
    assert_eq!(
        OperationState::resolve(false, false, &annotations),
        OperationState::default()
    );
}
