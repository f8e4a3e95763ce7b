//! The test step: every test binary of the workspace, run side by side in lanes.
//!
//! `cargo test` runs one test binary after the other. The suite's long binaries are the
//! real-product ones (real Hadoop, Trino, ZooKeeper, Superset), and they spend most of
//! their time waiting on the products' own timers and JVM starts, with a core idle. So
//! the step builds every test binary once (`cargo test --no-run`), then runs them from a
//! queue, [`DEFAULT_LANES`] at a time, the longest first: the HDFS and Trino suites
//! alone, ZooKeeper's beside the Superset ones, those one at a time, and everything
//! else around them. Each binary's output is printed
//! in one block when it ends, so two lanes never interleave their lines, and every
//! binary runs even after one failed: a red run names every failing binary at once,
//! and repeats each one's failures at the step's very end, where a log cut to its tail
//! still shows why.
//!
//! Two binaries never share a port or an address: every server in the tests binds a free
//! port, a fixed loopback address belongs to one binary, and the pod runner names its
//! network namespaces after its own PID.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::Deserialize;

use crate::cpu_account::{self, CpuTime};

/// How many test binaries run at once unless `STRATA_TEST_LANES` says otherwise: the
/// machine CI runs on has two cores.
pub const DEFAULT_LANES: usize = 2;

/// The variable that overrides [`DEFAULT_LANES`] (`1` runs the binaries one by one).
pub const LANES_VARIABLE: &str = "STRATA_TEST_LANES";

/// The variable whose words are passed to every test binary after `--include-ignored`,
/// e.g. a test filter, `--nocapture`, or (with `RUSTC_BOOTSTRAP=1`) `-Z
/// unstable-options --report-time` to see how long each test takes.
pub const ARGS_VARIABLE: &str = "STRATA_TEST_ARGS";

/// The binaries that take longest, longest first (from the CI log of a whole run).
/// They start first so that the short ones fill the other lane around them; every
/// binary not named here follows in cargo's order.
const LONGEST_FIRST: [&str; 9] = [
    "real_hdfs",
    "real_trino",
    "real_zookeeper",
    "real_superset",
    "real_superset_celery",
    "real_superset_runner",
    "real_superset_trino",
    "real_control_plane",
    "node_agent",
];

/// The binaries that run with nothing beside them, each taken once both lanes are
/// free: the Trino suite starts eight JVMs at once (its three tests run side by side), and
/// its catalog roll, timed by its probe, took 175 s instead of 26 s with the other
/// lane busy; the HDFS suite's operated roll, timed the same way, once missed its
/// graceful hand-over with the other lane busy. The binaries beside them cannot be
/// niced instead: at `nice -n 19` beside the HDFS suite, the real control plane of
/// Superset's `real_control_plane` starved until its scheduler lost its lease.
const ALONE: [&str; 2] = ["real_hdfs", "real_trino"];

/// Suites that run more tests at once than the machine has cores, because some of
/// their tests mostly wait: ZooKeeper's two certificate-rotation tests and Trino's
/// wait minutes for a renewal due two thirds into a five-minute certificate, and with
/// two threads each held one of the suite's threads while it waited. Trino's suite
/// alone took 359.7 s with two threads, its example waiting 153.9 s for one, and
/// 276.4 s and 282.7 s with three (BENCHMARKS.md).
const TEST_THREADS: [(&str, usize); 2] = [("real_zookeeper", 3), ("real_trino", 3)];

/// The real-product binaries by product: two of one product never run side by side,
/// since each starts several JVMs or Python servers and two such suites slowed each
/// other past their own timeouts. HDFS and Trino run [`ALONE`] besides (they are the
/// suites that failed that way); ZooKeeper's suite runs beside a Superset one, which is
/// no more load than the in-memory and control-plane suites it ran beside before. The
/// Superset suites leave the serial chain of real-product suites, but run slower beside
/// it, and the other binaries then run after it: measured, the test step gained
/// little (BENCHMARKS.md). The floor is the real suites' own length.
const PRODUCT_SUITES: [(&str, &str); 7] = [
    ("real_hdfs", "hdfs"),
    ("real_trino", "trino"),
    ("real_zookeeper", "zookeeper"),
    ("real_superset", "superset"),
    ("real_superset_celery", "superset"),
    ("real_superset_runner", "superset"),
    ("real_superset_trino", "superset"),
];

/// One test binary cargo built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestBinary {
    /// Its package, as in `Cargo.toml`.
    pub package: String,
    /// The target's name (the file under `tests/`, or the crate's for unit tests).
    pub target: String,
    /// The built executable.
    pub executable: PathBuf,
    /// The package's directory, where cargo runs its tests.
    pub package_dir: PathBuf,
}

impl TestBinary {
    fn label(&self) -> String {
        if self.package == self.target.replace('_', "-") || self.package == self.target {
            format!("{} (unit tests)", self.package)
        } else {
            format!("{} --test {}", self.package, self.target)
        }
    }
}

#[derive(Deserialize)]
struct Message {
    reason: String,
    #[serde(default)]
    package_id: String,
    #[serde(default)]
    manifest_path: Option<PathBuf>,
    #[serde(default)]
    target: Option<Target>,
    #[serde(default)]
    profile: Option<Profile>,
    #[serde(default)]
    executable: Option<PathBuf>,
}

#[derive(Deserialize)]
struct Target {
    name: String,
}

#[derive(Deserialize)]
struct Profile {
    test: bool,
}

/// The test binaries named in cargo's JSON messages (`--message-format=json`), in the
/// order cargo built them.
pub fn test_binaries(messages: &str) -> anyhow::Result<Vec<TestBinary>> {
    let mut binaries = Vec::new();
    for line in messages.lines().filter(|line| line.starts_with('{')) {
        let message: Message = serde_json::from_str(line)
            .with_context(|| format!("cargo printed a message xtask cannot read: {line}"))?;
        let (Some(target), Some(profile), Some(executable), Some(manifest)) = (
            message.target,
            message.profile,
            message.executable,
            message.manifest_path,
        ) else {
            continue;
        };
        if message.reason != "compiler-artifact" || !profile.test {
            continue;
        }
        binaries.push(TestBinary {
            package: package_name(&message.package_id),
            target: target.name,
            executable,
            package_dir: manifest.parent().map(Path::to_path_buf).unwrap_or_default(),
        });
    }
    Ok(binaries)
}

/// The package's name from a package ID: `path+file:///w/crates/x#name@0.1.0`, or
/// `path+file:///w/crates/name#0.1.0` when the directory is the package's name.
fn package_name(package_id: &str) -> String {
    let (location, fragment) = package_id.split_once('#').unwrap_or((package_id, ""));
    match fragment.split_once('@') {
        Some((name, _)) => name.to_owned(),
        None => location.rsplit('/').next().unwrap_or(location).to_owned(),
    }
}

/// The binaries in the order the lanes take them: the longest known ones first, then
/// the rest in cargo's order.
pub fn queue(mut binaries: Vec<TestBinary>) -> Vec<TestBinary> {
    binaries.sort_by_key(|binary| {
        LONGEST_FIRST
            .iter()
            .position(|name| *name == binary.target)
            .unwrap_or(LONGEST_FIRST.len())
    });
    binaries
}

/// How one binary ended.
struct Outcome {
    label: String,
    passed: bool,
    took: Duration,
    /// The CPU time it and its descendants used, when it ran.
    cpu: Option<CpuTime>,
    /// What a failing binary said about its failures, repeated at the step's end.
    failures: Option<String>,
}

/// Builds every test binary (`cargo test --workspace --no-run`), and returns them in
/// the order the lanes take them.
pub fn build(
    workspace: &Path,
    cargo: &OsString,
    configure: &(dyn Fn(&mut Command) + Sync),
) -> anyhow::Result<Vec<TestBinary>> {
    let mut build = strata_testing::parent_death::command(Path::new(cargo));
    configure(&mut build);
    let built = build
        .args([
            "test",
            "--workspace",
            "--no-run",
            "--message-format=json-render-diagnostics",
        ])
        .current_dir(workspace)
        .stderr(std::process::Stdio::inherit())
        .output()
        .with_context(|| format!("cannot start {cargo:?}"))?;
    if !built.status.success() {
        bail!("cargo test --no-run exited with {}", built.status);
    }
    Ok(queue(test_binaries(&String::from_utf8_lossy(
        &built.stdout,
    ))?))
}

/// Runs the built `binaries` in lanes with `--include-ignored`, then the doctests. Fails
/// naming every binary that failed.
pub fn run(
    workspace: &Path,
    cargo: &OsString,
    configure: &(dyn Fn(&mut Command) + Sync),
    binaries: Vec<TestBinary>,
) -> anyhow::Result<()> {
    let lanes = lanes_from(std::env::var(LANES_VARIABLE).ok().as_deref())?;
    eprintln!(
        "    {} test binaries, {lanes} at a time, longest first",
        binaries.len()
    );

    let count = binaries.len();
    let queue = Queue::new(binaries);
    let outcomes = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..lanes {
            scope.spawn(|| {
                while let Some(binary) = queue.take() {
                    let _done = Done {
                        queue: &queue,
                        binary: &binary,
                    };
                    let outcome = run_one(&binary, configure);
                    if let Ok(mut outcomes) = outcomes.lock() {
                        outcomes.push(outcome);
                    }
                }
            });
        }
    });
    let outcomes = outcomes.into_inner().unwrap_or_default();
    report(&outcomes);
    if outcomes.len() < count {
        bail!(
            "only {} of {count} test binaries ran: a lane ended early",
            outcomes.len()
        );
    }

    let mut doctests = Command::new(cargo);
    configure(&mut doctests);
    let status = doctests
        .args(["test", "--workspace", "--doc"])
        .current_dir(workspace)
        .status()
        .with_context(|| format!("cannot start {cargo:?}"))?;

    let failed: Vec<&str> = outcomes
        .iter()
        .filter(|outcome| !outcome.passed)
        .map(|outcome| outcome.label.as_str())
        .collect();
    for outcome in &outcomes {
        if let Some(failures) = &outcome.failures {
            eprintln!("\n==== {} failed:\n{failures}", outcome.label);
        }
    }
    if !failed.is_empty() {
        bail!("failing test binaries: {}", failed.join(", "));
    }
    if !status.success() {
        bail!("the doctests failed ({status})");
    }
    Ok(())
}

/// The number of lanes: the variable's value, or [`DEFAULT_LANES`].
pub fn lanes_from(value: Option<&str>) -> anyhow::Result<usize> {
    match value {
        None | Some("") => Ok(DEFAULT_LANES),
        Some(text) => match text.parse::<usize>() {
            Ok(lanes) if lanes > 0 => Ok(lanes),
            _ => bail!("{LANES_VARIABLE}={text} is not a positive number of lanes"),
        },
    }
}

/// The words of [`ARGS_VARIABLE`]'s value.
pub fn extra_arguments(value: Option<&str>) -> Vec<String> {
    value
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// `--test-threads=N` for a suite of [`TEST_THREADS`], unless the extra arguments set
/// it already (libtest refuses it twice).
fn test_threads(binary: &TestBinary, extra: &[String]) -> Option<String> {
    if extra.iter().any(|word| word.starts_with("--test-threads")) {
        return None;
    }
    TEST_THREADS
        .iter()
        .find(|(target, _)| *target == binary.target)
        .map(|(_, threads)| format!("--test-threads={threads}"))
}

/// Tells the queue that `binary` ended when it goes out of scope, even if the lane
/// panicked while running it: the other lane would otherwise wait for good.
struct Done<'a> {
    queue: &'a Queue,
    binary: &'a TestBinary,
}

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.queue.done(self.binary);
    }
}

/// The product whose real suite `binary` is ([`PRODUCT_SUITES`]), if any.
fn product(binary: &TestBinary) -> Option<&'static str> {
    PRODUCT_SUITES
        .iter()
        .find(|(target, _)| *target == binary.target)
        .map(|(_, product)| *product)
}

struct QueueState {
    pending: VecDeque<TestBinary>,
    products_running: Vec<&'static str>,
    alone_running: bool,
    running: usize,
}

/// Whether `binary` runs with nothing beside it ([`ALONE`]).
fn alone(binary: &TestBinary) -> bool {
    ALONE.contains(&binary.target.as_str())
}

/// The binaries still to run, handed out in order, but never a second real suite of a
/// product whose suite runs ([`PRODUCT_SUITES`]), nor anything beside an [`ALONE`] one:
/// a lane skips it for the next other binary, or waits when only such binaries are
/// left.
struct Queue {
    state: Mutex<QueueState>,
    changed: Condvar,
}

impl Queue {
    fn new(binaries: Vec<TestBinary>) -> Self {
        Self {
            state: Mutex::new(QueueState {
                pending: VecDeque::from(binaries),
                products_running: Vec::new(),
                alone_running: false,
                running: 0,
            }),
            changed: Condvar::new(),
        }
    }

    fn take(&self) -> Option<TestBinary> {
        let mut state = self.state.lock().ok()?;
        loop {
            if state.pending.is_empty() {
                return None;
            }
            let eligible = |binary: &TestBinary| {
                let held_back = state.alone_running
                    || product(binary).is_some_and(|name| state.products_running.contains(&name))
                    || (alone(binary) && state.running > 0);
                !held_back
            };
            if let Some(index) = state.pending.iter().position(eligible) {
                let binary = state.pending.remove(index)?;
                state.products_running.extend(product(&binary));
                state.alone_running |= alone(&binary);
                state.running += 1;
                return Some(binary);
            }
            state = self.changed.wait(state).ok()?;
        }
    }

    fn done(&self, binary: &TestBinary) {
        if let Ok(mut state) = self.state.lock() {
            state.running = state.running.saturating_sub(1);
            if let Some(name) = product(binary) {
                state.products_running.retain(|running| *running != name);
            }
            if alone(binary) {
                state.alone_running = false;
            }
        }
        self.changed.notify_all();
    }
}

/// Runs one binary as cargo would (in its package's directory, with the tool variables
/// `configure` sets), and prints its output in one block once it ends.
fn run_one(binary: &TestBinary, configure: &(dyn Fn(&mut Command) + Sync)) -> Outcome {
    let label = binary.label();
    let started = Instant::now();
    // A test binary dies with its lane (and so with `cargo xtask test`), as its own
    // servers die with it: a killed run leaves nothing behind.
    let mut command = strata_testing::parent_death::command(&binary.executable);
    configure(&mut command);
    let extra = extra_arguments(std::env::var(ARGS_VARIABLE).ok().as_deref());
    command
        .arg("--include-ignored")
        .args(test_threads(binary, &extra))
        .args(extra)
        .current_dir(&binary.package_dir);
    // Two packages may have a test of one name (`reconcile`), and run it side by side.
    let account = format!("{}-{}", binary.package, binary.target);
    let (output, cpu) = match cpu_account::output(command, &account) {
        Ok((output, cpu)) => (Ok(output), Some(cpu)),
        Err(error) => (Err(error), None),
    };
    let took = started.elapsed();
    let passed = match &output {
        Ok(output) => output.status.success(),
        Err(_) => false,
    };
    let verdict = if passed { "passed" } else { "FAILED" };
    let failures = match &output {
        Ok(_) if passed => None,
        Ok(output) => Some(failure_recap(
            &String::from_utf8_lossy(&output.stdout),
            &String::from_utf8_lossy(&output.stderr),
        )),
        Err(error) => Some(format!("cannot start it: {error}")),
    };
    let mut block = format!(
        "\n---- {label} {verdict} in {:.1}s{} ({})\n",
        took.as_secs_f64(),
        cpu_text(cpu),
        binary.executable.display()
    );
    match output {
        Ok(output) => {
            block.push_str(&String::from_utf8_lossy(&output.stdout));
            block.push_str(&String::from_utf8_lossy(&output.stderr));
            if !output.status.success() {
                block.push_str(&format!("\n{label} exited with {}\n", output.status));
            }
        }
        Err(error) => block.push_str(&format!("cannot start it: {error}\n")),
    }
    eprint!("{block}");
    Outcome {
        label,
        passed,
        took,
        cpu,
        failures,
    }
}

/// `, 123.4 CPU-s` for a binary whose CPU time is known.
fn cpu_text(cpu: Option<CpuTime>) -> String {
    cpu.map(|cpu| format!(", {cpu}")).unwrap_or_default()
}

/// The most lines of a failing binary's recap.
const RECAP_LINES: usize = 150;

/// A failing binary's own account of its failures, for the end of the step, where a
/// log cut to its tail still shows it: libtest's `failures:` section (each failed test's
/// captured output and panic), or without one (a crash, a signal) the output's tail.
/// Either is cut to its last [`RECAP_LINES`] lines.
fn failure_recap(stdout: &str, stderr: &str) -> String {
    let section = stdout
        .find("\nfailures:\n")
        .map(|start| &stdout[start + 1..])
        .map(|section| format!("{section}{stderr}"))
        .unwrap_or_else(|| format!("{stdout}{stderr}"));
    let lines: Vec<&str> = section.lines().collect();
    let kept = &lines[lines.len().saturating_sub(RECAP_LINES)..];
    let cut = if kept.len() < lines.len() {
        format!("[the first {} lines left out]\n", lines.len() - kept.len())
    } else {
        String::new()
    };
    format!("{cut}{}", kept.join("\n"))
}

fn report(outcomes: &[Outcome]) {
    let mut by_time: Vec<&Outcome> = outcomes.iter().collect();
    by_time.sort_by_key(|outcome| std::cmp::Reverse(outcome.took));
    eprintln!("\n    test binaries, longest first:");
    for outcome in by_time {
        let verdict = if outcome.passed { "ok" } else { "FAILED" };
        let cpu = outcome
            .cpu
            .map(|cpu| cpu.to_string())
            .unwrap_or_else(|| "-".to_owned());
        eprintln!(
            "    {:>8.1}s {cpu:>24}  {verdict:<6} {}",
            outcome.took.as_secs_f64(),
            outcome.label
        );
    }
    let total: Duration = outcomes
        .iter()
        .filter_map(|outcome| outcome.cpu.map(CpuTime::duration))
        .sum();
    eprintln!(
        "    {:>24.1} CPU-s in all test binaries",
        total.as_secs_f64()
    );
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use pretty_assertions::assert_eq;
    use rstest::rstest;

    use super::*;

    fn binary(target: &str) -> TestBinary {
        TestBinary {
            package: "p".to_owned(),
            target: target.to_owned(),
            executable: PathBuf::from(target),
            package_dir: PathBuf::new(),
        }
    }

    fn artifact(package_id: &str, target: &str, test: bool, executable: Option<&str>) -> String {
        serde_json::json!({
            "reason": "compiler-artifact",
            "package_id": package_id,
            "manifest_path": "/w/operators/hdfs/Cargo.toml",
            "target": {"name": target, "kind": ["test"]},
            "profile": {"test": test},
            "executable": executable,
        })
        .to_string()
    }

    #[rstest]
    #[case::unknown(None, "")]
    #[case::known(Some(CpuTime::Whole(Duration::from_millis(12_345))), ", 12.3 CPU-s")]
    fn the_cpu_time_is_shown_when_known(#[case] cpu: Option<CpuTime>, #[case] shown: &str) {
        assert_eq!(cpu_text(cpu), shown);
    }

    #[test]
    fn only_built_test_executables_are_run() {
        let messages = [
            artifact(
                "path+file:///w/operators/hdfs#hdfs-operator@0.1.0",
                "real_hdfs",
                true,
                Some("/t/real_hdfs-1"),
            ),
            artifact("registry+https://x#serde@1.0.0", "serde", false, None),
            artifact(
                "path+file:///w/operators/hdfs#hdfs-operator@0.1.0",
                "hdfs_operator",
                false,
                Some("/t/hdfs-operator"),
            ),
            r#"{"reason":"build-finished","success":true}"#.to_owned(),
            "   Compiling noise".to_owned(),
        ]
        .join("\n");
        assert_eq!(
            test_binaries(&messages).unwrap(),
            vec![TestBinary {
                package: "hdfs-operator".to_owned(),
                target: "real_hdfs".to_owned(),
                executable: PathBuf::from("/t/real_hdfs-1"),
                package_dir: PathBuf::from("/w/operators/hdfs"),
            }]
        );
    }

    #[rstest]
    #[case::name_and_version("path+file:///w/operators/hdfs#hdfs-operator@0.1.0", "hdfs-operator")]
    #[case::directory_is_the_name("path+file:///w/crates/strata-status#0.1.0", "strata-status")]
    fn the_package_name_comes_from_its_id(#[case] package_id: &str, #[case] name: &str) {
        assert_eq!(package_name(package_id), name);
    }

    #[test]
    fn the_longest_binaries_start_first_and_the_rest_keep_cargos_order() {
        let queued: Vec<String> = queue(vec![
            binary("api"),
            binary("real_trino"),
            binary("helm"),
            binary("real_hdfs"),
        ])
        .into_iter()
        .map(|binary| binary.target)
        .collect();
        assert_eq!(queued, ["real_hdfs", "real_trino", "api", "helm"]);
    }

    #[test]
    fn two_real_suites_of_one_product_never_run_at_once() {
        let queue = Queue::new(vec![
            binary("real_superset"),
            binary("real_superset_celery"),
            binary("api"),
        ]);
        let superset = queue.take().unwrap();
        assert_eq!(superset.target, "real_superset");
        assert_eq!(
            queue.take().unwrap().target,
            "api",
            "the other lane skips real_superset_celery while real_superset runs"
        );
        queue.done(&superset);
        assert_eq!(queue.take().unwrap().target, "real_superset_celery");
    }

    #[test]
    fn zookeepers_suite_runs_beside_a_superset_one() {
        let queue = Queue::new(vec![
            binary("real_zookeeper"),
            binary("real_superset"),
            binary("api"),
        ]);
        assert_eq!(queue.take().unwrap().target, "real_zookeeper");
        assert_eq!(queue.take().unwrap().target, "real_superset");
    }

    #[test]
    fn trino_waits_until_nothing_else_runs_and_runs_alone() {
        let queue = Queue::new(vec![binary("api"), binary("real_trino"), binary("helm")]);
        let api = queue.take().unwrap();
        assert_eq!(
            queue.take().unwrap().target,
            "helm",
            "real_trino is skipped while api runs"
        );
        queue.done(&api);
        queue.done(&binary("helm"));
        assert_eq!(queue.take().unwrap().target, "real_trino");
        let state = queue.state.lock().unwrap();
        assert!(state.alone_running && state.running == 1);
    }

    #[rstest]
    #[case::zookeepers_suite(binary("real_zookeeper"), &[], Some("--test-threads=3"))]
    #[case::set_by_the_caller(binary("real_zookeeper"), &["--test-threads=1"], None)]
    #[case::trinos_suite(binary("real_trino"), &[], Some("--test-threads=3"))]
    #[case::any_other_binary(binary("real_hdfs"), &[], None)]
    fn some_suites_run_more_tests_at_once(
        #[case] suite: TestBinary,
        #[case] extra: &[&str],
        #[case] expected: Option<&str>,
    ) {
        let extra: Vec<String> = extra.iter().map(|word| (*word).to_owned()).collect();
        assert_eq!(test_threads(&suite, &extra).as_deref(), expected);
    }

    #[rstest]
    #[case::unset(None, &[])]
    #[case::blank(Some("  "), &[])]
    #[case::report_time(Some("-Z unstable-options  --report-time"), &["-Z", "unstable-options", "--report-time"])]
    fn extra_arguments_are_the_variables_words(
        #[case] value: Option<&str>,
        #[case] expected: &[&str],
    ) {
        assert_eq!(extra_arguments(value), expected);
    }

    #[rstest]
    #[case::unset(None, Some(2))]
    #[case::empty(Some(""), Some(2))]
    #[case::one_by_one(Some("1"), Some(1))]
    #[case::three(Some("3"), Some(3))]
    #[case::zero_is_refused(Some("0"), None)]
    #[case::words_are_refused(Some("two"), None)]
    fn the_lane_count(#[case] value: Option<&str>, #[case] lanes: Option<usize>) {
        assert_eq!(lanes_from(value).ok(), lanes);
    }

    #[rstest]
    #[case::libtests_failures_section(
        "running 2 tests\ntest a ... ok\ntest b ... FAILED\n\nfailures:\n\n---- b stdout ----\nthread 'b' panicked at x.rs:1:1:\nno 200\n\nfailures:\n    b\n\ntest result: FAILED. 1 passed; 1 failed\n",
        "",
        "failures:\n\n---- b stdout ----\nthread 'b' panicked at x.rs:1:1:\nno 200\n\nfailures:\n    b\n\ntest result: FAILED. 1 passed; 1 failed"
    )]
    #[case::a_crash_keeps_both_streams(
        "running 1 test\n",
        "error: test failed, to rerun pass `--test x`\nSIGSEGV\n",
        "running 1 test\nerror: test failed, to rerun pass `--test x`\nSIGSEGV"
    )]
    fn a_failing_binarys_recap_is_its_failures(
        #[case] stdout: &str,
        #[case] stderr: &str,
        #[case] recap: &str,
    ) {
        assert_eq!(failure_recap(stdout, stderr), recap);
    }

    #[test]
    fn a_long_recap_keeps_its_last_lines() {
        let stdout: String = (0..400).map(|line| format!("line {line}\n")).collect();
        let recap = failure_recap(&stdout, "");
        assert!(
            recap.starts_with("[the first 250 lines left out]\nline 250\n"),
            "{recap}"
        );
        assert!(recap.ends_with("line 399"), "{recap}");
    }
}
