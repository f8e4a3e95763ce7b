use pretty_assertions::assert_eq;
use rstest::rstest;

use super::*;
use crate::validate::roll_order;

/// A pod as `state` describes it: `R` Ready and current, `O` Ready on an older
/// template, `o` down on an older template, `N` current but not Ready, `T`
/// terminating, `-` missing (deleted, not yet recreated).
fn pod(name: &str, state: char) -> PodRollState {
    PodRollState {
        name: name.to_owned(),
        running: matches!(state, 'R' | 'O'),
        ready: matches!(state, 'R' | 'O'),
        current: matches!(state, 'R' | 'N'),
        terminating: state == 'T',
    }
}

/// The cluster: one group per role, each pod's state as one letter, in the order
/// journalnodes, namenodes, datanodes (`"RRR RR RRR"`).
fn cluster(states: &str) -> Vec<GroupPods> {
    let mut roles = states.split(' ');
    [
        (HdfsRole::JournalNode, "jn"),
        (HdfsRole::NameNode, "nn"),
        (HdfsRole::DataNode, "dn"),
    ]
    .into_iter()
    .map(|(role, prefix)| {
        let states = roles.next().unwrap_or_default();
        GroupPods {
            name: prefix.to_owned(),
            role,
            template_observed: true,
            replicas: states.chars().count() as u32,
            pods: states
                .chars()
                .enumerate()
                .filter(|(_, state)| *state != '-')
                .map(|(ordinal, state)| {
                    (ordinal as u32, pod(&format!("{prefix}-{ordinal}"), state))
                })
                .collect(),
        }
    })
    .collect()
}

#[rstest]
#[case::settled("RRR RR RRR", None, None, None)]
#[case::new_cluster_starting("NNN NN NNN", None, None, None)]
#[case::journalnodes_first("OOO OO OOO", None, Some("jn-0"), Some("RollingJournalNodes"))]
#[case::one_journalnode_at_a_time("TOO OO OOO", None, None, Some("RollingJournalNodes"))]
#[case::waits_for_the_restarted_journalnode("NOO OO OOO", None, None, Some("RollingJournalNodes"))]
#[case::next_journalnode("ROO OO OOO", None, Some("jn-1"), Some("RollingJournalNodes"))]
#[case::namenodes_after_the_journalnodes(
    "RRR OO OOO",
    None,
    Some("nn-0"),
    Some("RollingNameNodes")
)]
#[case::standby_namenode_first("RRR OO OOO", Some("nn-0"), Some("nn-1"), Some("RollingNameNodes"))]
#[case::active_namenode_last("RRR OR OOO", Some("nn-0"), Some("nn-0"), Some("RollingNameNodes"))]
#[case::waits_for_the_standby_before_the_active(
    "RRR ON OOO",
    Some("nn-0"),
    None,
    Some("RollingNameNodes")
)]
#[case::a_down_active_namenode_still_last(
    "RRR oo OOO",
    Some("nn-0"),
    Some("nn-1"),
    Some("RollingNameNodes")
)]
#[case::datanodes_last("RRR RR OOO", None, Some("dn-0"), Some("RollingDataNodes"))]
#[case::a_down_pod_on_an_old_template_restarts_at_once(
    "RRR RR OoO",
    None,
    Some("dn-1"),
    Some("RollingDataNodes")
)]
#[case::a_down_journalnode_holds_back_the_later_roles(
    "RNR RR OOO",
    None,
    None,
    Some("RollingJournalNodes")
)]
#[case::waits_for_a_deleted_journalnode_to_be_recreated(
    "-OO OO OOO",
    None,
    None,
    Some("RollingJournalNodes")
)]
#[case::a_missing_datanode_at_the_end_holds_nothing_back("RRR RR RR-", None, None, None)]
#[case::only_datanodes_changed("RRR RR ROO", None, Some("dn-1"), Some("RollingDataNodes"))]
fn the_roll_goes_journalnodes_namenodes_datanodes_one_pod_at_a_time(
    #[case] states: &str,
    #[case] active: Option<&str>,
    #[case] restart: Option<&str>,
    #[case] reason: Option<&str>,
) {
    let step = next_step(&cluster(states), roll_order(), active);
    assert_eq!(
        step.as_ref().and_then(|step| step.restart.as_deref()),
        restart,
        "{step:?}"
    );
    assert_eq!(
        step.as_ref().map(|step| step.reason.as_str()),
        reason,
        "{step:?}"
    );
}

#[test]
fn nothing_restarts_before_the_statefulset_controller_saw_the_template() {
    let mut groups = cluster("OOO OO OOO");
    groups[2].template_observed = false;
    assert_eq!(next_step(&groups, roll_order(), None), None);
}
