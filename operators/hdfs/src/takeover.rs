//! The namenode roll's last restart: the active namenode goes only once a standby can
//! take over at once.
//!
//! The active namenode's preStop hook hands over (`hdfs haadmin -failover`), and
//! otherwise the standby's ZKFC elects it. Either way the new active is only as good
//! as the standby was:
//! - **A standby in safe mode becomes an active namenode in safe mode**, which refuses
//!   every write (and every delete) until the datanodes have reported enough blocks.
//!   A standby that has just restarted, as the roll's first namenode restart does, is
//!   in safe mode until the datanodes' block reports reach
//!   `dfs.namenode.safemode.threshold-pct`, then `dfs.namenode.safemode.extension`
//!   longer. Restarting the active then turns a rolling restart into a write outage.
//! - **A standby whose ZKFC does not run is never elected.** The zkfc container's
//!   readiness probe answers only once the ZKFC has reached ZooKeeper and serves its
//!   RPC port, so a Ready namenode pod has a running ZKFC, and the roll restarts a
//!   namenode only while the others are Ready.
//!
//! So before it restarts the active (or any namenode while none is known to be active),
//! the roll asks every namenode's `NameNodeInfo` bean for `Safemode` (empty when off),
//! and waits until every other one is out of safe mode. A namenode that does not
//! answer cannot take over either. [`gate`] is pure.

use std::collections::BTreeMap;

/// A namenode's safe mode, from the `Safemode` attribute of its `NameNodeInfo` bean.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SafeMode {
    /// Not in safe mode: takes writes once active.
    Off,
    /// In safe mode, with the namenode's own explanation (`FSNamesystem.getSafemode`:
    /// the blocks reported so far and the threshold).
    On(String),
}

impl SafeMode {
    /// The state from the attribute's text: empty means off.
    pub fn parse(text: &str) -> Self {
        let text = text.trim();
        if text.is_empty() {
            Self::Off
        } else {
            Self::On(text.split_whitespace().collect::<Vec<_>>().join(" "))
        }
    }
}

/// Whether the namenode may restart now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TakeoverGate {
    /// Every other namenode is out of safe mode, or waiting could not help.
    Open,
    /// The restart waits; the message says for what. It names no block counts or
    /// countdowns, which change at every look and would rewrite the status each time.
    Wait {
        /// For the Progressing condition.
        message: String,
    },
}

/// Whether `restarting` (the active namenode, or any namenode while none is known to
/// be active) may restart, given every namenode's safe mode (`None`: no answer) and
/// whether any datanode is Ready.
///
/// - **Every other namenode must be out of safe mode**: the preStop hook fails over to
///   the first standby that answers and a ZKFC election picks any, so one good standby
///   among several is not enough.
/// - **Waiting cannot help, so the gate opens**, when `restarting` is in safe mode itself
///   (the cluster takes no writes already), or when no datanode is Ready (a standby
///   leaves safe mode only on their block reports, and the datanodes roll after the
///   namenodes).
pub fn gate(
    restarting: &str,
    namenodes: &BTreeMap<String, Option<SafeMode>>,
    datanodes_ready: bool,
) -> TakeoverGate {
    let restarting_in_safe_mode = matches!(namenodes.get(restarting), Some(Some(SafeMode::On(_))));
    let others: Vec<(&String, &Option<SafeMode>)> = namenodes
        .iter()
        .filter(|(namenode, _)| namenode.as_str() != restarting)
        .collect();
    let ready = |safe_mode: &Option<SafeMode>| *safe_mode == Some(SafeMode::Off);
    if restarting_in_safe_mode || !datanodes_ready || others.iter().all(|(_, mode)| ready(mode)) {
        return TakeoverGate::Open;
    }
    let states: Vec<String> = others
        .iter()
        .filter(|(_, mode)| !ready(mode))
        .map(|(namenode, mode)| match mode {
            Some(_) => format!("{namenode} is in safe mode"),
            None => format!("{namenode} did not answer"),
        })
        .collect();
    TakeoverGate::Wait {
        message: format!(
            "waiting for every other namenode to be out of safe mode before {restarting} \
             restarts: a namenode in safe mode would take over unable to accept writes \
             until the datanodes report their blocks ({}). One that cannot leave it (blocks \
             missing for good) needs `hdfs dfsadmin -fs hdfs://<its address> -safemode \
             leave`",
            states.join("; ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use rstest::rstest;

    use super::*;

    const TIP: &str = "Safe mode is ON. The reported blocks 3 needs additional 2 blocks to \
        reach the threshold 0.9990 of total blocks 5.\nThe minimum number of live datanodes \
        is not required.";

    #[rstest]
    #[case::empty_is_off("", SafeMode::Off)]
    #[case::blank_is_off(" \n", SafeMode::Off)]
    #[case::a_tip_is_on_in_one_line(
        TIP,
        SafeMode::On(
            "Safe mode is ON. The reported blocks 3 needs additional 2 blocks to reach the \
             threshold 0.9990 of total blocks 5. The minimum number of live datanodes is not \
             required."
                .to_owned()
        )
    )]
    fn the_safemode_attribute_is_empty_when_off(#[case] text: &str, #[case] expected: SafeMode) {
        assert_eq!(SafeMode::parse(text), expected);
    }

    fn on() -> Option<SafeMode> {
        Some(SafeMode::On("Safe mode is ON.".to_owned()))
    }

    #[rstest]
    #[case::the_standby_out_of_safe_mode(&[("nn-0", Some(SafeMode::Off)), ("nn-1", Some(SafeMode::Off))], true, None)]
    #[case::the_standby_in_safe_mode(
        &[("nn-0", Some(SafeMode::Off)), ("nn-1", on())],
        true,
        Some("nn-1 is in safe mode")
    )]
    #[case::the_standby_silent(&[("nn-0", Some(SafeMode::Off)), ("nn-1", None)], true, Some("nn-1 did not answer"))]
    #[case::one_of_two_standbys_in_safe_mode(
        &[("nn-0", Some(SafeMode::Off)), ("nn-1", Some(SafeMode::Off)), ("nn-2", on())],
        true,
        Some("nn-2 is in safe mode")
    )]
    #[case::the_restarting_namenode_in_safe_mode_itself(&[("nn-0", on()), ("nn-1", on())], true, None)]
    #[case::no_datanode_ready(&[("nn-0", Some(SafeMode::Off)), ("nn-1", on())], false, None)]
    fn a_namenode_restarts_only_once_every_other_one_is_out_of_safe_mode(
        #[case] namenodes: &[(&str, Option<SafeMode>)],
        #[case] datanodes_ready: bool,
        #[case] waits_for: Option<&str>,
    ) {
        let namenodes: BTreeMap<String, Option<SafeMode>> = namenodes
            .iter()
            .map(|(name, state)| ((*name).to_owned(), state.clone()))
            .collect();
        match (gate("nn-0", &namenodes, datanodes_ready), waits_for) {
            (TakeoverGate::Open, None) => {}
            (TakeoverGate::Wait { message }, Some(expected)) => {
                assert!(message.contains("before nn-0 restarts"), "{message}");
                assert!(message.contains(&format!("({expected})")), "{message}");
            }
            (gate, expected) => panic!("{gate:?}, expected a wait for {expected:?}"),
        }
    }
}
