//! The refresh-nodes sidecar against a fake `hdfs`: it has the namenode re-read the
//! exclude list at start, retries while the namenode is not up, and again exactly when
//! the list changes.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;

const SCRIPT: &str = include_str!("../src/scripts/refresh-nodes.sh");

/// A fake `hdfs` that records its arguments and exits with the next code of `codes`
/// (then 0).
const FAKE_HDFS: &str = r#"#!/usr/bin/env bash
printf '%s\n' "$*" >>"$FAKE_DIR/calls"
code=0
if [[ -s "$FAKE_DIR/codes" ]]; then
    code=$(head -n 1 "$FAKE_DIR/codes")
    sed -i 1d "$FAKE_DIR/codes"
fi
exit "$code"
"#;

/// Stops the script by its PID when the test ends, however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _killed = self.0.kill();
        let _waited = self.0.wait();
    }
}

fn calls(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("calls"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn wait_for_calls(dir: &Path, count: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let calls = calls(dir);
        if calls.len() >= count {
            return calls;
        }
        assert!(
            Instant::now() < deadline,
            "{count} refreshNodes calls expected, saw {calls:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_namenode_rereads_the_exclude_list_at_start_and_on_every_change() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).expect("bin");
    strata_testing::executable::write(&bin.join("hdfs"), FAKE_HDFS);
    std::fs::write(dir.path().join("refresh-nodes.sh"), SCRIPT).expect("the script");
    let exclude = dir.path().join("datanodes");
    std::fs::write(&exclude, "").expect("an empty exclude list");
    // The namenode is not up for the first call.
    std::fs::write(dir.path().join("codes"), "255\n").expect("codes");

    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let _script = Running(
        Command::new("bash")
            .arg(dir.path().join("refresh-nodes.sh"))
            .env("PATH", path)
            .env("FAKE_DIR", dir.path())
            .env("EXCLUDE_FILE", &exclude)
            .env("CHECK_SECONDS", "0.05")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("bash starts"),
    );

    let refresh = "dfsadmin -fs hdfs://127.0.0.1:8020 -refreshNodes";
    assert_eq!(wait_for_calls(dir.path(), 2), [refresh, refresh]);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        calls(dir.path()).len(),
        2,
        "an unchanged list is not re-read"
    );

    std::fs::write(&exclude, "dn-2.dn.default.svc.cluster.local\n").expect("a host excluded");
    assert_eq!(wait_for_calls(dir.path(), 3).len(), 3);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(calls(dir.path()).len(), 3, "one re-read per change");
}
