//! Journalnode membership changes: which the operator applies, and which it refuses.
//!
//! The namenodes write the edit log to every journalnode of the quorum URI
//! (`dfs.namenode.shared.edits.dir`) and count an edit as written once a majority has
//! it. A new quorum recovers the last segment from the journalnodes it keeps. So:
//!
//! - **A change must keep a journalnode of every majority of the previous set.** Then
//!   every acknowledged edit is on a journalnode that stays, and recovery finds it.
//!   With `n` previous journalnodes, at least `n - n/2` (rounded up: `⌈n/2⌉`) must
//!   stay: 2 of 3, 3 of 5, 2 of 4, 1 of 2. Keeping fewer can lose acknowledged
//!   namespace edits (`JournalQuorumLost`).
//! - **A journalnode role group may not leave the spec** (removal, or rename, which is
//!   a removal and an addition): pruning its StatefulSet makes the active namenode
//!   lose its quorum and abort, and the journals of the new group are empty
//!   (`JournalNodeGroupRemoved`). Lower its replicas within the rule above instead.
//! - **Growing the set keeps running, but Hadoop 3.4 never formats a new journal:**
//!   `Journal.newEpoch` refuses an unformatted one and the `JournalNodeSyncer` waits
//!   for a format that never comes, so the edit log tolerates fewer failures than the
//!   spec suggests. A cluster that has been formatted gets the `JournalNodesAdded`
//!   warning, naming the journalnodes and the upstream procedure (copy
//!   `current/VERSION` from a formatted peer; the syncer fills the segments).
//!
//! The previous set is the one the namenodes are known to write to: the
//! `journalnodes` key of the namenode state ConfigMap, which a stopped cluster keeps.
//! A new set replaces it only once every namenode runs on it, so a second change
//! during the roll, or while the cluster is stopped, is checked against the quorum
//! that really holds the edits. Clusters created before that key existed fall back
//! to the running journalnode StatefulSets. Hosts compare by pod name, so a changed
//! cluster domain changes no journalnode.

use std::collections::BTreeSet;

use strata_operator::error::{ErrorKind, StepError};
use strata_status::{Reason, SpecWarning};

/// Why a journalnode change is refused; each variant's name is the Degraded reason.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, strum::IntoStaticStr)]
pub enum JournalChangeError {
    /// A journalnode role group of the running quorum left the spec.
    #[error(
        "the journalnode role group(s) of {groups} left the spec while the namenodes write \
         their edit log to them; removing or renaming a group prunes its journalnodes, the \
         active namenode loses its quorum and aborts, and the journals that replace them are \
         empty. Put the group(s) back; to shrink, lower their replicas, keeping at least \
         half of the journalnodes. Nothing was applied"
    )]
    JournalNodeGroupRemoved {
        /// The removed groups' StatefulSet names, comma-separated.
        groups: String,
    },
    /// Too few journalnodes of the previous set stay.
    #[error(
        "journalNodes would keep {kept} of the {previous} journalnode(s) the namenodes \
         write to ({removed} would go); an edit is acknowledged once a majority has it, so \
         at least {needed} must stay for every acknowledged edit to survive. Shrink in \
         steps that each keep {needed} or more. Nothing was applied"
    )]
    JournalQuorumLost {
        /// Journalnodes of the previous set that stay.
        kept: usize,
        /// Journalnodes in the previous set.
        previous: usize,
        /// The fewest that must stay.
        needed: usize,
        /// The journalnodes that would go, comma-separated.
        removed: String,
    },
}

impl StepError for JournalChangeError {
    fn reason(&self) -> &'static str {
        self.into()
    }

    fn kind(&self) -> ErrorKind {
        ErrorKind::NeedsUser
    }
}

/// The warning of journalnodes added to a formatted quorum.
pub const JOURNAL_NODES_ADDED: Reason = strata_status::reason!("JournalNodesAdded");

/// The journalnodes after a change: their hosts (FQDNs
/// `<pod>.<StatefulSet>.<namespace>.svc.<domain>`), and the StatefulSets of every
/// journalnode role group of the spec, those at 0 replicas included.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JournalNodes {
    /// The hosts of the quorum.
    pub hosts: BTreeSet<String>,
    /// The role groups' StatefulSet names.
    pub groups: BTreeSet<String>,
}

/// Checks the change from the `previous` journalnode hosts to `next`, and returns the
/// warning for hosts added to a `formatted` quorum.
pub fn check_change(
    previous: &BTreeSet<String>,
    next: &JournalNodes,
    formatted: bool,
) -> Result<Option<SpecWarning>, JournalChangeError> {
    if previous.is_empty() {
        return Ok(None);
    }
    let previous_groups: BTreeSet<&str> = previous
        .iter()
        .filter_map(|host| host.split('.').nth(1))
        .collect();
    let removed_groups: Vec<&str> = previous_groups
        .into_iter()
        .filter(|group| !next.groups.contains(*group))
        .collect();
    if !removed_groups.is_empty() {
        return Err(JournalChangeError::JournalNodeGroupRemoved {
            groups: removed_groups.join(", "),
        });
    }
    // Pods compare by name: a changed cluster domain changes no journalnode.
    let pod_names = |hosts: &BTreeSet<String>| -> BTreeSet<String> {
        hosts
            .iter()
            .map(|host| host.split('.').next().unwrap_or(host).to_owned())
            .collect()
    };
    let (previous, next_hosts) = (&pod_names(previous), &pod_names(&next.hosts));
    let kept = previous.intersection(next_hosts).count();
    let needed = previous.len() - previous.len() / 2;
    if kept < needed {
        let removed: Vec<&str> = previous
            .difference(next_hosts)
            .map(String::as_str)
            .collect();
        return Err(JournalChangeError::JournalQuorumLost {
            kept,
            previous: previous.len(),
            needed,
            removed: removed.join(", "),
        });
    }
    let added: Vec<&str> = next_hosts
        .difference(previous)
        .map(String::as_str)
        .collect();
    Ok((formatted && !added.is_empty()).then(|| SpecWarning {
        reason: JOURNAL_NODES_ADDED,
        message: format!(
            "journalnode(s) {} joined a formatted quorum; Hadoop 3.4 never formats a new \
             journal, so until it is, the edit log tolerates fewer journalnode failures \
             than the spec suggests. Copy <edits dir>/<nameservice>/current/VERSION from a \
             formatted journalnode into each new one; the JournalNodeSyncer then fills in \
             the edits",
            added.join(", ")
        ),
    }))
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use rstest::rstest;

    use super::*;

    /// The journalnodes `short` names, in the groups they name; a bare `"b"` is a
    /// group of the spec at 0 replicas.
    fn next(short: &[&str]) -> JournalNodes {
        let (empty, members): (Vec<&str>, Vec<&str>) =
            short.iter().partition(|short| !short.contains('-'));
        let hosts = hosts(&members);
        let groups = hosts
            .iter()
            .filter_map(|host| host.split('.').nth(1))
            .map(str::to_owned)
            .chain(
                empty
                    .iter()
                    .map(|group| format!("hdfs-journalnode-{group}")),
            )
            .collect();
        JournalNodes { hosts, groups }
    }

    /// `"default-2"` is journalnode 2 of group `default` of cluster `hdfs`.
    fn hosts(short: &[&str]) -> BTreeSet<String> {
        short
            .iter()
            .map(|short| {
                let (group, ordinal) = short.rsplit_once('-').expect("<group>-<ordinal>");
                let set = format!("hdfs-journalnode-{group}");
                format!("{set}-{ordinal}.{set}.ns.svc.cluster.local")
            })
            .collect()
    }

    #[rstest]
    #[case::a_new_cluster(&[], &["default-0", "default-1", "default-2"], None)]
    #[case::unchanged(&["default-0", "default-1", "default-2"], &["default-0", "default-1", "default-2"], None)]
    #[case::three_to_two_keeps_a_member_of_every_majority(
        &["default-0", "default-1", "default-2"], &["default-0", "default-1"], None
    )]
    #[case::three_to_one_loses_acknowledged_edits(
        &["default-0", "default-1", "default-2"], &["default-0"], Some("JournalQuorumLost")
    )]
    #[case::five_to_three(
        &["default-0", "default-1", "default-2", "default-3", "default-4"],
        &["default-0", "default-1", "default-2"], None
    )]
    #[case::five_to_two(
        &["default-0", "default-1", "default-2", "default-3", "default-4"],
        &["default-0", "default-1"], Some("JournalQuorumLost")
    )]
    #[case::four_to_two_still_meets_every_majority_of_three(
        &["default-0", "default-1", "default-2", "default-3"], &["default-0", "default-1"], None
    )]
    #[case::two_to_one_keeps_every_acknowledged_edit(
        &["default-0", "default-1"], &["default-0"], None
    )]
    #[case::a_renamed_group(
        &["default-0", "default-1", "default-2"], &["jn-0", "jn-1", "jn-2"],
        Some("JournalNodeGroupRemoved")
    )]
    #[case::a_removed_group_even_with_a_majority_left(
        &["a-0", "a-1", "a-2", "b-0"], &["a-0", "a-1", "a-2"], Some("JournalNodeGroupRemoved")
    )]
    #[case::a_group_lowered_to_zero_is_a_shrink_not_a_removal(
        &["a-0", "a-1", "a-2", "b-0"], &["a-0", "a-1", "a-2", "b"], None
    )]
    #[case::growing(&["default-0", "default-1", "default-2"], &["default-0", "default-1", "default-2", "default-3", "default-4"], None)]
    fn journalnode_changes_keep_every_acknowledged_edit(
        #[case] previous: &[&str],
        #[case] next_hosts: &[&str],
        #[case] refused: Option<&str>,
    ) {
        let result = check_change(&hosts(previous), &next(next_hosts), true);
        assert_eq!(
            result.as_ref().err().map(JournalChangeError::reason),
            refused
        );
    }

    #[rstest]
    #[case::growing_a_formatted_quorum(
        true,
        Some("hdfs-journalnode-default-3, hdfs-journalnode-default-4")
    )]
    #[case::growing_before_the_first_format(false, None)]
    fn new_journalnodes_of_a_formatted_quorum_are_warned_about(
        #[case] formatted: bool,
        #[case] named: Option<&str>,
    ) {
        let warning = check_change(
            &hosts(&["default-0", "default-1", "default-2"]),
            &next(&[
                "default-0",
                "default-1",
                "default-2",
                "default-3",
                "default-4",
            ]),
            formatted,
        )
        .expect("allowed");
        assert_eq!(
            warning.as_ref().map(|warning| warning.reason.clone()),
            named.map(|_| JOURNAL_NODES_ADDED)
        );
        if let (Some(warning), Some(named)) = (warning, named) {
            assert!(warning.message.contains(named), "{}", warning.message);
        }
    }

    #[test]
    fn another_cluster_domain_changes_no_journalnode() {
        let short = ["default-0", "default-1", "default-2"];
        let moved = JournalNodes {
            hosts: hosts(&short)
                .iter()
                .map(|host| host.replace("cluster.local", "example.org"))
                .collect(),
            ..next(&short)
        };
        assert_eq!(check_change(&hosts(&short), &moved, true), Ok(None));
    }

    #[test]
    fn a_refused_shrink_says_how_many_must_stay() {
        let error = check_change(
            &hosts(&["default-0", "default-1", "default-2"]),
            &next(&["default-0"]),
            true,
        )
        .expect_err("refused");
        assert_eq!(
            error.to_string(),
            "journalNodes would keep 1 of the 3 journalnode(s) the namenodes write to \
             (hdfs-journalnode-default-1, hdfs-journalnode-default-2 would go); an edit is \
             acknowledged once a majority has it, so at least 2 must stay for every \
             acknowledged edit to survive. Shrink in steps that each keep 2 or more. Nothing \
             was applied"
        );
    }
}
