use pretty_assertions::assert_eq;
use rstest::rstest;
use strata_model::names::{ClusterName, RoleGroupName, RoleName};

use super::*;

const NAMESPACE: &str = "ns";
const DOMAIN: &str = "cluster.local";

/// The names of datanode role group `group` of cluster `hdfs`.
fn name(group: &str) -> RoleGroupRef {
    RoleGroupRef::new(
        &ClusterName::new("hdfs").expect("cluster name"),
        &RoleName::new("datanode").expect("role name"),
        &RoleGroupName::new(group).expect("role group name"),
    )
    .expect("role group ref")
}

/// The host of `<group>-<ordinal>` (`"a-3"`), or `short` itself when it names no pod.
fn host(short: &str) -> String {
    match short.rsplit_once('-') {
        Some((group, ordinal)) => match ordinal.parse() {
            Ok(ordinal) => {
                name(group).pod_fqdn(ordinal, NAMESPACE, name(group).object_name(), DOMAIN)
            }
            Err(_) => short.to_owned(),
        },
        None => short.to_owned(),
    }
}

/// A group: name, the spec's replicas, the StatefulSet's replicas, pods at `0..pods`.
type Group = (&'static str, u16, Option<u16>, u16);

fn groups(groups: &[Group]) -> Vec<DataNodeGroup> {
    groups
        .iter()
        .map(|(group, replicas, current, pods)| DataNodeGroup {
            name: name(group),
            replicas: *replicas,
            current_replicas: *current,
            pods: (0..*pods).collect(),
        })
        .collect()
}

/// The namenode's reports: `("a-3", "Decommissioned")` is live, a `" (dead)"` suffix
/// puts the node in `DeadNodes` only.
fn namenode(nodes: &[(&str, &str)]) -> BTreeMap<String, DataNodeReport> {
    nodes
        .iter()
        .map(|(short, state)| {
            let (state, live) = match state.strip_suffix(" (dead)") {
                Some(state) => (state, false),
                None => (*state, true),
            };
            let report = DataNodeReport {
                admin_state: AdminState::parse(state),
                live,
            };
            (host(short), report)
        })
        .collect()
}

/// The plan, with every block fully replicated whenever a namenode answers.
fn run(
    group_table: &[Group],
    recorded: &[&str],
    nodes: Option<&[(&str, &str)]>,
    dfs_replication: u16,
) -> Result<DecommissionPlan, DecommissionError> {
    let health = nodes.map(|_| BlockHealth::default());
    run_with_health(group_table, recorded, nodes, health, dfs_replication)
}

fn run_with_health(
    group_table: &[Group],
    recorded: &[&str],
    nodes: Option<&[(&str, &str)]>,
    block_health: Option<BlockHealth>,
    dfs_replication: u16,
) -> Result<DecommissionPlan, DecommissionError> {
    let groups = groups(group_table);
    let recorded: Vec<String> = recorded.iter().map(|short| host(short)).collect();
    let nodes = nodes.map(namenode);
    plan(&DecommissionInput {
        groups: &groups,
        namespace: NAMESPACE,
        cluster_domain: DOMAIN,
        excluded: &recorded,
        namenode: nodes.as_ref(),
        block_health,
        dfs_replication,
    })
}

/// A namenode answering with these reports (see [`namenode`]).
const fn answering(
    nodes: &'static [(&'static str, &'static str)],
) -> Option<&'static [(&'static str, &'static str)]> {
    Some(nodes)
}

const NONE: Option<&[(&str, &str)]> = None;
const EMPTY: Option<&[(&str, &str)]> = answering(&[]);

#[rstest]
#[case::scale_up_applies_at_once(&[("a", 5, Some(3), 3)], &[], EMPTY, &[("a", 5)], &[], false)]
#[case::unchanged(&[("a", 3, Some(3), 3)], &[], EMPTY, &[("a", 3)], &[], false)]
#[case::new_stateful_set_without_namenode(&[("a", 3, None, 0)], &[], NONE, &[("a", 3)], &[], false)]
#[case::shrink_starts_by_excluding_the_leaving_hosts(
    &[("a", 3, Some(5), 5)], &[],
    answering(&[("a-3", "In Service"), ("a-4", "In Service")]),
    &[("a", 5)], &["a-3", "a-4"], true
)]
#[case::decommission_in_progress_keeps_the_replicas(
    &[("a", 3, Some(5), 5)], &["a-3", "a-4"],
    answering(&[("a-3", "Decommissioned"), ("a-4", "Decommission In Progress")]),
    &[("a", 5)], &["a-3", "a-4"], true
)]
#[case::all_decommissioned_shrinks_and_keeps_them_excluded(
    &[("a", 3, Some(5), 5)], &["a-3", "a-4"],
    answering(&[("a-3", "Decommissioned"), ("a-4", "Decommissioned")]),
    &[("a", 3)], &["a-3", "a-4"], true
)]
#[case::pods_shutting_down_stay_excluded(
    &[("a", 3, Some(3), 5)], &["a-3", "a-4"],
    answering(&[("a-3", "Decommissioned"), ("a-4", "Decommissioned")]),
    &[("a", 3)], &["a-3", "a-4"], true
)]
#[case::pods_gone_and_unlisted_leave_the_list(
    &[("a", 3, Some(3), 3)], &["a-3", "a-4"], EMPTY, &[("a", 3)], &[], false
)]
#[case::departed_hosts_stay_excluded_while_the_namenode_counts_them_alive(
    &[("a", 3, Some(3), 3)], &["a-3", "a-4"],
    answering(&[("a-3", "Decommissioned"), ("a-4", "Decommissioned")]),
    &[("a", 3)], &["a-3", "a-4"], true
)]
#[case::departed_hosts_leave_once_the_namenode_lists_them_dead(
    &[("a", 3, Some(3), 3)], &["a-3", "a-4"],
    answering(&[("a-3", "Decommissioned (dead)"), ("a-4", "In Service (dead)")]),
    &[("a", 3)], &[], false
)]
#[case::a_departed_host_leaves_while_another_is_still_counted_alive(
    &[("a", 3, Some(3), 3)], &["a-3", "a-4"],
    answering(&[("a-3", "Decommissioned (dead)"), ("a-4", "Decommissioned")]),
    &[("a", 3)], &["a-4"], true
)]
#[case::departed_hosts_stay_excluded_while_no_namenode_answers(
    &[("a", 3, Some(3), 3)], &["a-3", "a-4"], NONE, &[("a", 3)], &["a-3", "a-4"], true
)]
#[case::no_namenode_answering_keeps_the_replicas(
    &[("a", 3, Some(5), 5)], &[], NONE, &[("a", 5)], &["a-3", "a-4"], true
)]
#[case::dead_and_decommissioned_does_not_count(
    &[("a", 3, Some(5), 5)], &["a-3", "a-4"],
    answering(&[("a-3", "Decommissioned (dead)"), ("a-4", "Decommissioned")]),
    &[("a", 5)], &["a-3", "a-4"], true
)]
#[case::unlisted_datanode_does_not_count(
    &[("a", 3, Some(5), 5)], &["a-3", "a-4"],
    answering(&[("a-4", "Decommissioned")]),
    &[("a", 5)], &["a-3", "a-4"], true
)]
#[case::maintenance_does_not_count(
    &[("a", 4, Some(5), 5)], &["a-4"], answering(&[("a-4", "In Maintenance")]),
    &[("a", 5)], &["a-4"], true
)]
#[case::two_groups_shrinking_each_at_its_own_pace(
    &[("a", 3, Some(5), 5), ("b", 2, Some(4), 4)], &["a-3", "a-4", "b-2", "b-3"],
    answering(&[
        ("a-3", "Decommissioned"), ("a-4", "Decommissioned"),
        ("b-2", "Decommissioned"), ("b-3", "Decommission In Progress"),
    ]),
    &[("a", 3), ("b", 4)], &["a-3", "a-4", "b-2", "b-3"], true
)]
#[case::a_group_shrinking_while_another_grows(
    &[("a", 3, Some(5), 5), ("b", 4, Some(2), 2)], &["a-3", "a-4"],
    answering(&[("a-3", "Decommission In Progress"), ("a-4", "In Service")]),
    &[("a", 5), ("b", 4)], &["a-3", "a-4"], true
)]
#[case::scaling_back_up_cancels_the_decommission(
    &[("a", 5, Some(5), 5)], &["a-3", "a-4"],
    answering(&[("a-3", "Decommission In Progress"), ("a-4", "Decommission In Progress")]),
    &[("a", 5)], &[], false
)]
#[case::a_smaller_shrink_returns_a_host_to_service(
    &[("a", 4, Some(5), 5)], &["a-3", "a-4"],
    answering(&[("a-3", "Decommission In Progress"), ("a-4", "Decommission In Progress")]),
    &[("a", 5)], &["a-4"], true
)]
#[case::unknown_hosts_leave_the_list(
    &[("a", 3, Some(3), 3)], &["old-datanode.example.com"], EMPTY, &[("a", 3)], &[], false
)]
#[case::pods_the_operator_did_not_exclude_are_left_alone(
    &[("a", 3, Some(3), 5)], &[], EMPTY, &[("a", 3)], &[], false
)]
fn the_plan(
    #[case] group_table: &[Group],
    #[case] recorded: &[&str],
    #[case] nodes: Option<&[(&str, &str)]>,
    #[case] replicas: &[(&str, u16)],
    #[case] excluded: &[&str],
    #[case] progressing: bool,
) {
    let plan = run(group_table, recorded, nodes, 3).expect("a plan");
    let replicas: BTreeMap<String, u16> = replicas
        .iter()
        .map(|(group, replicas)| (name(group).object_name().to_owned(), *replicas))
        .collect();
    let mut excluded: Vec<String> = excluded.iter().map(|short| host(short)).collect();
    excluded.sort();
    assert_eq!(plan.replicas, replicas);
    assert_eq!(plan.excluded, excluded);
    assert_eq!(plan.progress.is_some(), progressing, "{:?}", plan.progress);
    if let Some(progress) = plan.progress {
        assert_eq!(progress.reason, DECOMMISSIONING_DATANODES);
    }
}

#[rstest]
#[case::below_replication_refused(&[("a", 2, Some(3), 3)], Some("ScaleDownBelowReplication"))]
#[case::two_groups_together_below_replication_refused(
    &[("a", 1, Some(2), 2), ("b", 1, Some(2), 2)],
    Some("ScaleDownBelowReplication")
)]
#[case::down_to_exactly_replication(&[("a", 3, Some(5), 5)], None)]
#[case::a_shrink_made_up_by_another_group(&[("a", 1, Some(3), 3), ("b", 3, Some(1), 1)], None)]
#[case::a_new_cluster_below_replication_is_only_warned(&[("a", 1, None, 0)], None)]
#[case::growing_while_below_replication(&[("a", 2, Some(1), 1)], None)]
fn scale_down_below_replication(#[case] group_table: &[Group], #[case] refused: Option<&str>) {
    let result = run(group_table, &[], EMPTY, 3);
    assert_eq!(
        result.as_ref().err().map(DecommissionError::reason),
        refused
    );
}

#[test]
fn a_refusal_says_what_to_keep() {
    let error = run(&[("a", 2, Some(3), 3)], &[], EMPTY, 3).expect_err("refused");
    assert_eq!(
        error.to_string(),
        "dataNodes would shrink to 2 datanode(s) in total (a from 3 to 2), fewer than \
         dfsReplication (3): the blocks could not keep their replicas on the datanodes that \
         stay, so decommissioning would never finish; keep at least 3 datanodes. Nothing \
         was applied"
    );
}

fn message(group_table: &[Group], recorded: &[&str], nodes: Option<&[(&str, &str)]>) -> String {
    run(group_table, recorded, nodes, 3)
        .expect("a plan")
        .progress
        .map(|progress| progress.message)
        .unwrap_or_default()
}

#[test]
fn the_message_names_the_pods_and_counts_the_decommissioned() {
    let message = message(
        &[("a", 3, Some(5), 5)],
        &["a-3", "a-4"],
        answering(&[
            ("a-3", "Decommissioned"),
            ("a-4", "Decommission In Progress"),
        ]),
    );
    assert_eq!(
        message,
        "hdfs-datanode-a: decommissioning hdfs-datanode-a-3, hdfs-datanode-a-4 before \
         hdfs-datanode-a shrinks from 5 to 3 replicas: 1 of 2 decommissioned \
         (hdfs-datanode-a-4 Decommission In Progress)"
    );
}

#[test]
fn the_message_says_why_a_dead_or_unlisted_datanode_waits() {
    let message = message(
        &[("a", 3, Some(5), 5)],
        &["a-3", "a-4"],
        answering(&[("a-3", "Decommissioned (dead)")]),
    );
    assert!(
        message.contains(
            "0 of 2 decommissioned (hdfs-datanode-a-3 Decommissioned but dead, \
             hdfs-datanode-a-4 not listed by the namenode); a dead or unlisted datanode \
             may hold the only replica of a block, so the scale-down waits until its pod \
             runs again and its blocks are copied"
        ),
        "{message}"
    );
}

const COMPLETE: BlockHealth = BlockHealth {
    low_redundancy: 0,
    pending_reconstruction: 0,
    missing: 0,
    postponed_misreplicated: 0,
};

#[rstest]
#[case::every_block_replicated(Some(COMPLETE), 3)]
#[case::blocks_low_on_redundancy(Some(BlockHealth { low_redundancy: 2, ..COMPLETE }), 5)]
#[case::blocks_being_copied(Some(BlockHealth { pending_reconstruction: 1, ..COMPLETE }), 5)]
#[case::blocks_missing(Some(BlockHealth { missing: 1, ..COMPLETE }), 5)]
#[case::a_new_active_namenode_has_not_counted_every_block(Some(BlockHealth { postponed_misreplicated: 40, ..COMPLETE }), 5)]
#[case::no_active_namenode_reports_block_counts(None, 5)]
fn the_shrink_waits_until_every_block_has_its_replicas(
    #[case] health: Option<BlockHealth>,
    #[case] replicas: u16,
) {
    let plan = run_with_health(
        &[("a", 3, Some(5), 5)],
        &["a-3", "a-4"],
        answering(&[("a-3", "Decommissioned"), ("a-4", "Decommissioned")]),
        health,
        3,
    )
    .expect("a plan");
    assert_eq!(
        plan.replicas,
        BTreeMap::from([(name("a").object_name().to_owned(), replicas)])
    );
    assert!(plan.progress.is_some());
}

/// A standby that restarted may not list a host the active still counts alive: a
/// departed host leaves the list only when the active namenode answered too.
#[test]
fn departed_hosts_stay_excluded_while_the_active_namenode_does_not_answer() {
    let plan = run_with_health(&[("a", 3, Some(3), 3)], &["a-3"], answering(&[]), None, 3)
        .expect("a plan");
    assert_eq!(plan.excluded, vec![host("a-3")]);
}

/// The case Hadoop's `HeartbeatManager` makes: a datanode dead when it was excluded is
/// `Decommissioned` at once, and live and `Decommissioned` when it returns, before any
/// of its blocks is copied; only the block counts tell.
#[test]
fn a_datanode_back_from_a_dead_decommission_waits_for_its_blocks_to_be_copied() {
    let plan = run_with_health(
        &[("a", 3, Some(4), 4)],
        &["a-3"],
        answering(&[("a-3", "Decommissioned")]),
        Some(BlockHealth {
            low_redundancy: 7,
            ..COMPLETE
        }),
        1,
    )
    .expect("a plan");
    assert_eq!(
        plan.replicas,
        BTreeMap::from([(name("a").object_name().to_owned(), 4)])
    );
    assert_eq!(
        plan.progress
            .map(|progress| progress.message)
            .unwrap_or_default(),
        "hdfs-datanode-a: hdfs-datanode-a-3 decommissioned (1 of 1), but the active namenode \
         reports LowRedundancyBlocks 7, PendingReconstructionBlocks 0, MissingBlocks 0; a \
         datanode that was dead when it was excluded is marked Decommissioned without its \
         blocks being copied, so hdfs-datanode-a shrinks from 4 to 3 replicas only once \
         every block has its replicas"
    );
}

#[test]
fn the_message_says_it_waits_for_a_namenode() {
    let message = message(&[("a", 3, Some(5), 5)], &[], NONE);
    assert_eq!(
        message,
        "hdfs-datanode-a: hdfs-datanode-a-3, hdfs-datanode-a-4 excluded; waiting for a \
         namenode to report their admin state before hdfs-datanode-a shrinks from 5 to 3 \
         replicas"
    );
}

#[test]
fn the_messages_of_two_groups_are_joined() {
    let message = message(
        &[("a", 4, Some(4), 5), ("b", 1, Some(2), 2)],
        &["a-4"],
        answering(&[("b-1", "Decommissioned")]),
    );
    assert_eq!(
        message,
        "hdfs-datanode-a: waiting for the decommissioned pod(s) hdfs-datanode-a-4 to shut \
         down before they leave the exclude list; hdfs-datanode-b: hdfs-datanode-b-1 \
         decommissioned (1 of 1); hdfs-datanode-b shrinks from 2 to 1 replicas"
    );
}

#[rstest]
#[case::fqdn("hdfs-datanode-a-3.hdfs-datanode-a.ns.svc.cluster.local", true)]
#[case::pod_name("hdfs-datanode-a-3", true)]
#[case::another_domain_under_the_pod("hdfs-datanode-a-3.elsewhere", true)]
#[case::upper_case("HDFS-DATANODE-A-3.hdfs-datanode-a.ns.svc.cluster.local", true)]
#[case::a_longer_ordinal("hdfs-datanode-a-30.hdfs-datanode-a.ns.svc.cluster.local", false)]
#[case::a_longer_pod_name("hdfs-datanode-a-3x", false)]
#[case::an_ip_address("10.244.0.7", false)]
fn hosts_are_matched_to_pods(#[case] reported: &str, #[case] matches: bool) {
    assert_eq!(
        names_pod(reported, "hdfs-datanode-a-3", &host("a-3")),
        matches
    );
}

fn report(state: &str, live: bool) -> DataNodeReport {
    DataNodeReport {
        admin_state: AdminState::parse(state),
        live,
    }
}

#[rstest]
#[case::decommissioned_live_and_stale_dead(
    report("Decommissioned", true),
    report("Decommissioned", false),
    true
)]
#[case::in_service_next_to_decommissioned(
    report("In Service", true),
    report("Decommissioned", false),
    false
)]
#[case::decommissioned_live_next_to_a_former_identity_dead_in_service(
    report("Decommissioned", true),
    report("In Service", false),
    true
)]
#[case::decommissioned_next_to_in_service_both_live(
    report("Decommissioned", true),
    report("In Service", true),
    false
)]
#[case::decommissioned_next_to_in_progress(
    report("Decommissioned", true),
    report("Decommission In Progress", true),
    false
)]
#[case::both_dead(
    report("Decommissioned", false),
    report("Decommissioned", false),
    false
)]
fn two_reports_of_a_host_merge_live_first_then_conservatively(
    #[case] first: DataNodeReport,
    #[case] second: DataNodeReport,
    #[case] may_leave: bool,
) {
    assert_eq!(first.clone().merge(second.clone()).may_leave(), may_leave);
    assert_eq!(second.merge(first).may_leave(), may_leave);
}

#[rstest]
#[case::in_service("In Service", AdminState::InService)]
#[case::in_progress("Decommission In Progress", AdminState::DecommissionInProgress)]
#[case::decommissioned("Decommissioned", AdminState::Decommissioned)]
#[case::entering_maintenance("Entering Maintenance", AdminState::EnteringMaintenance)]
#[case::in_maintenance("In Maintenance", AdminState::InMaintenance)]
#[case::unknown("Retired", AdminState::Other("Retired".to_owned()))]
fn admin_states_read_as_hadoop_writes_them(#[case] text: &str, #[case] state: AdminState) {
    assert_eq!(AdminState::parse(text), state);
    assert_eq!(state.to_string(), text);
}
