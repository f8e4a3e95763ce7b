//! Issue 21, item 14 on the real datanode: why a cluster keeps the user it was created
//! with. The image's `hadoop` user is 1000:100 up to 3.4 and 1001:1001 from 3.5; a
//! datanode whose uid changes under its volume refuses the data directory the earlier
//! uid created, and runs again once the uid is the earlier one, which is what the
//! operator keeps (`status.podUser`; `tests/reconcile/pod_user.rs`). Shown on the 3.4.2
//! layout, since no 3.5 layout is provisioned, with `nobody` (65534) as the other uid:
//! the pod runner takes users from the host, which has no 1001, as the 3.4 image has
//! none (a datanode as 1001 there exits with `Invalid UID, could not determine
//! effective user`).

use std::time::Duration;

use hdfs_operator::config::zookeeper_tls::ZookeeperConnection;
use serde_json::{Value, json};
use strata_pod_runner::manifest::apply_all;
use strata_pod_runner::runner::PodRunner;

use crate::support::{NAMESPACE, example_cluster, hdfs_objects, log, runner, status, wait_for};

const DATANODE: &str = "simple-hdfs-datanode-default-0";
/// Hadoop's words when no data directory is usable.
const REFUSED: &str = "Too many failed volumes - current valid volumes: 0";

/// The datanode group's objects, with one replica running as `uid`:`gid`.
fn datanode_objects(uid: i64, gid: i64) -> Vec<Value> {
    // No namenode runs: the datanode checks its directories before it looks for one.
    let mut objects: Vec<Value> = hdfs_objects(
        &example_cluster(),
        &ZookeeperConnection::plaintext("127.0.0.1:2181/none"),
    )
    .into_iter()
    .filter(|object| {
        object["metadata"]["name"].as_str().is_some_and(|name| {
            name.starts_with("simple-hdfs-datanode-default") || name == "simple-hdfs-namenode-state"
        })
    })
    .collect();
    for object in &mut objects {
        if object["kind"] == "StatefulSet" {
            object["spec"]["replicas"] = json!(1);
            object["spec"]["template"]["spec"]["securityContext"] =
                json!({"runAsUser": uid, "runAsGroup": gid, "fsGroup": gid, "runAsNonRoot": true});
        }
    }
    objects
}

/// Starts the datanode as `uid`:`gid`, after stopping the one that runs.
async fn run_as(runner: &mut PodRunner, uid: i64, gid: i64) {
    if runner.status(NAMESPACE, DATANODE).is_some() {
        runner
            .delete(NAMESPACE, DATANODE)
            .await
            .unwrap_or_else(|error| panic!("{error}"));
    }
    apply_all(runner, &datanode_objects(uid, gid)).unwrap_or_else(|error| panic!("{error}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the Hadoop image directory; run by cargo xtask test"]
async fn a_datanode_refuses_the_data_directory_of_another_uid() {
    let mut runner = runner();
    let blocks = runner
        .claims()
        .join(NAMESPACE)
        .join(format!("data-{DATANODE}"))
        .join("blocks");

    // Created as 3.4's user: the datanode makes its data directory and runs.
    run_as(&mut runner, 1000, 100).await;
    wait_for(
        &runner,
        Duration::from_secs(120),
        "the data directory",
        |_| blocks.is_dir(),
    )
    .await;

    // Another uid on the same volume: refused.
    run_as(&mut runner, 65534, 65534).await;
    wait_for(
        &runner,
        Duration::from_secs(120),
        "the datanode to refuse its directory",
        |runner| log(runner, DATANODE, "datanode").contains(REFUSED),
    )
    .await;

    // The user it was created with again: it runs, and keeps running.
    run_as(&mut runner, 1000, 100).await;
    tokio::time::sleep(Duration::from_secs(20)).await;
    let first_run = log(&runner, DATANODE, "datanode");
    assert!(!first_run.contains(REFUSED), "{first_run}");
    let restarts: Vec<i32> = status(&runner, DATANODE)
        .containers
        .iter()
        .map(|container| container.restart_count)
        .collect();
    assert_eq!(restarts, [0], "{first_run}");
    runner.shutdown().await;
}
