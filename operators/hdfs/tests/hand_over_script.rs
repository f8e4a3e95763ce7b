//! The namenode's preStop hook against a fake `hdfs`: an active namenode hands the
//! active role to a standby before it stops; anything else stops as before, and the
//! hook never fails the stop.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::process::Command;

use pretty_assertions::assert_eq;
use rstest::rstest;

const SCRIPT: &str = include_str!("../src/scripts/hand-over-active.sh");

/// A fake `hdfs` that records its arguments. `haadmin -getServiceState <id>` prints the
/// state named by `$STATE_<id>` (absent: the namenode does not answer, exit 255);
/// `haadmin -failover` exits `$FAILOVER_CODE`.
const FAKE_HDFS: &str = r#"#!/usr/bin/env bash
printf '%s\n' "$*" >>"$FAKE_DIR/calls"
case "$1 $2" in
"haadmin -getServiceState")
    variable="STATE_${3//-/_}"
    [[ -n ${!variable:-} ]] || exit 255
    printf '%s\n' "${!variable}"
    ;;
"haadmin -failover") exit "${FAILOVER_CODE:-0}" ;;
*) exit 64 ;;
esac
"#;

const SELF: &str = "nn-0";

/// Runs the hook on `nn-0` among `nn-0 nn-1 nn-2` with these states; returns its exit
/// code and the failovers it asked for.
fn hand_over(states: &[(&str, &str)], failover_code: i32) -> (i32, Vec<String>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).expect("bin");
    strata_testing::executable::write(&bin.join("hdfs"), FAKE_HDFS);
    let script = dir.path().join("hand-over-active.sh");
    std::fs::write(&script, SCRIPT).expect("the script");
    let mut command = Command::new("bash");
    command
        .arg(&script)
        .args([SELF, "nn-1", "nn-2"])
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("FAKE_DIR", dir.path())
        .env("POD_NAME", SELF)
        .env("FAILOVER_CODE", failover_code.to_string());
    for (id, state) in states {
        command.env(format!("STATE_{}", id.replace('-', "_")), state);
    }
    let output = command.output().expect("bash runs");
    let failovers = std::fs::read_to_string(dir.path().join("calls"))
        .unwrap_or_default()
        .lines()
        .filter(|call| call.starts_with("haadmin -failover"))
        .map(str::to_owned)
        .collect();
    (output.status.code().unwrap_or(-1), failovers)
}

#[rstest]
#[case::the_active_hands_over_to_the_standby(
    &[("nn-0", "active"), ("nn-1", "standby")], 0, &["haadmin -failover nn-0 nn-1"]
)]
#[case::an_unreachable_namenode_is_skipped(
    &[("nn-0", "active"), ("nn-2", "standby")], 0, &["haadmin -failover nn-0 nn-2"]
)]
#[case::a_failed_hand_over_tries_the_next_standby(
    &[("nn-0", "active"), ("nn-1", "standby"), ("nn-2", "standby")], 1,
    &["haadmin -failover nn-0 nn-1", "haadmin -failover nn-0 nn-2"]
)]
#[case::a_standby_stops_as_before(&[("nn-0", "standby"), ("nn-1", "active")], 0, &[])]
#[case::no_standby_to_take_over(&[("nn-0", "active"), ("nn-1", "observer")], 0, &[])]
#[case::an_unanswering_self_stops_as_before(&[("nn-1", "standby")], 0, &[])]
fn an_active_namenode_hands_over_before_it_stops(
    #[case] states: &[(&str, &str)],
    #[case] failover_code: i32,
    #[case] expected: &[&str],
) {
    let (code, failovers) = hand_over(states, failover_code);
    assert_eq!(code, 0, "the hook never fails the stop");
    assert_eq!(failovers, expected);
}
