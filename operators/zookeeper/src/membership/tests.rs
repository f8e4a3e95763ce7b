//! The planner as a table: observed ensemble and spec in, the step out.

use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use rstest::rstest;

use super::*;

/// Pods in a compact notation, by ordinal: `R` ready on the latest template, `S` ready on
/// an older one, `s` running on an older one but not ready, `N` running on the latest
/// template but not ready, `P` not running on the latest template, `x` not running on an
/// older one, `T` terminating, `-` no pod.
fn pods(statefulset: &str, notation: &str) -> BTreeMap<u32, PodState> {
    notation
        .chars()
        .enumerate()
        .filter(|(_, state)| *state != '-')
        .map(|(ordinal, state)| {
            let ordinal = u32::try_from(ordinal).unwrap_or(u32::MAX);
            let pod = PodState {
                name: format!("{statefulset}-{ordinal}"),
                running: !matches!(state, 'P' | 'x'),
                ready: matches!(state, 'R' | 'S' | 'T'),
                current: matches!(state, 'R' | 'N' | 'P' | 'T'),
                terminating: state == 'T',
            };
            (ordinal, pod)
        })
        .collect()
}

/// `(role group, myidOffset, servers, joining, pods)`.
type Observed<'a> = &'a [(&'a str, u32, u16, Option<u32>, &'a str)];

fn observed(groups: Observed<'_>) -> BTreeMap<String, ObservedGroup> {
    groups
        .iter()
        .map(|(name, myid_offset, servers, joining, notation)| {
            (
                (*name).to_owned(),
                ObservedGroup {
                    members: GroupMembers {
                        myid_offset: *myid_offset,
                        servers: *servers,
                        observer: false,
                    },
                    joining: *joining,
                    template_observed: true,
                    pods: pods(&format!("zk-server-{name}"), notation),
                },
            )
        })
        .collect()
}

/// `(role group, myidOffset, replicas)`.
fn desired(groups: &[(&str, u32, u16)]) -> DesiredMembership {
    groups
        .iter()
        .map(|(name, myid_offset, servers)| {
            (
                (*name).to_owned(),
                GroupMembers {
                    myid_offset: *myid_offset,
                    servers: *servers,
                    observer: false,
                },
            )
        })
        .collect()
}

/// `(role group, servers, joining)` of a plan.
fn membership(plan: &Plan) -> Vec<(String, u16, Option<u32>)> {
    plan.membership
        .iter()
        .map(|(name, group)| (name.clone(), group.members.servers, group.joining))
        .collect()
}

fn expected(groups: &[(&str, u16, Option<u32>)]) -> Vec<(String, u16, Option<u32>)> {
    groups
        .iter()
        .map(|(name, servers, joining)| ((*name).to_owned(), *servers, *joining))
        .collect()
}

#[rstest]
#[case::a_new_cluster_starts_at_full_size(
    &[("default", 1, 3)], &[], &[("default", 3, None)], None, None
)]
#[case::a_new_cluster_waits_for_its_pods_without_a_step(
    &[("default", 1, 3)], &[("default", 1, 3, None, "---")], &[("default", 3, None)], None, None
)]
#[case::a_settled_ensemble_stays(
    &[("default", 1, 3)], &[("default", 1, 3, None, "RRR")], &[("default", 3, None)], None, None
)]
#[case::growing_from_one_adds_one_server(
    &[("default", 1, 3)], &[("default", 1, 1, None, "R")],
    &[("default", 2, Some(2))], None, Some(ProgressReason::AddingServer)
)]
#[case::the_added_server_is_awaited_before_anything_restarts(
    &[("default", 1, 3)], &[("default", 1, 2, Some(2), "S-")],
    &[("default", 2, Some(2))], None, Some(ProgressReason::WaitingForQuorum)
)]
#[case::a_standalone_server_restarts_although_the_added_one_is_not_ready(
    &[("default", 1, 3)], &[("default", 1, 2, Some(2), "SN")],
    &[("default", 2, Some(2))], Some("zk-server-default-0"), Some(ProgressReason::RestartingServer)
)]
#[case::the_added_server_must_be_ready_before_the_next_one_is_added(
    &[("default", 1, 3)], &[("default", 1, 2, Some(2), "RN")],
    &[("default", 2, Some(2))], None, Some(ProgressReason::WaitingForQuorum)
)]
#[case::a_completed_step_leads_to_the_next_server(
    &[("default", 1, 3)], &[("default", 1, 2, Some(2), "RR")],
    &[("default", 3, Some(3))], None, Some(ProgressReason::AddingServer)
)]
#[case::the_highest_stale_server_restarts_first(
    &[("default", 1, 3)], &[("default", 1, 3, None, "SSS")],
    &[("default", 3, None)], Some("zk-server-default-2"), Some(ProgressReason::RestartingServer)
)]
#[case::the_next_restart_waits_for_the_restarted_server(
    &[("default", 1, 3)], &[("default", 1, 3, None, "SSN")],
    &[("default", 3, None)], None, Some(ProgressReason::WaitingForQuorum)
)]
#[case::a_server_down_on_an_older_template_restarts_at_once(
    &[("default", 1, 3)], &[("default", 1, 3, None, "RRx")],
    &[("default", 3, None)], Some("zk-server-default-2"), Some(ProgressReason::RestartingServer)
)]
#[case::a_server_down_on_the_latest_template_is_awaited(
    &[("default", 1, 3)], &[("default", 1, 3, None, "RRP")],
    &[("default", 3, None)], None, None
)]
#[case::no_restart_while_a_server_is_down(
    &[("default", 1, 3)], &[("default", 1, 3, None, "SPS")],
    &[("default", 3, None)], None, Some(ProgressReason::WaitingForQuorum)
)]
#[case::no_restart_while_a_restarted_pod_terminates(
    &[("default", 1, 3)], &[("default", 1, 3, None, "SST")],
    &[("default", 3, None)], None, Some(ProgressReason::WaitingForQuorum)
)]
#[case::an_old_server_without_quorum_restarts_when_the_others_are_a_majority(
    &[("default", 1, 3)], &[("default", 1, 3, Some(3), "sRR")],
    &[("default", 3, Some(3))], Some("zk-server-default-0"), Some(ProgressReason::RestartingServer)
)]
#[case::an_old_server_without_quorum_waits_while_the_others_are_no_majority(
    &[("default", 1, 3)], &[("default", 1, 3, Some(3), "sRN")],
    &[("default", 3, Some(3))], None, Some(ProgressReason::WaitingForQuorum)
)]
#[case::an_old_member_waits_until_the_added_server_follows_the_leader(
    &[("default", 1, 3)], &[("default", 1, 3, Some(3), "SSN")],
    &[("default", 3, Some(3))], None, Some(ProgressReason::WaitingForQuorum)
)]
#[case::an_old_member_restarts_once_the_added_server_follows_the_leader(
    &[("default", 1, 3)], &[("default", 1, 3, Some(3), "SSR")],
    &[("default", 3, Some(3))], Some("zk-server-default-1"), Some(ProgressReason::RestartingServer)
)]
#[case::the_last_server_restarts_alone_after_a_shrink_to_one(
    &[("default", 1, 1)], &[("default", 1, 1, None, "s")],
    &[("default", 1, None)], Some("zk-server-default-0"), Some(ProgressReason::RestartingServer)
)]
#[case::a_roll_does_not_start_while_two_servers_are_unready(
    &[("default", 1, 3)], &[("default", 1, 3, None, "ssS")],
    &[("default", 3, None)], None, Some(ProgressReason::WaitingForQuorum)
)]
#[case::shrinking_removes_the_highest_ordinal(
    &[("default", 1, 1)], &[("default", 1, 3, None, "RRR")],
    &[("default", 2, None)], None, Some(ProgressReason::RemovingServer)
)]
#[case::the_remaining_servers_wait_until_the_removed_pod_is_gone(
    &[("default", 1, 1)], &[("default", 1, 2, None, "SSR")],
    &[("default", 2, None)], None, Some(ProgressReason::WaitingForQuorum)
)]
#[case::the_remaining_servers_restart_after_a_removal(
    &[("default", 1, 1)], &[("default", 1, 2, None, "SS")],
    &[("default", 2, None)], Some("zk-server-default-1"), Some(ProgressReason::RestartingServer)
)]
#[case::a_new_role_group_joins_one_server_at_a_time(
    &[("a", 1, 3), ("b", 4, 2)], &[("a", 1, 3, None, "RRR")],
    &[("a", 3, None), ("b", 1, Some(4))], None, Some(ProgressReason::AddingServer)
)]
#[case::a_removed_role_group_drains_one_server_at_a_time(
    &[("a", 1, 3)], &[("a", 1, 3, None, "RRR"), ("b", 4, 2, None, "RR")],
    &[("a", 3, None), ("b", 1, None)], None, Some(ProgressReason::RemovingServer)
)]
#[case::the_last_server_of_a_removed_role_group_leaves(
    &[("a", 1, 3)], &[("a", 1, 3, None, "RRR"), ("b", 4, 1, None, "R")],
    &[("a", 3, None)], None, Some(ProgressReason::RemovingServer)
)]
#[case::a_replaced_role_group_is_added_before_the_old_one_leaves(
    &[("b", 4, 3)], &[("a", 1, 3, None, "RRR")],
    &[("a", 3, None), ("b", 1, Some(4))], None, Some(ProgressReason::AddingServer)
)]
fn each_reconcile_takes_one_safe_step(
    #[case] spec: &[(&str, u32, u16)],
    #[case] found: Observed<'_>,
    #[case] servers: &[(&str, u16, Option<u32>)],
    #[case] restart: Option<&str>,
    #[case] reason: Option<ProgressReason>,
) -> Result<(), PlanError> {
    let plan = plan(&desired(spec), &observed(found), None, false)?;
    assert_eq!(membership(&plan), expected(servers));
    assert_eq!(plan.restart.as_deref(), restart);
    assert_eq!(plan.progress.map(|progress| progress.reason), reason);
    Ok(())
}

#[rstest]
#[case::a_renamed_role_group("ServerIdsInUse", &[("b", 1, 3)], &[("a", 1, 3, None, "RRR")])]
#[case::a_new_group_over_a_draining_one("ServerIdsInUse", &[("a", 1, 3), ("c", 4, 1)], &[("a", 1, 3, None, "RRR"), ("b", 4, 1, None, "R")])]
#[case::a_changed_myid_offset("MyidOffsetChanged", &[("a", 2, 3)], &[("a", 1, 3, None, "RRR")])]
fn specs_that_would_reuse_identities_are_refused(
    #[case] reason: &str,
    #[case] spec: &[(&str, u32, u16)],
    #[case] found: Observed<'_>,
) {
    let refused = plan(&desired(spec), &observed(found), None, false).map(|plan| plan.membership);
    assert_eq!(refused.map_err(|error| error.reason()), Err(reason));
}

#[test]
fn a_running_group_cannot_switch_between_voting_and_observing() {
    let mut spec = desired(&[("a", 1, 3)]);
    if let Some(group) = spec.get_mut("a") {
        group.observer = true;
    }
    let refused = plan(&spec, &observed(&[("a", 1, 3, None, "RRR")]), None, false);
    assert_eq!(
        refused
            .map(|plan| plan.membership)
            .map_err(|error| error.reason()),
        Err("PeerTypeChanged")
    );
}

#[test]
fn a_stopped_cluster_keeps_its_membership() -> Result<(), PlanError> {
    let plan = plan(
        &desired(&[("default", 1, 3)]),
        &observed(&[("default", 1, 1, None, "")]),
        None,
        true,
    )?;
    assert_eq!(membership(&plan), expected(&[("default", 1, None)]));
    assert_eq!((plan.restart, plan.progress), (None, None));
    Ok(())
}

#[test]
fn nothing_moves_until_the_statefulset_controller_saw_the_template() -> Result<(), PlanError> {
    let mut found = observed(&[("default", 1, 3, None, "RRR")]);
    if let Some(group) = found.get_mut("default") {
        group.template_observed = false;
    }
    let plan = plan(&desired(&[("default", 1, 5)]), &found, None, false)?;
    assert_eq!(membership(&plan), expected(&[("default", 3, None)]));
    assert_eq!(
        plan.progress.map(|progress| progress.reason),
        Some(ProgressReason::WaitingForQuorum)
    );
    Ok(())
}

/// Every transition the issue names, played to the end with pods that restart and get
/// ready at once: each step changes the membership by exactly one server, and the
/// walk ends at the spec.
#[rstest]
#[case::one_to_three(&[("default", 1, 1)], &[("default", 1, 3)])]
#[case::two_to_five(&[("default", 1, 2)], &[("default", 1, 5)])]
#[case::three_to_five(&[("default", 1, 3)], &[("default", 1, 5)])]
#[case::five_to_three(&[("default", 1, 5)], &[("default", 1, 3)])]
#[case::three_to_one(&[("default", 1, 3)], &[("default", 1, 1)])]
#[case::group_added(&[("a", 1, 3)], &[("a", 1, 3), ("b", 4, 2)])]
#[case::group_removed(&[("a", 1, 3), ("b", 4, 2)], &[("a", 1, 3)])]
fn every_transition_changes_one_server_per_step(
    #[case] from: &[(&str, u32, u16)],
    #[case] to: &[(&str, u32, u16)],
) -> Result<(), PlanError> {
    let spec = desired(to);
    let mut running: BTreeMap<String, GroupPlan> = desired(from)
        .into_iter()
        .map(|(name, members)| {
            (
                name,
                GroupPlan {
                    members,
                    joining: None,
                },
            )
        })
        .collect();
    let size = |membership: &BTreeMap<String, GroupPlan>| -> i32 {
        membership
            .values()
            .map(|group| i32::from(group.members.servers))
            .sum()
    };
    for _ in 0..20 {
        let found = running
            .iter()
            .map(|(name, group)| {
                let notation = "R".repeat(usize::from(group.members.servers));
                let observed_group = ObservedGroup {
                    members: group.members,
                    joining: group.joining,
                    template_observed: true,
                    pods: pods(&format!("zk-server-{name}"), &notation),
                };
                (name.clone(), observed_group)
            })
            .collect();
        let next = plan(&spec, &found, None, false)?;
        assert!(
            (size(&next.membership) - size(&running)).abs() <= 1,
            "a step changed more than one server: {running:?} -> {:?}",
            next.membership
        );
        if next.progress.is_none() {
            assert_eq!(next.membership, settled(&spec));
            return Ok(());
        }
        running = next.membership;
    }
    panic!("the walk from {from:?} to {to:?} did not settle in 20 steps");
}

#[rstest]
#[case::a_follower_before_the_leader(Some(3), Some("zk-server-default-1"))]
#[case::the_highest_id_without_a_known_leader(None, Some("zk-server-default-2"))]
#[case::the_leader_when_it_is_the_last(Some(1), Some("zk-server-default-2"))]
fn the_leader_restarts_last(
    #[case] leader: Option<u32>,
    #[case] restart: Option<&str>,
) -> Result<(), PlanError> {
    let plan = plan(
        &desired(&[("default", 1, 4)]),
        &observed(&[("default", 1, 4, Some(4), "SSSR")]),
        leader,
        false,
    )?;
    assert_eq!(plan.restart.as_deref(), restart);
    Ok(())
}
