//! The real operator binary stops on SIGTERM within its shutdown bound even when the API
//! server is unreachable, and its log names the server it cannot reach.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::io::Read;
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use strata_operator::cli::SHUTDOWN_BOUND;

/// A kubeconfig for `server`, with a token so no credential plugin is needed.
fn kubeconfig(server: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: unreachable
  cluster:
    server: {server}
contexts:
- name: unreachable
  context: {{cluster: unreachable, user: operator}}
current-context: unreachable
users:
- name: operator
  user: {{token: test-token}}
"
    )
}

#[test]
fn sigterm_ends_the_operator_while_the_api_server_is_unreachable() {
    // A port that was free a moment ago: nothing answers there.
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free port");
    let server = format!("https://127.0.0.1:{port}");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("kubeconfig");
    std::fs::write(&config, kubeconfig(&server)).expect("write kubeconfig");

    let mut child = Command::new(env!("CARGO_BIN_EXE_zookeeper-operator"))
        .args(["run", "--http-address", "127.0.0.1:0"])
        .env("KUBECONFIG", &config)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the operator");
    std::thread::sleep(Duration::from_secs(3));

    let signalled = Instant::now();
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("send SIGTERM");
    assert!(killed.success());
    let deadline = SHUTDOWN_BOUND + Duration::from_secs(5);
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll the operator") {
            break Some(status);
        }
        if signalled.elapsed() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stopped_after = signalled.elapsed();
    if status.is_none() {
        // Never leave the process behind, whatever the assertion says.
        let _ = child.kill();
        let _ = child.wait();
    }
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stdout.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    assert!(
        status.is_some(),
        "the operator did not stop within {deadline:?} of SIGTERM:\n{stderr}"
    );
    eprintln!("the operator stopped {stopped_after:?} after SIGTERM");
    assert!(
        stderr.contains(&format!("127.0.0.1:{port}")),
        "the log names the unreachable server {server}:\n{stderr}"
    );
}

#[test]
fn an_invalid_cluster_domain_stops_run_with_a_message_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("kubeconfig");
    std::fs::write(&config, kubeconfig("https://127.0.0.1:1")).expect("write kubeconfig");
    let output = Command::new(env!("CARGO_BIN_EXE_zookeeper-operator"))
        .args(["run", "--http-address", "127.0.0.1:0"])
        .args(["--cluster-domain", "Not_A.Domain"])
        .env("KUBECONFIG", &config)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .expect("run the operator");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("--cluster-domain \"Not_A.Domain\""),
        "{stderr}"
    );
}
