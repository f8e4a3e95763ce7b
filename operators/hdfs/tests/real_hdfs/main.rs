//! HDFS on real Hadoop 3.4.2 (issue 23): the pods the operator builds for the example
//! (2 namenodes with ZKFC, 3 journalnodes, 3 datanodes) and a real ZooKeeper 3.9.5, run
//! as rendered by the pod runner. Needs root and the image directories of `cargo xtask
//! tools`; `cargo xtask test` runs it.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod format;
mod operator;
mod pod_user;
mod support;

use std::time::{Duration, Instant};

use hdfs_operator::controller::namenode_http::namenode_info;
use strata_operator::pod_security::PodSecurity;
use strata_pod_runner::manifest::apply_all;
use strata_pod_runner::openshift::RestrictedV2;
use support::{
    CLIENT_POD, NAMENODES, NAMESPACE, client, client_pod, example_cluster, ha_state, hdfs_objects,
    in_pod, log, runner_on, start_zookeeper, status, wait_for, wait_ready,
};

const JOURNALNODES: [&str; 3] = [
    "simple-hdfs-journalnode-default-0",
    "simple-hdfs-journalnode-default-1",
    "simple-hdfs-journalnode-default-2",
];
const DATANODES: [&str; 3] = [
    "simple-hdfs-datanode-default-0",
    "simple-hdfs-datanode-default-1",
    "simple-hdfs-datanode-default-2",
];

/// The files the client writes: name and size.
const FILES: [(&str, usize); 3] = [("small", 1_000), ("medium", 300_000), ("large", 3_000_000)];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the Hadoop and ZooKeeper image directories; run by cargo xtask test"]
async fn first_start_formats_once_fails_over_and_keeps_every_file() {
    // On OpenShift's restricted-v2, with an arbitrary uid in group 0 (issue 26, item 4):
    // the fixed uid is proven by the operated test and `pod_user`.
    let range = RestrictedV2::random();
    let mut runner = runner_on(Some(range));
    let zookeeper = start_zookeeper(&mut runner, PodSecurity::Openshift).await;
    let cluster = with_journal_sync_every_two_seconds(example_cluster());
    let mut objects = hdfs_objects(&cluster, &zookeeper);
    for object in &mut objects {
        PodSecurity::Openshift.apply_to_value(object);
    }
    objects.push(client_pod());
    apply_all(&mut runner, &objects).unwrap_or_else(|error| panic!("{error}"));
    let every_pod: Vec<&str> = NAMENODES
        .iter()
        .chain(&JOURNALNODES)
        .chain(&DATANODES)
        .copied()
        .collect();
    wait_ready(&runner, &every_pod, Duration::from_secs(420)).await;

    // Exactly one namenode formatted; the other bootstrapped from it.
    let format_logs = NAMENODES.map(|pod| log(&runner, pod, "format-namenode"));
    let formatted: Vec<_> = format_logs
        .iter()
        .filter(|log| log.contains("formatted a new namespace"))
        .collect();
    let bootstrapped: Vec<_> = format_logs
        .iter()
        .filter(|log| log.contains("bootstrapStandby copied the namespace"))
        .collect();
    assert_eq!(
        (formatted.len(), bootstrapped.len()),
        (1, 1),
        "{format_logs:#?}"
    );
    // ZKFC created the failover znode once; the other found it.
    let zkfc_logs = NAMENODES.map(|pod| log(&runner, pod, "zkfc"));
    let created = zkfc_logs
        .iter()
        .filter(|log| log.contains("created the failover znode"))
        .count();
    let found = zkfc_logs
        .iter()
        .filter(|log| log.contains("the failover znode already exists"))
        .count();
    assert_eq!((created, found), (1, 1), "{zkfc_logs:#?}");

    // One active, one standby, and the operator's own JMX reader finds one cluster ID,
    // the one both name directories hold.
    wait_for(
        &runner,
        Duration::from_secs(120),
        "one active namenode",
        |runner| {
            let mut states = NAMENODES.map(|pod| ha_state(runner, pod).unwrap_or_default());
            states.sort();
            states == ["active", "standby"]
        },
    )
    .await;
    let cluster_ids = NAMENODES.map(|pod| {
        let address = format!("{}:9870", runner.address(NAMESPACE, pod).unwrap());
        in_pod(&runner, CLIENT_POD, move || async move {
            namenode_info(&address, Duration::from_secs(5)).await
        })
        .and_then(|info| info.cluster_id)
        .expect("a cluster ID in NameNodeInfo")
    });
    assert_eq!(cluster_ids[0], cluster_ids[1]);
    assert!(cluster_ids[0].starts_with("CID-"), "{cluster_ids:?}");
    // Every metric the alerts read is served at /prom, by the active namenode with the
    // `hastate` label they select on.
    let mut served = String::new();
    for pod in NAMENODES {
        let address = format!("{}:9870", runner.address(NAMESPACE, pod).unwrap());
        let answer = in_pod(&runner, CLIENT_POD, move || async move {
            strata_testing::http::request(&address, "GET", "/prom", &[], None)
        })
        .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(answer.status, 200, "{pod}: {}", answer.body);
        served.push_str(&answer.body);
    }
    for group in hdfs_operator::build::alerts::rule_groups("namespace=\"default\"") {
        for name in group.metric_names() {
            assert!(
                served
                    .lines()
                    .any(|line| line.starts_with(&format!("{name}{{"))
                        && line.contains("hastate=\"active\"")),
                "no namenode serves {name} with hastate=\"active\", which an alert reads:\n{served}"
            );
        }
    }
    for pod in NAMENODES {
        let version = runner
            .claims()
            .join(NAMESPACE)
            .join(format!("data-{pod}"))
            .join("name/current/VERSION");
        let text = std::fs::read_to_string(&version)
            .unwrap_or_else(|error| panic!("{}: {error}", version.display()));
        assert!(
            text.contains(&format!("clusterID={}", cluster_ids[0])),
            "{pod}: {text}"
        );
    }

    // A client writes through the discovery ConfigMap.
    let mut sums = Vec::new();
    for (name, size) in FILES {
        let (code, output) = client(
            &runner,
            &format!("set -e; head -c {size} /dev/urandom > /tmp/{name}; hdfs dfs -mkdir -p /data; hdfs dfs -put -f /tmp/{name} /data/{name}; md5sum < /tmp/{name}"),
        )
        .await;
        assert_eq!(code, 0, "writing {name}: {output}");
        sums.push(output.lines().last().unwrap_or_default().to_owned());
    }

    // A new file system gets /tmp and /user from the active namenode's sidecar.
    wait_for_base_directories(&runner).await;
    // Each journalnode syncs with its two peers, by their Services' names.
    journalnodes_sync_with_both_peers(&runner);

    // Issue 21, item 10: one journalnode pod is gone (being recreated, or Pending), so
    // its pod has no address; then the active namenode's pod dies. The standby takes
    // over with the two journalnodes left, and every file reads back. When Hadoop named
    // the journalnodes by their pods' names, the standby's transition to active built
    // its journal managers, could not resolve the missing one, and terminated
    // ("Unable to construct journal"), leaving no namenode at all.
    let gone_journalnode = JOURNALNODES[2];
    runner
        .delete(NAMESPACE, gone_journalnode)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let active = NAMENODES
        .into_iter()
        .find(|pod| ha_state(&runner, pod).as_deref() == Some("active"))
        .expect("an active namenode");
    let standby = NAMENODES.into_iter().find(|pod| *pod != active).unwrap();
    runner.kill(NAMESPACE, active).unwrap();
    wait_for(
        &runner,
        Duration::from_secs(120),
        "the standby to become active without one journalnode",
        |runner| ha_state(runner, standby).as_deref() == Some("active"),
    )
    .await;
    let (code, output) = client(&runner, "hdfs dfs -mkdir /written-after-the-failover").await;
    assert_eq!(
        code, 0,
        "the new active writes edits with two journalnodes: {output}"
    );
    assert!(
        status(&runner, standby)
            .containers
            .iter()
            .all(|container| container.restart_count == 0),
        "the namenode that took over restarted: {}",
        log(&runner, standby, "namenode")
    );
    runner
        .run(support::stateful_set_pod(&objects, gone_journalnode))
        .unwrap_or_else(|error| panic!("{error}"));
    wait_for(
        &runner,
        Duration::from_secs(60),
        "the readiness probes to tell the truth",
        |runner| status(runner, standby).ready() && !status(runner, active).ready(),
    )
    .await;
    for ((name, _), sum) in FILES.iter().zip(&sums) {
        let (code, output) = client(
            &runner,
            &format!("set -e; hdfs dfs -cat /data/{name} | md5sum"),
        )
        .await;
        assert_eq!(
            (code, output.lines().last().unwrap_or_default()),
            (0, sum.as_str()),
            "reading {name} after the failover: {output}"
        );
    }

    // The format table's rows, then the numbers the scripts assume, on the real daemons.
    format::rows(&mut runner, &objects, active, &cluster_ids[0]).await;
    format::real_numbers(&runner, standby, active).await;

    // A namenode pod's deletion ends when its containers do, well within its 900 s
    // grace period: each container's PID 1 (the refresh-nodes script, the namenode's and
    // ZKFC's JVMs) ends on SIGTERM (issue 21, item 6).
    let asked = Instant::now();
    runner
        .delete(NAMESPACE, standby)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    assert!(
        asked.elapsed() < Duration::from_secs(60),
        "deleting {standby} took {:?}",
        asked.elapsed()
    );
    // Every namenode's name directory belongs to the namespace's arbitrary uid.
    for namenode in NAMENODES {
        let owner = std::fs::metadata(format::name_dir(&runner, namenode))
            .map(|metadata| std::os::unix::fs::MetadataExt::uid(&metadata));
        assert_eq!(owner.ok(), Some(range.first_uid), "{namenode}");
    }
    runner.shutdown().await;
}

/// The example with the journalnodes' sync every 2 s instead of every 2 minutes, so a
/// test sees whom they sync with.
fn with_journal_sync_every_two_seconds(
    cluster: hdfs_operator::crd::HdfsCluster,
) -> hdfs_operator::crd::HdfsCluster {
    let mut value = serde_json::to_value(&cluster).expect("the cluster as JSON");
    value["spec"]["journalNodes"]["configOverrides"] =
        serde_json::json!({"hdfs-site.xml": {"dfs.journalnode.sync.interval": "2000"}});
    serde_json::from_value(value).expect("the cluster")
}

/// Waits until `/tmp` (1777) and `/user` (755) exist, created by the sidecar.
async fn wait_for_base_directories(runner: &strata_pod_runner::runner::PodRunner) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (code, output) = client(runner, "hdfs dfs -ls -d /tmp /user").await;
        let listed = output
            .lines()
            .any(|line| line.starts_with("drwxrwxrwt") && line.ends_with(" /tmp"))
            && output
                .lines()
                .any(|line| line.starts_with("drwxr-xr-x") && line.ends_with(" /user"));
        if code == 0 && listed {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "/tmp (drwxrwxrwt) and /user (drwxr-xr-x) after 120 s: {output}"
        );
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
}

/// Issue 21, item 15: each journalnode's JournalNodeSyncer syncs with both other
/// journalnodes. It names them by their own Services (item 10), so it also lists itself,
/// whose Service address is not the one it is bound to (see `docs/hdfs.md`).
fn journalnodes_sync_with_both_peers(runner: &strata_pod_runner::runner::PodRunner) {
    for pod in JOURNALNODES {
        let text = log(runner, pod, "journalnode");
        let peers: Vec<&str> = text
            .lines()
            .filter_map(|line| {
                let rest = line.split("Syncing Journal ").nth(1)?;
                let (_, other) = rest.split_once(" with ")?;
                Some(other.split(", journal id").next().unwrap_or(other))
            })
            .collect();
        assert!(!peers.is_empty(), "{pod} never synced: {text}");
        for peer in JOURNALNODES.iter().filter(|peer| *peer != &pod) {
            let service = format!("{peer}.{NAMESPACE}.svc.cluster.local/");
            assert!(
                peers.iter().any(|other| other.starts_with(&service)),
                "{pod} never synced with {peer}'s Service: {peers:?}"
            );
        }
    }
}
