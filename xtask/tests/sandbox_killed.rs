//! A sandbox killed by SIGKILL leaves no process behind: not etcd, the API server, the
//! controller manager, the scheduler or KWOK (each started with a parent-death signal,
//! `strata_testing::parent_death`), and not the operator pods on the runner's node
//! (the pod runner's helper sets its own). Before they had one, a sandbox whose `cargo`
//! was killed left the whole control plane running under PID 1, holding every file
//! descriptor it had inherited. Needs root and the sandbox's tools; `cargo xtask test`
//! runs it.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The loopback address of this test's control plane, used by no other test.
const ADDRESS: &str = "127.0.0.41";
/// What the sandbox prints once every operator runs.
const RUNNING: &str = "The sandbox runs.";
/// How long the sandbox may take to get there with its tools provisioned.
const START_TIMEOUT: Duration = Duration::from_secs(600);
/// How long its processes may take to die once it is killed.
const DEATH_TIMEOUT: Duration = Duration::from_secs(30);

/// A process as `/proc/<pid>/stat` shows it: its parent, its start time (which tells
/// a process from a later one that reuses its PID) and its name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Process {
    parent: u32,
    started: u64,
    name: String,
}

fn process(pid: u32) -> Option<Process> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, rest) = stat.rsplit_once(')')?;
    let name = head.split_once('(')?.1.to_owned();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state (0), ppid (1), ... starttime is field 22 of the line (19).
    if fields.first() == Some(&"Z") {
        return None;
    }
    Some(Process {
        parent: fields.get(1)?.parse().ok()?,
        started: fields.get(19)?.parse().ok()?,
        name,
    })
}

fn processes() -> BTreeMap<u32, Process> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, process(pid)?)))
        .collect()
}

/// Every process below `root`, by PID.
fn descendants(root: u32) -> BTreeMap<u32, Process> {
    let all = processes();
    let mut found = BTreeMap::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for (pid, process) in &all {
            if process.parent == parent && !found.contains_key(pid) {
                found.insert(*pid, process.clone());
                frontier.push(*pid);
            }
        }
    }
    found
}

#[test]
#[ignore = "needs root and the sandbox's tools (the control plane, helm, the images); run by cargo xtask test"]
fn a_sandbox_killed_by_sigkill_leaves_no_process_behind() {
    let mut sandbox = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["sandbox", "--address", ADDRESS])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cargo xtask sandbox starts");
    let (lines, received) = mpsc::channel();
    let stderr = sandbox.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let deadline = Instant::now() + START_TIMEOUT;
    let mut seen = Vec::new();
    while !seen.iter().any(|line: &String| line.contains(RUNNING)) {
        let remaining = deadline.saturating_duration_since(Instant::now());
        match received.recv_timeout(remaining) {
            Ok(line) => seen.push(line),
            Err(_) => {
                let _ = sandbox.kill();
                let _ = sandbox.wait();
                panic!(
                    "the sandbox did not get to {RUNNING:?} within {START_TIMEOUT:?}:\n{}",
                    seen.join("\n")
                );
            }
        }
    }
    let before = descendants(sandbox.id());
    let names: Vec<&str> = before
        .values()
        .map(|process| process.name.as_str())
        .collect();
    for component in ["etcd", "kube-apiserver", "kwok"] {
        assert!(
            names.iter().any(|name| name.starts_with(component)),
            "the sandbox runs no {component} below it: {names:?}"
        );
    }

    sandbox.kill().expect("SIGKILL");
    sandbox.wait().expect("the sandbox is reaped");
    let killed = Instant::now();
    let alive =
        |pid: &u32, was: &Process| process(*pid).is_some_and(|now| now.started == was.started);
    loop {
        let survivors: Vec<String> = before
            .iter()
            .filter(|(pid, was)| alive(pid, was))
            .map(|(pid, was)| format!("{pid} {}", was.name))
            .collect();
        if survivors.is_empty() {
            break;
        }
        assert!(
            killed.elapsed() < DEATH_TIMEOUT,
            "{} of the sandbox's {} processes outlived it by {DEATH_TIMEOUT:?}: {survivors:?}",
            survivors.len(),
            before.len()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
