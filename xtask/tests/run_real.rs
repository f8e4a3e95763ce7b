//! `cargo xtask run -f`, for real: a ZooKeeper server and a ZNode from a manifest, the
//! server run by the pod runner as the ZooKeeper operator renders it, its port forwarded
//! to loopback, the ZNode's path created as the operator would, and everything stopped
//! on Ctrl-C. Needs root and the ZooKeeper image directory; `cargo xtask test` runs it.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
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

fn four_letter_word(address: &str, word: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(address)?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.write_all(word.as_bytes())?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer)
}

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
    let client = seen
        .iter()
        .find_map(|line| line.strip_prefix(&format!("forward {pod} 2181 ")))
        .unwrap_or_else(|| panic!("no forward of port 2181: {seen:#?}"))
        .to_owned();
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

    assert!(
        four_letter_word(&client, "srvr")
            .unwrap()
            .contains("Mode: standalone")
    );
    // The ZNode's path, created as the operator would, is there through the forward.
    let mut found = false;
    for _ in 0..60 {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        found = runtime.block_on(async {
            let zookeeper = zookeeper_operator::znode_client::ZnodeClient::connect(
                &client,
                Duration::from_secs(5),
            )
            .await
            .ok()?;
            zookeeper
                .exists("/znode-strata-run-zookeeperznode-hdfs-znode")
                .await
                .ok()
        }) == Some(true);
        if found {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(found, "the ZNode's path was not created");

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
        four_letter_word(&client, "ruok").is_err(),
        "the forward outlived the run"
    );
}
