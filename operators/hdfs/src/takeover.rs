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
//! So before it restarts the active, the roll asks the other namenodes' `NameNodeInfo`
//! bean for `Safemode` (empty when off), and waits until one of them is out of safe
//! mode. A namenode that does not answer cannot take over either. [`gate`] is pure.

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

/// Whether the active namenode may restart now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TakeoverGate {
    /// A standby out of safe mode can take over.
    Open,
    /// The restart waits; the message says for what.
    Wait {
        /// For the Progressing condition.
        message: String,
    },
}

/// Whether the active namenode `active` may restart, given what every other namenode
/// answered (`None`: no answer).
pub fn gate(active: &str, standbys: &BTreeMap<String, Option<SafeMode>>) -> TakeoverGate {
    if standbys
        .values()
        .any(|safe_mode| *safe_mode == Some(SafeMode::Off))
    {
        return TakeoverGate::Open;
    }
    let states: Vec<String> = standbys
        .iter()
        .map(|(namenode, safe_mode)| match safe_mode {
            Some(SafeMode::On(tip)) => format!("{namenode} is in safe mode ({tip})"),
            Some(SafeMode::Off) => format!("{namenode} is out of safe mode"),
            None => format!("{namenode} did not answer"),
        })
        .collect();
    let others = if states.is_empty() {
        "no other namenode exists".to_owned()
    } else {
        states.join("; ")
    };
    TakeoverGate::Wait {
        message: format!(
            "waiting for a standby namenode out of safe mode before the active namenode \
             {active} restarts: a standby in safe mode would take over unable to accept \
             writes until the datanodes report their blocks. {others}"
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

    #[rstest]
    #[case::a_standby_out_of_safe_mode(&[("nn-1", Some(SafeMode::Off))], None)]
    #[case::one_of_two_standbys_out_of_safe_mode(
        &[("nn-1", None), ("nn-2", Some(SafeMode::Off))],
        None
    )]
    #[case::the_standby_in_safe_mode(
        &[("nn-1", Some(SafeMode::On("Safe mode is ON.".to_owned())))],
        Some("nn-1 is in safe mode (Safe mode is ON.)")
    )]
    #[case::the_standby_silent(&[("nn-1", None)], Some("nn-1 did not answer"))]
    #[case::no_standby(&[], Some("no other namenode exists"))]
    fn the_active_restarts_only_once_a_standby_is_out_of_safe_mode(
        #[case] standbys: &[(&str, Option<SafeMode>)],
        #[case] waits_for: Option<&str>,
    ) {
        let standbys: BTreeMap<String, Option<SafeMode>> = standbys
            .iter()
            .map(|(name, state)| ((*name).to_owned(), state.clone()))
            .collect();
        match (gate("nn-0", &standbys), waits_for) {
            (TakeoverGate::Open, None) => {}
            (TakeoverGate::Wait { message }, Some(expected)) => {
                assert!(message.contains("before the active namenode nn-0 restarts"));
                assert!(message.ends_with(expected), "{message}");
            }
            (gate, expected) => panic!("{gate:?}, expected a wait for {expected:?}"),
        }
    }
}
