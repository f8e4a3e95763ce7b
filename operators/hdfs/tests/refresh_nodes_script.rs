//! The refresh-nodes sidecar against a fake `hdfs`: it has the namenode re-read the
//! exclude list at start, retries while the namenode is not up, and again exactly when
//! the list changes; and it starts a new edit log segment once per request of the
//! operator, retrying while the namenode refuses (a standby).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;

const SCRIPT: &str = include_str!("../src/scripts/refresh-nodes.sh");

/// A fake `hdfs` that records its arguments and exits with the next code of `codes`
/// (then 0); `dfs` commands take theirs from `dfs-codes` when it exists. Like Hadoop's client it logs log4j's warnings first, and a failed `-ls`
/// says the path is missing, as Hadoop's does.
const FAKE_HDFS: &str = r#"#!/usr/bin/env bash
printf '%s\n' "$*" >>"$FAKE_DIR/calls"
echo "log4j:WARN No appenders could be found for logger (org.apache.hadoop.util.Shell)." >&2
codes="$FAKE_DIR/codes"
if [[ $1 == dfs && -e "$FAKE_DIR/dfs-codes" ]]; then
    codes="$FAKE_DIR/dfs-codes"
fi
code=0
if [[ -s $codes ]]; then
    code=$(head -n 1 "$codes")
    sed -i 1d "$codes"
fi
if ((code == 1)) && [[ $* == *" -ls "* ]]; then
    echo "ls: \`${!#}': No such file or directory" >&2
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
    wait_for_calls_of(dir, count, calls)
}

/// Waits until `read` lists `count` calls of the script in `dir`; fails with what it
/// saw and the script's errors after 10 s.
fn wait_for_calls_of(dir: &Path, count: usize, read: fn(&Path) -> Vec<String>) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let calls = read(dir);
        if calls.len() >= count {
            return calls;
        }
        assert!(
            Instant::now() < deadline,
            "{count} calls expected, saw {calls:?}; the script's errors: {}",
            std::fs::read_to_string(dir.join("stderr")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts the script in `dir` with a fake `hdfs` whose first exit codes are `codes`,
/// its namenode's HTTP server on a port where nothing listens (not active).
fn start(dir: &Path, codes: &str, roll_edits: Option<&Path>) -> Running {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let http = closed.local_addr().expect("its address");
    drop(closed);
    start_with_http(dir, codes, roll_edits, &http.to_string())
}

/// [`start`] with the namenode's HTTP server at `http`.
fn start_with_http(dir: &Path, codes: &str, roll_edits: Option<&Path>, http: &str) -> Running {
    start_with(dir, codes, None, roll_edits, http)
}

/// [`start_with_http`] with the exit codes of the `dfs` commands apart, so that a test
/// does not depend on when the loop first finds its namenode active.
fn start_with(
    dir: &Path,
    codes: &str,
    dfs_codes: Option<&str>,
    roll_edits: Option<&Path>,
    http: &str,
) -> Running {
    if let Some(dfs_codes) = dfs_codes {
        std::fs::write(dir.join("dfs-codes"), dfs_codes).expect("dfs codes");
    }
    let bin = dir.join("bin");
    std::fs::create_dir(&bin).expect("bin");
    strata_testing::executable::write(&bin.join("hdfs"), FAKE_HDFS);
    std::fs::write(dir.join("refresh-nodes.sh"), SCRIPT).expect("the script");
    let exclude = dir.join("datanodes");
    std::fs::write(&exclude, "").expect("an empty exclude list");
    std::fs::write(dir.join("codes"), codes).expect("codes");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new("bash");
    command
        .arg(dir.join("refresh-nodes.sh"))
        .env("PATH", path)
        .env("FAKE_DIR", dir)
        .env("EXCLUDE_FILE", &exclude)
        .env("CHECK_SECONDS", "0.05")
        .env("HTTP_ADDRESS", http)
        .stdout(std::fs::File::create(dir.join("stdout")).expect("a file for the script's output"))
        .stderr(std::fs::File::create(dir.join("stderr")).expect("a file for the script's errors"));
    if let Some(file) = roll_edits {
        command
            .env("ROLL_EDITS_FILE", file)
            .env("ROLL_EDITS_SECONDS", "2");
    }
    Running(command.spawn().expect("bash starts"))
}

#[test]
fn the_namenode_rereads_the_exclude_list_at_start_and_on_every_change() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let exclude = dir.path().join("datanodes");
    // The namenode is not up for the first call.
    let _script = start(dir.path(), "255\n", None);

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

#[test]
fn a_new_edit_log_segment_is_started_once_the_journalnodes_answer_and_again_while_asked() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let request = dir.path().join("roll-edits");
    std::fs::write(&request, "").expect("no request");
    // The exclude list at start, then a refused roll (a standby, or a namenode starting).
    let _script = start(dir.path(), "0\n255\n", Some(&request));
    let refresh = "dfsadmin -fs hdfs://127.0.0.1:8020 -refreshNodes";
    let roll = "dfsadmin -fs hdfs://127.0.0.1:8020 -rollEdits";
    assert_eq!(wait_for_calls(dir.path(), 1), [refresh]);

    // A journalnode that does not answer yet: no segment it would miss.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let closed_address = closed.local_addr().expect("its address");
    drop(closed);
    std::fs::write(&request, format!("{closed_address}\n")).expect("a request");
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(
        calls(dir.path()),
        [refresh],
        "no roll while a journalnode is down"
    );

    let journalnode = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let address = journalnode.local_addr().expect("its address");
    std::fs::write(&request, format!("{address}\n")).expect("a request");
    assert_eq!(wait_for_calls(dir.path(), 3), [refresh, roll, roll]);
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(calls(dir.path()).len(), 3, "one roll per request at first");
    // Still asked after ROLL_EDITS_SECONDS: the journalnode may have missed it.
    assert_eq!(wait_for_calls(dir.path(), 4)[3], roll);

    // Back in sync, then the same journalnode out of sync again: a new request.
    std::fs::write(&request, "").expect("no request");
    std::thread::sleep(Duration::from_millis(300));
    let before = calls(dir.path()).len();
    std::fs::write(&request, format!("{address}\n")).expect("the same request again");
    assert_eq!(wait_for_calls(dir.path(), before + 1)[before], roll);
}

/// Reliability review, I-5: whoever may write the namenode-state ConfigMap writes the
/// journalnode addresses the script probes; an address that is shell code stays an
/// address that does not answer.
#[test]
fn a_journalnode_address_that_is_shell_code_is_never_run() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let request = dir.path().join("roll-edits");
    let marker = dir.path().join("injected");
    std::fs::write(
        &request,
        format!("x;touch${{IFS}}{};:1\n", marker.display()),
    )
    .expect("a request");
    let _script = start(dir.path(), "0\n", Some(&request));
    let refresh = "dfsadmin -fs hdfs://127.0.0.1:8020 -refreshNodes";
    assert_eq!(wait_for_calls(dir.path(), 1), [refresh]);
    std::thread::sleep(Duration::from_millis(600));
    assert!(!marker.exists(), "the address ran as code");
    assert_eq!(calls(dir.path()), [refresh], "no roll: nothing answered");
}

/// Answers every request on a loopback port with `status`, as a namenode's `/isActive`
/// does (200 active, 405 standby); returns the address.
fn is_active_server(status: &'static str) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let address = listener.local_addr().expect("its address").to_string();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut request = [0_u8; 512];
                let _read = stream.read(&mut request);
                let _written = write!(stream, "HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n");
            });
        }
    });
    address
}

/// Issue 21, item 15: a new file system gets /tmp (1777) and /user (755), each only when
/// missing, from the active namenode's sidecar alone, retried while the namenode cannot
/// tell (safe mode).
#[test]
fn the_active_namenodes_sidecar_creates_tmp_and_user_once() {
    let refresh = "dfsadmin -fs hdfs://127.0.0.1:8020 -refreshNodes";
    let fs = "dfs -fs hdfs://127.0.0.1:8020";

    let standby = tempfile::tempdir().expect("a temporary directory");
    let _standby = start_with_http(
        standby.path(),
        "",
        None,
        &is_active_server("405 Method Not Allowed"),
    );
    assert_eq!(wait_for_calls(standby.path(), 1), [refresh]);
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(
        calls(standby.path()),
        [refresh],
        "a standby leaves them alone"
    );

    // The namenode cannot tell at first (exit 255: safe mode, a failover), then /tmp
    // is missing and /user present; dfs codes: -ls /tmp, -ls /tmp, -mkdir, -chmod,
    // -ls /user.
    let active = tempfile::tempdir().expect("a temporary directory");
    let _active = start_with(
        active.path(),
        "",
        Some("255\n1\n0\n0\n0\n"),
        None,
        &is_active_server("200 OK"),
    );
    let expected = [
        format!("{fs} -ls -d /tmp"),
        format!("{fs} -ls -d /tmp"),
        format!("{fs} -mkdir -p /tmp"),
        format!("{fs} -chmod 1777 /tmp"),
        format!("{fs} -ls -d /user"),
    ];
    assert_eq!(wait_for_dfs_calls(active.path(), 5), expected);
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(dfs_calls(active.path()).len(), 5, "once");
}

/// The `dfs` calls among [`calls`].
fn dfs_calls(dir: &Path) -> Vec<String> {
    calls(dir)
        .into_iter()
        .filter(|call| call.starts_with("dfs "))
        .collect()
}

fn wait_for_dfs_calls(dir: &Path, count: usize) -> Vec<String> {
    wait_for_calls_of(dir, count, dfs_calls)
}

/// A directory created whose mode could not be set (a failover between the two calls)
/// gets its mode at the next try, not never.
#[test]
fn a_mode_that_failed_is_set_at_the_next_try() {
    let fs = "dfs -fs hdfs://127.0.0.1:8020";
    let dir = tempfile::tempdir().expect("a temporary directory");
    // dfs codes: -ls /tmp (missing), -mkdir, -chmod (refused), -chmod, -ls /user.
    let _script = start_with(
        dir.path(),
        "",
        Some("1\n0\n255\n0\n0\n"),
        None,
        &is_active_server("200 OK"),
    );
    let expected = [
        format!("{fs} -ls -d /tmp"),
        format!("{fs} -mkdir -p /tmp"),
        format!("{fs} -chmod 1777 /tmp"),
        format!("{fs} -chmod 1777 /tmp"),
        format!("{fs} -ls -d /user"),
    ];
    assert_eq!(wait_for_dfs_calls(dir.path(), 5), expected);
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(dfs_calls(dir.path()).len(), 5, "then nothing more");
}
