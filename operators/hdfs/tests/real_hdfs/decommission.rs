//! Datanode scale-down with the operator on the real control plane and real Hadoop:
//! the operator's decommission planner reads the real namenode JMX, the real
//! `refresh-nodes` sidecar applies the real exclude list, and the StatefulSet shrinks
//! only once the namenodes report the node decommissioned.

use std::time::Duration;

use hdfs_operator::controller::namenode_http::namenode_info;
use hdfs_operator::decommission::AdminState;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use strata_pod_runner::manifest::apply_all;
use strata_testing::control_plane::wait_until;

use crate::support::operated::Operated;
use crate::support::{CLIENT_POD, NAMENODES, NAMESPACE, client, client_pod, serial, wait_ready};

const LEAVING: &str =
    "simple-hdfs-datanode-default-3.simple-hdfs-datanode-default.default.svc.cluster.local";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root, the control plane and the Hadoop and ZooKeeper image directories; run by cargo xtask test"]
async fn scaling_datanodes_down_decommissions_first_and_loses_no_block() {
    let _one_hdfs_at_a_time = serial().await;
    let operated = Operated::start().await;
    operated.create_cluster(4).await;
    operated.wait_available(Duration::from_secs(480)).await;

    let runner = operated.agent.runner();
    apply_all(&mut *runner.lock().await, &[client_pod()]).unwrap_or_else(|error| panic!("{error}"));
    wait_ready(
        &*runner.lock().await,
        &[CLIENT_POD],
        Duration::from_secs(60),
    )
    .await;
    // Files at the cluster's replication, and files with a single replica, so that the
    // leaving datanode most likely holds the only copy of some block.
    let script = "set -e; hdfs dfs -mkdir -p /data; \
        for name in a b c; do head -c 2000000 /dev/urandom > /tmp/$name; hdfs dfs -put -f /tmp/$name /data/$name; done; \
        for n in 1 2 3 4 5 6 7 8; do head -c 10000 /dev/urandom > /tmp/single$n; done; \
        hdfs dfs -D dfs.replication=1 -put -f /tmp/single* /data/; \
        cd /tmp && md5sum a b c single*";
    let (code, written) = client(&*runner.lock().await, script).await;
    assert_eq!(code, 0, "writing: {written}");
    let sums: Vec<String> = written
        .lines()
        .filter(|line| is_checksum_line(line))
        .map(str::to_owned)
        .collect();
    assert_eq!(sums.len(), 11, "{written}");

    operated
        .clusters()
        .patch(
            "simple-hdfs",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"dataNodes": {"roleGroups": {"default": {"replicas": 3}}}}}),
            ),
        )
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let states: Api<ConfigMap> = Api::namespaced(operated.client.clone(), NAMESPACE);
    let mut excluded_before_shrink = false;
    wait_until(
        "the datanode StatefulSet to shrink to 3",
        Duration::from_secs(600),
        async || {
            let excluded = states
                .get("simple-hdfs-namenode-state")
                .await
                .ok()
                .and_then(|state| state.data?.get("datanodes").cloned())
                .is_some_and(|list| list.lines().any(|host| host.trim() == LEAVING));
            let replicas = operated.replicas("simple-hdfs-datanode-default").await;
            excluded_before_shrink |= excluded && replicas == Some(4);
            (replicas == Some(3)).then_some(())
        },
    )
    .await;
    assert!(
        excluded_before_shrink,
        "the StatefulSet shrank before the leaving datanode was in the exclude list"
    );

    // The namenodes report the datanode decommissioned: the shrink waited for them.
    let mut admin_states = Vec::new();
    for namenode in NAMENODES {
        let forwarded = operated
            .agent
            .forwarded(&format!(
                "{namenode}.simple-hdfs-namenode-default.default.svc.cluster.local:9870"
            ))
            .expect("a forward to the namenode's HTTP port");
        if let Some(info) = namenode_info(&forwarded.to_string(), Duration::from_secs(5)).await {
            admin_states.push(
                info.nodes
                    .get(LEAVING)
                    .map(|report| report.admin_state.clone()),
            );
        }
    }
    assert!(!admin_states.is_empty());
    assert!(
        admin_states
            .iter()
            .all(|state| *state == Some(AdminState::Decommissioned)),
        "{admin_states:?}"
    );

    // Every block is readable, and fsck finds none missing or under-replicated.
    let (code, read) = client(&*runner.lock().await, "set -e; for name in a b c single1 single2 single3 single4 single5 single6 single7 single8; do hdfs dfs -get /data/$name /tmp/read-$name; done; cd /tmp && for name in a b c single1 single2 single3 single4 single5 single6 single7 single8; do md5sum read-$name | sed 's/read-//'; done").await;
    assert_eq!(code, 0, "reading: {read}");
    let read_sums: Vec<String> = read
        .lines()
        .filter(|line| is_checksum_line(line))
        .map(str::to_owned)
        .collect();
    assert_eq!(read_sums, sums);
    let (code, fsck) = client(&*runner.lock().await, "hdfs fsck /").await;
    assert_eq!(code, 0, "{fsck}");
    assert!(fsck.contains("Status: HEALTHY"), "{fsck}");
    for count in [
        "Missing blocks",
        "Under-replicated blocks",
        "Missing replicas",
        "Corrupt blocks",
    ] {
        assert_eq!(fsck_count(&fsck, count), Some(0), "{count} in {fsck}");
    }
    operated.agent.shutdown().await;
}

/// A line of `md5sum`: 32 hex digits, two spaces, a name.
fn is_checksum_line(line: &str) -> bool {
    line.len() > 34
        && line[..32].bytes().all(|byte| byte.is_ascii_hexdigit())
        && &line[32..34] == "  "
}

/// The number `hdfs fsck` prints after `name:` (tabs between), if it prints one.
fn fsck_count(fsck: &str, name: &str) -> Option<u64> {
    fsck.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == name)
            .then(|| value.split_whitespace().next()?.parse().ok())
            .flatten()
    })
}
