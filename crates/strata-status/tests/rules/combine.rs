//! Each condition type combines by its own polarity.

use k8s_openapi::api::core::v1::Pod;
use rstest::rstest;
use strata_status::{
    ConditionStatus::{self, False, True, Unknown},
    ConditionType::{self, Available, Degraded, Progressing, Upgradable},
    ConditionUpdate, Reason, WorkloadAssessment, combine, combine_conditions,
};

use crate::fixtures::{Kind, plus, pod, running, waiting_pod, workload};

fn sources(
    condition_type: ConditionType,
    statuses: &[ConditionStatus],
) -> Vec<(String, ConditionUpdate)> {
    statuses
        .iter()
        .enumerate()
        .map(|(index, status)| {
            (
                format!("w{index}"),
                ConditionUpdate::new(
                    condition_type,
                    *status,
                    Reason::new(format!("Reason{index}")).unwrap(),
                    format!("w{index} is {status}."),
                ),
            )
        })
        .collect()
}

fn combined(condition_type: ConditionType, statuses: &[ConditionStatus]) -> ConditionUpdate {
    let sources = sources(condition_type, statuses);
    combine_conditions(condition_type, sources.iter().map(|(n, u)| (n.as_str(), u))).unwrap()
}

#[rstest]
#[case::available_true_when_all_true(Available, &[True, True, True], True)]
#[case::available_false_when_one_false(Available, &[True, False, True], False)]
#[case::available_unknown_when_one_unknown(Available, &[True, Unknown, True], Unknown)]
#[case::available_false_beats_unknown(Available, &[Unknown, False, True], False)]
#[case::upgradable_false_when_one_false(Upgradable, &[True, False], False)]
#[case::upgradable_true_when_all_true(Upgradable, &[True, True], True)]
#[case::degraded_true_when_one_true(Degraded, &[False, True, False], True)]
#[case::degraded_false_when_all_false(Degraded, &[False, False], False)]
#[case::degraded_unknown_when_one_unknown_and_none_true(Degraded, &[False, Unknown], Unknown)]
#[case::degraded_true_beats_unknown(Degraded, &[Unknown, True], True)]
#[case::progressing_true_when_one_true(Progressing, &[False, False, True], True)]
#[case::progressing_false_when_all_false(Progressing, &[False, False], False)]
#[case::progressing_true_beats_unknown(Progressing, &[Unknown, True], True)]
#[case::single_source_passes_through(Degraded, &[Unknown], Unknown)]
fn polarity_per_type(
    #[case] condition_type: ConditionType,
    #[case] statuses: &[ConditionStatus],
    #[case] expected: ConditionStatus,
) {
    let result = combined(condition_type, statuses);
    assert_eq!(result.status, expected, "{result:?}");
    assert_eq!(result.type_, condition_type);
}

#[test]
fn same_statuses_combine_differently_per_type() {
    // One source True and one False: no single worst-wins order can give both.
    assert_eq!(combined(Available, &[True, False]).status, False);
    assert_eq!(combined(Degraded, &[True, False]).status, True);
}

#[test]
fn message_and_reason_come_from_contributors_sorted_by_name() {
    let sources = sources(Available, &[True, False, Unknown, False]);
    let forward =
        combine_conditions(Available, sources.iter().map(|(n, u)| (n.as_str(), u))).unwrap();
    let backward = combine_conditions(
        Available,
        sources.iter().rev().map(|(n, u)| (n.as_str(), u)),
    )
    .unwrap();
    assert_eq!(forward, backward);
    assert_eq!(forward.reason.as_str(), "Reason1");
    assert_eq!(forward.message, "w1 is False. w3 is False.");
}

#[test]
fn no_sources_gives_none() {
    assert_eq!(combine_conditions(Available, []), None);
}

#[test]
fn zero_workloads_are_not_available() {
    let result = combine(&[]);
    assert_eq!(
        (result.available.status, &result.available.reason),
        (False, &Reason::NO_WORKLOADS)
    );
    assert_eq!(result.progressing.status, False);
    assert_eq!(result.degraded.status, False);
}

fn assess(
    kind: Kind,
    name: &'static str,
    desired: i32,
    available: i32,
    pods: &[Pod],
) -> WorkloadAssessment {
    workload(kind, desired, available)
        .named(name)
        .observe(pods)
        .assess()
}

#[test]
fn workloads_of_all_kinds_combine() {
    let healthy_sts = assess(Kind::StatefulSet, "zk", 3, 3, &running(3));
    let crashing_deployment = assess(
        Kind::Deployment,
        "web",
        2,
        1,
        &plus(
            running(1),
            waiting_pod("web-1", "Running", "CrashLoopBackOff"),
        ),
    );
    let lost_daemon_set = assess(
        Kind::DaemonSet,
        "agent",
        2,
        1,
        &plus(running(1), pod("agent-1", "Unknown")),
    );

    let result = combine(&[
        healthy_sts.clone(),
        crashing_deployment,
        lost_daemon_set.clone(),
    ]);
    // Available: the deployment is False, the daemon set Unknown: False wins.
    assert_eq!(
        (result.available.status, &result.available.reason),
        (False, &Reason::REPLICAS_UNAVAILABLE)
    );
    assert_eq!(
        result.available.message,
        "Deployment web has 1 of 2 desired replicas available."
    );
    // Degraded: both broken workloads contribute, DaemonSet sorts first.
    assert_eq!(
        (result.degraded.status, &result.degraded.reason),
        (True, &Reason::POD_PHASE_UNKNOWN)
    );
    assert!(
        result.degraded.message.starts_with("DaemonSet agent"),
        "{}",
        result.degraded.message
    );
    assert!(
        result.degraded.message.contains("Deployment web"),
        "{}",
        result.degraded.message
    );
    assert!(
        !result.degraded.message.contains("StatefulSet zk"),
        "{}",
        result.degraded.message
    );
    // Progressing: the daemon set is still changing replicas.
    assert_eq!(
        (result.progressing.status, &result.progressing.reason),
        (True, &Reason::REPLICAS_CHANGING)
    );

    let healthy_only = combine(&[healthy_sts, lost_daemon_set]);
    assert_eq!(healthy_only.available.status, Unknown);
}
