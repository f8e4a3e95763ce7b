//! Journalnodes that the active namenode does not write to yet, and the roll's wait for
//! them.
//!
//! A journalnode that restarts has no open segment, so it refuses the active
//! namenode's next edits (`Journal.journal`: "Can't write, no segment open"), and the
//! namenode's logger for it goes out of sync until the next edit log segment starts.
//! Segments start when the standby asks the active to roll (every
//! `dfs.ha.log-roll.period`, and only if there were edits) or on `dfsadmin -rollEdits`.
//! The edit log needs a majority of in-sync journalnodes: restarting the next
//! journalnode while the last one is out of sync leaves one of three, and the active's
//! next edit makes it abort ("flush failed for required journal"), then the other.
//!
//! So a journalnode is Ready only once it has taken edits since it started (its
//! readiness probe reads the journal's `BatchesWritten`), and the roll, which restarts a
//! pod only when the ones before it are Ready, waits for that. Before it restarts a
//! journalnode or a namenode it also checks that the active namenode reports every
//! logger in sync: a logger can fall out of sync without a restart. While a journalnode
//! does not take edits, the operator asks for a new segment: it writes those
//! journalnodes into the namenode state ConfigMap
//! ([`ROLL_EDITS_KEY`](crate::build::config_map::ROLL_EDITS_KEY)), and the
//! `refresh-nodes` sidecar of the active namenode runs `dfsadmin -rollEdits` once they
//! answer. A cluster without an active namenode writes no edits, so the gate stays open.

use std::collections::BTreeSet;

use crate::config::topology::JOURNALNODE_RPC_PORT;
use crate::crd::HdfsRole;
use crate::roll::GroupPods;

/// The marks `IPCLoggerChannel.appendReport` (Hadoop 3.4) adds to a logger that misses
/// edits: out of sync until the next segment, or never written since it joined.
const OUT_OF_SYNC_MARKS: [&str; 2] = ["will try to re-sync on next segment", "(never written"];

/// The loggers a namenode reports out of sync, by `ip:port`, from the `stream` of a
/// `NameJournalStatus` entry, or `None` if it does not write the edit log (a standby's
/// `open for read`). A writing stream is `Writing segment beginning at txid 1. \n` then
/// `<ip>:<port> (Written txid N[ (lag)][ (will try to re-sync on next segment)])`,
/// joined by `, `.
pub fn out_of_sync_loggers(stream: &str) -> Option<BTreeSet<String>> {
    let (header, loggers) = stream.split_once('\n')?;
    if !header.starts_with("Writing segment") {
        return None;
    }
    Some(
        loggers
            .split(", ")
            .filter(|logger| OUT_OF_SYNC_MARKS.iter().any(|mark| logger.contains(mark)))
            .filter_map(|logger| logger.split_whitespace().next())
            .map(str::to_owned)
            .collect(),
    )
}

/// What the roll does about the journal before its next restart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JournalGate {
    /// Nothing holds the restart back.
    Open,
    /// The restart waits.
    Wait {
        /// What Progressing says.
        message: String,
    },
}

/// The gate for restarting `pod` (a journalnode or a namenode) while the active
/// namenode reports `out_of_sync` loggers (`None`: no active namenode answered).
pub fn gate(pod: &str, out_of_sync: Option<&BTreeSet<String>>) -> JournalGate {
    match out_of_sync {
        Some(loggers) if !loggers.is_empty() => {
            let list = loggers.iter().cloned().collect::<Vec<_>>().join(", ");
            JournalGate::Wait {
                message: format!(
                    "waiting before restarting {pod}: the active namenode does not write to \
                     the journalnode(s) {list} until the next edit log segment, and one more \
                     journalnode down would cost the edit log its majority; a new segment \
                     was requested"
                ),
            }
        }
        _ => JournalGate::Open,
    }
}

/// `<fqdn>:<rpc port>` of every journalnode pod that runs but is not Ready, that is,
/// has taken no edits since it started (its readiness probe); `journalnodes` are the
/// FQDNs of the topology.
pub fn unready_journalnodes(groups: &[GroupPods], journalnodes: &[String]) -> BTreeSet<String> {
    groups
        .iter()
        .filter(|group| group.role == HdfsRole::JournalNode)
        .flat_map(|group| group.pods.values())
        .filter(|pod| pod.running && !pod.ready && !pod.terminating)
        .filter_map(|pod| {
            journalnodes.iter().find(|fqdn| {
                fqdn.strip_prefix(pod.name.as_str())
                    .is_some_and(|rest| rest.starts_with('.'))
            })
        })
        .map(|fqdn| format!("{fqdn}:{JOURNALNODE_RPC_PORT}"))
        .collect()
}

/// The `roll-edits` value: every journalnode that does not take edits, one
/// `host:port` a line, sorted, so it changes with the set; empty when there is none.
/// The sidecar starts a segment once every one of them answers on its port, and again
/// while the value stays (see `src/scripts/refresh-nodes.sh`).
pub fn roll_edits_request(
    unready: &BTreeSet<String>,
    out_of_sync: Option<&BTreeSet<String>>,
) -> String {
    unready
        .iter()
        .chain(out_of_sync.into_iter().flatten())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(|address| format!("{address}\n"))
        .collect()
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use strata_operator::roll::PodRollState;

    use super::*;

    /// Streams as Hadoop 3.4.2's active namenode reports them.
    const IN_SYNC: &str = "Writing segment beginning at txid 1. \n10.244.0.2:8485 (Written txid 9), 10.244.0.3:8485 (Written txid 9), 10.244.0.4:8485 (Written txid 8 (1 txns/3ms behind))";
    const ONE_RESTARTED: &str = "Writing segment beginning at txid 1. \n10.244.0.2:8485 (Written txid 0 (9 txns/0ms behind) (will try to re-sync on next segment)), 10.244.0.3:8485 (Written txid 9), 10.244.0.4:8485 (Written txid 9)";
    const NEVER_WRITTEN: &str = "Writing segment beginning at txid 12. \n10.244.0.2:8485 (Written txid 11 (1 txns/0ms behind), 10.244.0.3:8485 (Written txid 12), 10.244.0.5:8485 (Written txid 0 (never written)";

    #[rstest]
    #[case::all_in_sync_with_a_small_lag(IN_SYNC, Some(vec![]))]
    #[case::a_restarted_journalnode(ONE_RESTARTED, Some(vec!["10.244.0.2:8485"]))]
    #[case::a_journalnode_never_written(NEVER_WRITTEN, Some(vec!["10.244.0.5:8485"]))]
    #[case::a_standby_reads("open for read", None)]
    #[case::not_writing("not currently writing", None)]
    fn out_of_sync_loggers_are_read_from_the_active_stream(
        #[case] stream: &str,
        #[case] expected: Option<Vec<&str>>,
    ) {
        let found: Option<Vec<String>> =
            out_of_sync_loggers(stream).map(|set| set.into_iter().collect());
        assert_eq!(
            found,
            expected.map(|list| list.into_iter().map(str::to_owned).collect())
        );
    }

    fn journalnode(ordinal: u32, running: bool, ready: bool) -> (u32, PodRollState) {
        let state = PodRollState {
            name: format!("hdfs-journalnode-default-{ordinal}"),
            running,
            ready,
            current: true,
            terminating: false,
        };
        (ordinal, state)
    }

    #[rstest]
    #[case::every_journalnode_takes_edits(vec![journalnode(0, true, true), journalnode(1, true, true)], None, "")]
    #[case::a_restarted_journalnode_not_ready(
        vec![journalnode(0, true, false), journalnode(1, true, true)],
        None,
        "hdfs-journalnode-default-0.hdfs-journalnode-default.default.svc.cluster.local:8485\n"
    )]
    #[case::a_journalnode_still_starting_is_not_asked_for(
        vec![journalnode(0, false, false), journalnode(1, true, true)],
        None,
        ""
    )]
    #[case::and_an_out_of_sync_logger(
        vec![journalnode(0, true, false), journalnode(1, true, true)],
        Some(vec!["10.244.0.3:8485"]),
        "10.244.0.3:8485\nhdfs-journalnode-default-0.hdfs-journalnode-default.default.svc.cluster.local:8485\n"
    )]
    fn a_new_segment_is_asked_for_every_journalnode_that_takes_no_edits(
        #[case] pods: Vec<(u32, PodRollState)>,
        #[case] out_of_sync: Option<Vec<&str>>,
        #[case] expected: &str,
    ) {
        let groups = [GroupPods {
            name: "hdfs-journalnode-default".to_owned(),
            role: HdfsRole::JournalNode,
            template_observed: true,
            replicas: 2,
            pods: pods.into_iter().collect(),
        }];
        let fqdns: Vec<String> = (0..2)
            .map(|ordinal| {
                format!(
                    "hdfs-journalnode-default-{ordinal}.hdfs-journalnode-default.default.svc.cluster.local"
                )
            })
            .collect();
        let out_of_sync: Option<BTreeSet<String>> =
            out_of_sync.map(|list| list.into_iter().map(str::to_owned).collect());
        let unready = unready_journalnodes(&groups, &fqdns);
        assert_eq!(roll_edits_request(&unready, out_of_sync.as_ref()), expected);
    }

    #[rstest]
    #[case::no_active_namenode(None, false)]
    #[case::every_logger_in_sync(Some(vec![]), false)]
    #[case::one_out_of_sync(Some(vec!["10.244.0.2:8485"]), true)]
    fn a_restart_waits_while_a_logger_is_out_of_sync(
        #[case] loggers: Option<Vec<&str>>,
        #[case] waits: bool,
    ) {
        let loggers: Option<BTreeSet<String>> =
            loggers.map(|list| list.into_iter().map(str::to_owned).collect());
        let gate = gate("simple-hdfs-journalnode-default-1", loggers.as_ref());
        assert_eq!(matches!(gate, JournalGate::Wait { .. }), waits, "{gate:?}");
        if let JournalGate::Wait { message } = gate {
            assert!(
                message.contains("simple-hdfs-journalnode-default-1"),
                "{message}"
            );
            assert!(message.contains("10.244.0.2:8485"), "{message}");
        }
    }
}
