//! `cargo xtask run -f`, for real: a ZooKeeper server and a ZNode from a manifest, the
//! server run by the pod runner as the ZooKeeper operator renders it (TLS on, with the
//! certificates `run` makes in the operator's place), its ports forwarded to loopback,
//! the ZNode's path created as the operator would, and everything stopped on Ctrl-C. Needs root and the ZooKeeper image directory; `cargo xtask test` runs it.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const MANIFEST: &str = "\
apiVersion: zookeeper.strata.dev/v1alpha1
kind: ZookeeperCluster
metadata:
  name: simple-zk
  namespace: default
spec:
  servers:
    roleGroups:
      default:
        replicas: 1
---
apiVersion: zookeeper.strata.dev/v1alpha1
kind: ZookeeperZnode
metadata:
  name: hdfs-znode
  namespace: default
spec:
  clusterRef:
    name: simple-zk
";

#[test]
#[ignore = "needs root and the ZooKeeper image directory; run by cargo xtask test"]
fn run_serves_a_manifest_forwards_its_ports_and_stops_on_ctrl_c() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("zookeeper.yaml");
    std::fs::write(&manifest, MANIFEST).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["run", "-f"])
        .arg(&manifest)
        .stdout(Stdio::piped())
        .spawn()
        .expect("cargo xtask run starts");
    let (lines, received) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let pod = "simple-zk-server-default-0";
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut seen = Vec::new();
    while !seen.iter().any(|line| *line == format!("ready {pod}")) {
        let remaining = deadline.saturating_duration_since(Instant::now());
        match received.recv_timeout(remaining) {
            Ok(line) => seen.push(line),
            Err(_) => {
                let _ = child.kill();
                panic!("no `ready {pod}` within 180 s; printed: {seen:#?}");
            }
        }
    }
    // TLS is on by default: the secure client port is the one published, and the server
    // turned Ready (its probe asks `srvr` inside the pod) with the certificates `run`
    // made in the operator's place.
    let secure = seen
        .iter()
        .find_map(|line| line.strip_prefix(&format!("forward {pod} 2282 ")))
        .unwrap_or_else(|| panic!("no forward of port 2282: {seen:#?}"))
        .to_owned();
    assert!(
        !seen
            .iter()
            .any(|line| line.starts_with(&format!("forward {pod} 2181 "))),
        "the plaintext port listens inside the pod only: {seen:#?}"
    );
    assert!(
        seen.iter()
            .any(|line| line.starts_with(&format!("forward {pod} 2888 127.0.0.1:"))),
        "{seen:#?}"
    );
    assert!(
        seen.iter()
            .any(|line| line == "ignored PodDisruptionBudget/simple-zk-server"),
        "{seen:#?}"
    );
    // The ZNode's path, created as the operator would, through the server.
    let created = format!("znode {pod} /znode-strata-run-zookeeperznode-hdfs-znode");
    while !seen.contains(&created) {
        let remaining = deadline.saturating_duration_since(Instant::now());
        match received.recv_timeout(remaining) {
            Ok(line) => seen.push(line),
            Err(_) => {
                let _ = child.kill();
                panic!("no `{created}`; printed: {seen:#?}");
            }
        }
    }

    let interrupted = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupted.success());
    let stop_deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > stop_deadline {
            let _ = child.kill();
            panic!("cargo xtask run did not stop within 120 s of Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(status.success(), "{status}");
    assert!(
        TcpStream::connect(&secure).is_err(),
        "the forward outlived the run"
    );
}
