//! The rows of the namenode format table, and the exit codes and HTTP answers the
//! scripts and the operator rely on, against the real Hadoop 3.4.2 daemons of a
//! running cluster (after the failover of `main.rs`: `survivor` is the active
//! namenode, `killed` the pod that died).
//!
//! The in-memory tests and `tests/format_script.rs` play Hadoop with a fake `hdfs`;
//! this is where that fake's numbers are checked once against the real thing.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::Duration;

use hdfs_operator::controller::namenode_http::get;
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::Value;
use strata_pod_runner::runner::PodRunner;
use strata_pod_runner::status::ContainerStatus;

use crate::support::{
    CLIENT_POD, NAMESPACE, in_pod, log, stateful_set_pod, status, wait_for, wait_ready,
};

const STATE: &str = "simple-hdfs-namenode-state";

/// A namenode's name directory on its claim.
pub fn name_dir(runner: &PodRunner, pod: &str) -> PathBuf {
    runner
        .claims()
        .join(NAMESPACE)
        .join(format!("data-{pod}"))
        .join("name")
}

/// Deletes the pod and starts it again, as the StatefulSet controller replaces one.
async fn replace(runner: &mut PodRunner, objects: &[Value], pod: &str) {
    runner
        .delete(NAMESPACE, pod)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    runner
        .run(stateful_set_pod(objects, pod))
        .unwrap_or_else(|error| panic!("{error}"));
}

/// The termination message of the pod's `format-namenode` init container, once it has
/// stopped with one.
async fn format_stop_reason(runner: &PodRunner, pod: &str) -> String {
    wait_for(
        runner,
        Duration::from_secs(120),
        "format-namenode to stop with a reason",
        |runner| {
            format_status(runner, pod)
                .last_state
                .and_then(|last| last.message)
                .is_some()
        },
    )
    .await;
    let last = format_status(runner, pod)
        .last_state
        .expect("a stopped format-namenode");
    last.message.unwrap_or_default()
}

/// The `format-namenode` init container's status (on OpenShift, `platform-user` runs
/// before it).
fn format_status(runner: &PodRunner, pod: &str) -> ContainerStatus {
    status(runner, pod)
        .init_containers
        .into_iter()
        .find(|container| container.name == "format-namenode")
        .expect("the format-namenode init container")
}

/// Restart, lost volume with a known cluster ID, partial format and unknown content.
pub async fn rows(runner: &mut PodRunner, objects: &[Value], killed: &str, cluster_id: &str) {
    // A restart: the name dir is formatted, so the namenode starts without any hdfs call.
    replace(runner, objects, killed).await;
    wait_ready(runner, &[killed], Duration::from_secs(240)).await;
    assert!(
        log(runner, killed, "format-namenode").contains("is formatted (cluster ID"),
        "{}",
        log(runner, killed, "format-namenode")
    );

    // A lost volume while the cluster records its ID: bootstrap, never format.
    let mut state: ConfigMap = objects
        .iter()
        .find(|object| object["kind"] == "ConfigMap" && object["metadata"]["name"] == STATE)
        .map(|object| serde_json::from_value(object.clone()).expect("the namenode state"))
        .expect("the namenode state ConfigMap");
    state
        .data
        .get_or_insert_default()
        .insert("cluster-id".to_owned(), cluster_id.to_owned());
    runner
        .apply_config_map(state)
        .unwrap_or_else(|error| panic!("{error}"));
    runner
        .delete(NAMESPACE, killed)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    std::fs::remove_dir_all(
        runner
            .claims()
            .join(NAMESPACE)
            .join(format!("data-{killed}")),
    )
    .expect("the volume is lost");
    runner
        .run(stateful_set_pod(objects, killed))
        .unwrap_or_else(|error| panic!("{error}"));
    wait_ready(runner, &[killed], Duration::from_secs(240)).await;
    let format_log = log(runner, killed, "format-namenode");
    assert!(
        format_log.contains(&format!(
            "records cluster ID {cluster_id}: never formatting"
        )),
        "{format_log}"
    );
    assert!(
        format_log.contains(&format!(
            "bootstrapStandby copied the namespace (cluster ID {cluster_id})"
        )),
        "{format_log}"
    );
    assert!(
        !format_log.contains("formatted a new namespace"),
        "{format_log}"
    );

    // An interrupted format or bootstrap of this cluster: VERSION with its cluster ID and
    // no fsimage. No namenode ever served it, so the pod clears it and bootstraps.
    runner
        .delete(NAMESPACE, killed)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let dir = name_dir(runner, killed);
    let aside = dir.with_file_name("name-aside");
    std::fs::rename(&dir, &aside).expect("the name dir moves aside");
    let version = std::fs::read_to_string(aside.join("current/VERSION")).expect("VERSION");
    // Owned by the pod's user, as a format of its own would have left it.
    let owner = std::fs::metadata(aside.join("current/VERSION")).expect("VERSION's owner");
    let partial = |version: &str| {
        std::fs::create_dir_all(dir.join("current")).expect("a partial name dir");
        std::fs::write(dir.join("current/VERSION"), version).expect("VERSION alone");
        for path in [
            dir.clone(),
            dir.join("current"),
            dir.join("current/VERSION"),
        ] {
            std::os::unix::fs::chown(&path, Some(owner.uid()), Some(owner.gid()))
                .expect("the pod's user owns the partial dir");
        }
    };
    partial(&version);
    runner
        .run(stateful_set_pod(objects, killed))
        .unwrap_or_else(|error| panic!("{error}"));
    wait_ready(runner, &[killed], Duration::from_secs(240)).await;
    let format_log = log(runner, killed, "format-namenode");
    assert!(
        format_log.contains("no fsimage: an interrupted format or bootstrap")
            && format_log.contains(&format!(
                "bootstrapStandby copied the namespace (cluster ID {cluster_id})"
            )),
        "{format_log}"
    );

    // The same from another namespace (a former cluster of this name) stops with
    // PartialFormat, untouched.
    runner
        .delete(NAMESPACE, killed)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    std::fs::remove_dir_all(&dir).expect("the bootstrapped dir goes");
    let former = version.replace(cluster_id, "CID-former-cluster");
    assert_ne!(former, version, "VERSION names {cluster_id}: {version}");
    partial(&former);
    runner
        .run(stateful_set_pod(objects, killed))
        .unwrap_or_else(|error| panic!("{error}"));
    let message = format_stop_reason(runner, killed).await;
    assert!(
        message.starts_with("PartialFormat\n") && message.contains("CID-former-cluster"),
        "{message}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("current/VERSION")).ok(),
        Some(former),
        "the partial dir of another namespace is left untouched"
    );

    // Content without VERSION stops with UnknownNameDirContent, untouched.
    runner
        .delete(NAMESPACE, killed)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    std::fs::remove_dir_all(&dir).expect("the partial dir goes");
    std::fs::create_dir_all(&dir).expect("a name dir");
    std::fs::write(dir.join("notes.txt"), "someone's file\n").expect("a stray file");
    runner
        .run(stateful_set_pod(objects, killed))
        .unwrap_or_else(|error| panic!("{error}"));
    let message = format_stop_reason(runner, killed).await;
    assert!(message.starts_with("UnknownNameDirContent\n"), "{message}");
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt"))
            .ok()
            .as_deref(),
        Some("someone's file\n")
    );

    // Put the namespace back: the pod starts from its own name dir again.
    runner
        .delete(NAMESPACE, killed)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    std::fs::remove_dir_all(&dir).expect("the stray dir goes");
    std::fs::rename(&aside, &dir).expect("the name dir comes back");
    runner
        .run(stateful_set_pod(objects, killed))
        .unwrap_or_else(|error| panic!("{error}"));
    wait_ready(runner, &[killed], Duration::from_secs(240)).await;
}

/// The exit codes `format-namenode.sh` and `start-zkfc.sh` (and the fake `hdfs` of
/// `tests/format_script.rs`) assume, and the `/isActive` answers the operator reads,
/// from the real daemons. Probes write to a scratch name dir in `/tmp` of the
/// namenode's pod, never to its own.
pub async fn real_numbers(runner: &PodRunner, active: &str, standby: &str) {
    let hdfs = |pod: &str, container: &str, script: String| {
        let plan = runner
            .exec_plan(NAMESPACE, pod, container, &["bash", "-c", &script])
            .unwrap_or_else(|error| panic!("{error}"));
        async move {
            plan.run(Duration::from_secs(120))
                .await
                .unwrap_or_else(|error| panic!("{error}"))
                .expect("within two minutes")
        }
    };
    let probe_dir = "-D dfs.namenode.name.dir=file:///tmp/probe-name";
    let cases = [
        (
            "bootstrapStandby into an empty dir, a namenode serving",
            format!("hdfs namenode {probe_dir} -bootstrapStandby -nonInteractive"),
            0,
        ),
        (
            "bootstrapStandby into a formatted dir",
            format!("hdfs namenode {probe_dir} -bootstrapStandby -nonInteractive"),
            5,
        ),
        (
            "format over a formatted dir",
            format!("hdfs namenode {probe_dir} -format -nonInteractive"),
            1,
        ),
    ];
    for (case, command, expected) in cases {
        let (code, output) = hdfs(standby, "namenode", command).await;
        assert_eq!(code, expected, "{case}: {output}");
    }
    let (code, output) = hdfs(
        standby,
        "zkfc",
        "hdfs zkfc -formatZK -nonInteractive".to_owned(),
    )
    .await;
    assert_eq!(code, 2, "zkfc -formatZK with the znode present: {output}");

    for (pod, expected) in [(active, 200), (standby, 405)] {
        let address = format!(
            "{}:9870",
            runner.address(NAMESPACE, pod).expect("an address")
        );
        let answer = in_pod(runner, CLIENT_POD, move || async move {
            get(&address, "/isActive", Duration::from_secs(5)).await
        });
        assert_eq!(
            answer.map(|(code, _)| code),
            Some(expected),
            "/isActive of {pod}"
        );
    }
}
