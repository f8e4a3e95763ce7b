//! The namenode's init script and the ZKFC start script, as they ship, run with `bash`
//! against a fake `hdfs` first on `PATH`. The fake keeps Hadoop 3.4's exit codes and its
//! effects on the name dir (see `FAKE_HDFS`); each row of the table is one line of the
//! specification in the scripts' headers.
//!
//! Every row also checks the safety rules: no call ever passes `-force`, and `-format` only
//! ever runs on an empty name dir.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use pretty_assertions::assert_eq;
use rstest::rstest;

const FORMAT_NAMENODE: &str = include_str!("../src/scripts/format-namenode.sh");
const START_ZKFC: &str = include_str!("../src/scripts/start-zkfc.sh");

/// A fake `hdfs`. It records each call as `<state>\t<argv>` in `$FAKE_DIR/calls.log`, where
/// state is the name dir's before the call (`empty`, `data` or `formatted`), and takes each
/// exit code from `$FAKE_DIR/<queue>.codes` (one a line, consumed), else from
/// `$FAKE_DIR/<queue>.default`. Like Hadoop with `-nonInteractive` and
/// `dfs.reformat.disabled=true`, it refuses a name dir holding anything (bootstrapStandby 5,
/// format 1) without consuming a code, and like Hadoop's BootstrapStandby it writes VERSION
/// before it checks the edit logs, so exit 6 leaves a VERSION without an fsimage. A format
/// writes the `-clusterid` it is given; [`PARTIAL`] leaves its VERSION without an fsimage.
const FAKE_HDFS: &str = include_str!("fixtures/fake-hdfs.sh");

/// The code of a call a row does not expect: the scripts treat it as unexpected.
const UNEXPECTED: i32 = 97;
/// A `-format` that fails (exit 1) after writing `current/VERSION`, without an fsimage:
/// what Hadoop leaves when a journalnode fails while it formats the journals, or when
/// the pod is killed then.
const PARTIAL: i32 = 101;
/// A `-bootstrapStandby` that fails with a NullPointerException (exit 1): what Hadoop does
/// when the other namenode's name does not resolve.
const UNRESOLVED_PEER: i32 = 102;
/// The cluster ID a format gives: `CID-` and the HdfsCluster's uid.
const NEW_CLUSTER_ID: &str = "CID-new";
/// No run may take longer: a script stuck in a wait loop fails its row instead of hanging.
const BOUND: Duration = Duration::from_secs(5);

const BOOTSTRAP: &str = "bootstrap";
const FORMAT: &str = "format";
const FORMAT_ZK: &str = "formatZK";
const ZKFC: &str = "zkfc";

#[derive(Debug, Clone, Copy)]
enum Script {
    FormatNamenode,
    StartZkfc,
}

#[derive(Debug, Clone, Copy)]
enum Pod {
    /// The one pod allowed to format a new namespace.
    Formatter,
    Other,
}
use Pod::{Formatter, Other};

#[derive(Debug, Clone, Copy)]
enum NameDir {
    Absent,
    Empty,
    /// `current/VERSION` with this cluster ID, and an fsimage.
    Formatted(&'static str),
    /// `current/VERSION` with this cluster ID, and only an fsimage's `.md5`.
    VersionOnly(&'static str),
    /// A directory HDFS did not write, such as `lost+found`.
    Foreign(&'static str),
}
use NameDir::{Absent, Empty, Foreign, Formatted, VersionOnly};

/// The exit codes of one hdfs command: `queue` in order, then `then` for every later call.
#[derive(Debug, Clone, Copy)]
struct Codes {
    queue: &'static [i32],
    then: i32,
}

/// These codes in order; any further call is unexpected.
fn codes(queue: &'static [i32]) -> Codes {
    Codes {
        queue,
        then: UNEXPECTED,
    }
}

/// This code on every call.
fn always(code: i32) -> Codes {
    Codes {
        queue: &[],
        then: code,
    }
}

#[derive(Debug)]
struct Scenario {
    script: Script,
    pod: Pod,
    name_dir: NameDir,
    /// The cluster ID in the cluster's status (`Some("")`: an empty file).
    recorded: Option<&'static str>,
    /// The cluster ID that a reachable namenode serves to bootstrapStandby.
    remote: &'static str,
    bootstrap: Codes,
    format: Codes,
    format_zk: Codes,
}

impl Scenario {
    fn bootstrap(self, bootstrap: Codes) -> Self {
        Self { bootstrap, ..self }
    }

    fn format(self, format: Codes) -> Self {
        Self { format, ..self }
    }

    fn remote(self, remote: &'static str) -> Self {
        Self { remote, ..self }
    }
}

/// The namenode's init container on `pod`.
fn namenode(pod: Pod, name_dir: NameDir, recorded: Option<&'static str>) -> Scenario {
    Scenario {
        script: Script::FormatNamenode,
        pod,
        name_dir,
        recorded,
        remote: "CID-existing",
        bootstrap: always(UNEXPECTED),
        format: always(UNEXPECTED),
        format_zk: always(UNEXPECTED),
    }
}

/// The ZKFC sidecar, with these `-formatZK` codes.
fn zkfc(format_zk: Codes) -> Scenario {
    Scenario {
        script: Script::StartZkfc,
        format_zk,
        ..namenode(Formatter, Absent, None)
    }
}

#[derive(Debug)]
struct Expect {
    exit: i32,
    /// The first line of the termination log; `None`: no termination log.
    reason: Option<&'static str>,
    /// Every hdfs call, in order.
    calls: &'static [&'static str],
    formats: usize,
    /// The cluster ID in `current/VERSION` afterwards.
    cluster_id: Option<&'static str>,
}

/// What a run left behind, compared as a whole so a failure shows every difference.
#[derive(Debug, PartialEq)]
struct Outcome {
    exit: i32,
    reason: Option<String>,
    calls: Vec<String>,
    formats: usize,
    cluster_id: Option<String>,
}

impl From<&Expect> for Outcome {
    fn from(expect: &Expect) -> Self {
        Self {
            exit: expect.exit,
            reason: expect.reason.map(str::to_owned),
            calls: expect.calls.iter().map(|call| (*call).to_owned()).collect(),
            formats: expect.formats,
            cluster_id: expect.cluster_id.map(str::to_owned),
        }
    }
}

#[rstest]
// format-namenode.sh: a new cluster.
#[case::fresh_cluster_the_formatter_formats_once(
    namenode(Formatter, Absent, None).bootstrap(codes(&[2])).format(codes(&[0])),
    Expect { exit: 0, reason: None, calls: &[BOOTSTRAP, FORMAT], formats: 1, cluster_id: Some("CID-new") },
)]
#[case::fresh_cluster_another_namenode_waits_for_the_formatter(
    namenode(Other, Absent, None).bootstrap(codes(&[2, 2, 0])),
    Expect { exit: 0, reason: None, calls: &[BOOTSTRAP, BOOTSTRAP, BOOTSTRAP], formats: 0, cluster_id: Some("CID-existing") },
)]
#[case::an_empty_cluster_id_file_records_no_cluster_id(
    namenode(Formatter, Empty, Some("")).bootstrap(codes(&[2])).format(codes(&[0])),
    Expect { exit: 0, reason: None, calls: &[BOOTSTRAP, FORMAT], formats: 1, cluster_id: Some("CID-new") },
)]
#[case::format_exit_1_then_the_journalnodes_come_up(
    namenode(Formatter, Absent, None).bootstrap(always(2)).format(codes(&[1, 0])),
    Expect { exit: 0, reason: None, calls: &[BOOTSTRAP, FORMAT, BOOTSTRAP, FORMAT], formats: 2, cluster_id: Some("CID-new") },
)]
#[case::format_exit_1_on_every_attempt_stops_after_format_attempts(
    namenode(Formatter, Absent, None).bootstrap(always(2)).format(always(1)),
    Expect { exit: 1, reason: Some("FormatFailed"), calls: &[BOOTSTRAP, FORMAT, BOOTSTRAP, FORMAT, BOOTSTRAP, FORMAT], formats: 3, cluster_id: None },
)]
#[case::a_namenode_comes_up_with_the_namespace_between_format_attempts(
    namenode(Formatter, Absent, None).bootstrap(codes(&[2, 0])).format(codes(&[1])),
    Expect { exit: 0, reason: None, calls: &[BOOTSTRAP, FORMAT, BOOTSTRAP], formats: 1, cluster_id: Some("CID-existing") },
)]
// format-namenode.sh: a formatted name dir is never touched.
#[case::formatted_name_dir_starts_without_any_hdfs_call(
    namenode(Formatter, Formatted("CID-existing"), Some("CID-existing")),
    Expect { exit: 0, reason: None, calls: &[], formats: 0, cluster_id: Some("CID-existing") },
)]
#[case::formatted_before_the_status_recorded_its_cluster_id(
    namenode(Formatter, Formatted("CID-new"), None),
    Expect { exit: 0, reason: None, calls: &[], formats: 0, cluster_id: Some("CID-new") },
)]
#[case::version_of_another_cluster_without_an_fsimage_is_a_partial_format_left_alone(
    namenode(Formatter, VersionOnly("CID-other"), None),
    Expect { exit: 1, reason: Some("PartialFormat"), calls: &[], formats: 0, cluster_id: Some("CID-other") },
)]
// format-namenode.sh: an interrupted first format or bootstrap of this cluster is redone.
#[case::an_interrupted_first_format_of_this_cluster_is_removed_and_redone(
    namenode(Formatter, VersionOnly(NEW_CLUSTER_ID), None).bootstrap(codes(&[2])).format(codes(&[0])),
    Expect { exit: 0, reason: None, calls: &[BOOTSTRAP, FORMAT], formats: 1, cluster_id: Some(NEW_CLUSTER_ID) },
)]
#[case::a_format_that_fails_after_writing_version_is_retried_on_a_clean_dir(
    namenode(Formatter, Absent, None).bootstrap(always(2)).format(codes(&[PARTIAL, 0])),
    Expect { exit: 0, reason: None, calls: &[BOOTSTRAP, FORMAT, BOOTSTRAP, FORMAT], formats: 2, cluster_id: Some(NEW_CLUSTER_ID) },
)]
#[case::partial_formats_on_every_attempt_stop_after_format_attempts_with_a_clean_dir(
    namenode(Formatter, Absent, None).bootstrap(always(2)).format(always(PARTIAL)),
    Expect { exit: 1, reason: Some("FormatFailed"), calls: &[BOOTSTRAP, FORMAT, BOOTSTRAP, FORMAT, BOOTSTRAP, FORMAT], formats: 3, cluster_id: None },
)]
#[case::an_interrupted_bootstrap_of_the_recorded_namespace_is_removed_and_redone(
    namenode(Other, VersionOnly("CID-existing"), Some("CID-existing")).bootstrap(codes(&[0])),
    Expect { exit: 0, reason: None, calls: &[BOOTSTRAP], formats: 0, cluster_id: Some("CID-existing") },
)]
#[case::formatted_name_dir_of_another_cluster_is_a_cluster_id_mismatch(
    namenode(Other, Formatted("CID-other"), Some("CID-existing")),
    Expect { exit: 1, reason: Some("ClusterIdMismatch"), calls: &[], formats: 0, cluster_id: Some("CID-other") },
)]
#[case::unknown_content_in_the_name_dir_is_left_alone(
    namenode(Formatter, Foreign("lost+found"), None),
    Expect { exit: 1, reason: Some("UnknownNameDirContent"), calls: &[], formats: 0, cluster_id: None },
)]
// format-namenode.sh: an empty name dir of an existing cluster is bootstrapped, never formatted.
#[case::lost_volume_with_the_cluster_id_recorded_the_formatter_bootstraps(
    namenode(Formatter, Empty, Some("CID-existing")).bootstrap(codes(&[2, 0])),
    Expect { exit: 0, reason: None, calls: &[BOOTSTRAP, BOOTSTRAP], formats: 0, cluster_id: Some("CID-existing") },
)]
#[case::lost_volume_and_lost_status_the_formatter_bootstraps_from_the_namenode_that_has_the_namespace(
    namenode(Formatter, Absent, None).bootstrap(codes(&[0])),
    Expect { exit: 0, reason: None, calls: &[BOOTSTRAP], formats: 0, cluster_id: Some("CID-existing") },
)]
#[case::bootstrapped_namespace_other_than_the_recorded_one_is_a_cluster_id_mismatch(
    namenode(Other, Absent, Some("CID-existing")).bootstrap(codes(&[0])).remote("CID-other"),
    Expect { exit: 1, reason: Some("ClusterIdMismatch"), calls: &[BOOTSTRAP], formats: 0, cluster_id: Some("CID-other") },
)]
#[case::edit_logs_unavailable_the_version_it_left_is_cleared_and_bootstrap_retried(
    namenode(Other, Absent, Some("CID-existing")).bootstrap(codes(&[6, 6, 0])),
    Expect { exit: 0, reason: None, calls: &[BOOTSTRAP, BOOTSTRAP, BOOTSTRAP], formats: 0, cluster_id: Some("CID-existing") },
)]
#[case::edit_logs_unavailable_on_the_formatter_prove_a_namespace_so_it_waits_instead_of_formatting(
    namenode(Formatter, Absent, None).bootstrap(codes(&[6, 2, 0])),
    Expect { exit: 0, reason: None, calls: &[BOOTSTRAP, BOOTSTRAP, BOOTSTRAP], formats: 0, cluster_id: Some("CID-existing") },
)]
#[case::layout_mismatch_stops_the_formatter_before_any_format(
    namenode(Formatter, Absent, None).bootstrap(codes(&[3])),
    Expect { exit: 1, reason: Some("LayoutMismatch"), calls: &[BOOTSTRAP], formats: 0, cluster_id: None },
)]
#[case::layout_mismatch_stops_a_waiting_namenode(
    namenode(Other, Absent, Some("CID-existing")).bootstrap(codes(&[2, 3])),
    Expect { exit: 1, reason: Some("LayoutMismatch"), calls: &[BOOTSTRAP, BOOTSTRAP], formats: 0, cluster_id: None },
)]
#[case::an_unresolvable_peer_is_waited_for_like_no_namenode_reachable(
    namenode(Other, Absent, Some("CID-existing")).bootstrap(codes(&[UNRESOLVED_PEER, UNRESOLVED_PEER, UNRESOLVED_PEER, 0])),
    Expect { exit: 0, reason: None, calls: &[BOOTSTRAP, BOOTSTRAP, BOOTSTRAP, BOOTSTRAP], formats: 0, cluster_id: Some("CID-existing") },
)]
#[case::unexpected_bootstrap_codes_stop_after_bootstrap_attempts(
    namenode(Other, Absent, None).bootstrap(always(1)),
    Expect { exit: 1, reason: Some("BootstrapFailed"), calls: &[BOOTSTRAP, BOOTSTRAP, BOOTSTRAP], formats: 0, cluster_id: None },
)]
// start-zkfc.sh
#[case::zkfc_creates_the_znode_then_runs(
    zkfc(codes(&[0])),
    Expect { exit: 0, reason: None, calls: &[FORMAT_ZK, ZKFC], formats: 0, cluster_id: None },
)]
#[case::zkfc_finds_the_znode_then_runs(
    zkfc(codes(&[2])),
    Expect { exit: 0, reason: None, calls: &[FORMAT_ZK, ZKFC], formats: 0, cluster_id: None },
)]
#[case::zkfc_waits_for_zookeeper(
    zkfc(codes(&[6, 6, 0])),
    Expect { exit: 0, reason: None, calls: &[FORMAT_ZK, FORMAT_ZK, FORMAT_ZK, ZKFC], formats: 0, cluster_id: None },
)]
#[case::zkfc_without_automatic_failover_stops_and_never_runs(
    zkfc(codes(&[5])),
    Expect { exit: 1, reason: Some("AutomaticFailoverDisabled"), calls: &[FORMAT_ZK], formats: 0, cluster_id: None },
)]
#[case::zkfc_unexpected_codes_stop_after_format_attempts(
    zkfc(always(1)),
    Expect { exit: 1, reason: Some("ZkfcFormatFailed"), calls: &[FORMAT_ZK, FORMAT_ZK, FORMAT_ZK], formats: 0, cluster_id: None },
)]
fn scripts_follow_the_specification(#[case] scenario: Scenario, #[case] expect: Expect) {
    let run = Run::new(&scenario);

    assert_eq!(run.outcome(), Outcome::from(&expect), "{}", run.output);
    for call in &run.calls {
        assert!(
            !call.argv.contains("-force"),
            "an hdfs call passed -force: {call:?}"
        );
        if call.is_format() {
            assert_ne!(
                call.state, "formatted",
                "formatted a formatted name dir: {call:?}"
            );
            assert_eq!(
                call.state, "empty",
                "formatted a name dir holding data: {call:?}"
            );
        }
    }
    if let Some(log) = &run.termination_log {
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 2, "the termination log has two lines: {log:?}");
        let message = lines[1];
        assert!(
            !message.is_empty() && message.len() < 1000,
            "the message is one line under 1000 characters: {message:?}"
        );
        assert!(
            run.output.contains(message),
            "the message also goes to stderr:\n{}",
            run.output
        );
    }
}

/// One hdfs call, as the fake recorded it.
#[derive(Debug)]
struct Call {
    /// The name dir before the call: `empty`, `data` or `formatted`.
    state: String,
    argv: String,
}

impl Call {
    fn is_format(&self) -> bool {
        self.argv.split_whitespace().any(|word| word == "-format")
    }

    /// The short name of a known call, else its whole argv.
    fn name(&self) -> String {
        match self.argv.as_str() {
            "namenode -bootstrapStandby -nonInteractive" => BOOTSTRAP,
            argv if argv.starts_with("namenode -format -nonInteractive -clusterid ") => FORMAT,
            "zkfc -formatZK -nonInteractive" => FORMAT_ZK,
            "zkfc" => ZKFC,
            other => other,
        }
        .to_owned()
    }
}

/// A finished run of one script in its own temporary directory.
#[derive(Debug)]
struct Run {
    exit: i32,
    /// stdout then stderr, for failure messages.
    output: String,
    calls: Vec<Call>,
    termination_log: Option<String>,
    cluster_id: Option<String>,
}

impl Run {
    fn new(scenario: &Scenario) -> Self {
        let temp = tempfile::tempdir().expect("tempdir");
        let root = temp.path();
        let bin = root.join("bin");
        let fake = root.join("fake");
        // The name dir is a subdirectory of the mounted volume.
        let volume = root.join("volume");
        let name_dir = volume.join("hdfs").join("name");
        for dir in [&bin, &fake, &volume] {
            fs::create_dir_all(dir).expect("create a directory");
        }
        strata_testing::executable::write(&bin.join("hdfs"), FAKE_HDFS);
        for (queue, codes) in [
            ("bootstrap", scenario.bootstrap),
            ("format", scenario.format),
            ("formatzk", scenario.format_zk),
        ] {
            let lines: String = codes.queue.iter().map(|code| format!("{code}\n")).collect();
            fs::write(fake.join(format!("{queue}.codes")), lines).expect("write a queue");
            fs::write(
                fake.join(format!("{queue}.default")),
                format!("{}\n", codes.then),
            )
            .expect("write a default code");
        }
        prepare_name_dir(&name_dir, scenario.name_dir);
        let cluster_id_file = root.join("cluster-id");
        if let Some(recorded) = scenario.recorded {
            let content = if recorded.is_empty() {
                String::new()
            } else {
                format!("{recorded}\n")
            };
            fs::write(&cluster_id_file, content).expect("write the cluster ID file");
        }
        let (script_name, script) = match scenario.script {
            Script::FormatNamenode => ("format-namenode.sh", FORMAT_NAMENODE),
            Script::StartZkfc => ("start-zkfc.sh", START_ZKFC),
        };
        let script_path = root.join(script_name);
        fs::write(&script_path, script).expect("write the script");
        let termination_log = root.join("termination-log");
        let pod_name = match scenario.pod {
            Formatter => "simple-hdfs-namenode-default-0",
            Other => "simple-hdfs-namenode-default-1",
        };
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_owned())
        );

        let mut command = Command::new("bash");
        command
            .arg(&script_path)
            .env_clear()
            .env("PATH", path)
            .env("NAME_DIR", &name_dir)
            .env("POD_NAME", pod_name)
            .env("FORMATTER_POD", "simple-hdfs-namenode-default-0")
            .env("NEW_CLUSTER_ID", NEW_CLUSTER_ID)
            .env("JOURNAL_NODES", "jn-0.jn jn-1.jn jn-2.jn")
            .env("CLUSTER_ID_FILE", &cluster_id_file)
            .env("TERMINATION_LOG", &termination_log)
            .env("RETRY_SECONDS", "0")
            .env("FORMAT_ATTEMPTS", "3")
            .env("BOOTSTRAP_ATTEMPTS", "3")
            .env("FAKE_DIR", &fake)
            .env("FAKE_REMOTE_CLUSTER_ID", scenario.remote);
        let (exit, output) = run_bounded(command);

        let calls = fs::read_to_string(fake.join("calls.log"))
            .unwrap_or_default()
            .lines()
            .map(|line| {
                let (state, argv) = line.split_once('\t').expect("state\\targv");
                Call {
                    state: state.to_owned(),
                    argv: argv.to_owned(),
                }
            })
            .collect();
        let cluster_id = fs::read_to_string(name_dir.join("current").join("VERSION"))
            .ok()
            .and_then(|version| {
                version
                    .lines()
                    .find_map(|line| line.strip_prefix("clusterID="))
                    .map(str::to_owned)
            });
        Self {
            exit,
            output,
            calls,
            termination_log: fs::read_to_string(&termination_log).ok(),
            cluster_id,
        }
    }

    fn outcome(&self) -> Outcome {
        Outcome {
            exit: self.exit,
            reason: self
                .termination_log
                .as_ref()
                .and_then(|log| log.lines().next())
                .map(str::to_owned),
            calls: self.calls.iter().map(Call::name).collect(),
            formats: self.calls.iter().filter(|call| call.is_format()).count(),
            cluster_id: self.cluster_id.clone(),
        }
    }
}

/// A name dir as the row describes it.
fn prepare_name_dir(name_dir: &Path, state: NameDir) {
    let current = name_dir.join("current");
    let version = |cluster_id: &str| {
        fs::create_dir_all(&current).expect("create current/");
        fs::write(
            current.join("VERSION"),
            format!("namespaceID=1\nclusterID={cluster_id}\ncTime=0\nstorageType=NAME_NODE\nlayoutVersion=-67\n"),
        )
        .expect("write VERSION");
        fs::write(current.join("seen_txid"), "42\n").expect("write seen_txid");
        fs::write(current.join("fsimage_0000000000000000042.md5"), "").expect("write an md5");
    };
    match state {
        Absent => {}
        Empty => fs::create_dir_all(name_dir).expect("create the name dir"),
        Formatted(cluster_id) => {
            version(cluster_id);
            fs::write(current.join("fsimage_0000000000000000042"), "").expect("write an fsimage");
        }
        VersionOnly(cluster_id) => version(cluster_id),
        Foreign(entry) => fs::create_dir_all(name_dir.join(entry)).expect("create an entry"),
    }
}

/// Runs `command` within `BOUND` (its whole process group is stopped if it overruns).
/// Returns the exit code and the output.
fn run_bounded(mut command: Command) -> (i32, String) {
    match strata_testing::process::run_bounded(
        &mut command,
        "the script",
        BOUND,
        strata_testing::process::Stop::Group,
    ) {
        Ok(finished) => (
            finished.status.code().unwrap_or(-1),
            format!("{}{}", finished.stdout, finished.stderr),
        ),
        Err(error) => panic!("a wait loop that never ends? {error}"),
    }
}
