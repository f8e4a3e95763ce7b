//! The HDFS operator itself on the real control plane, with the pod runner as the node
//! that runs real Hadoop: a datanode decommission, then a configuration roll.
//!
//! - **Decommission:** 4 datanodes to 3. The operator's planner reads the real namenode
//!   JMX, the real `refresh-nodes` sidecar applies the real exclude list, and the
//!   StatefulSet shrinks only once the namenodes report the node decommissioned.
//! - **Roll:** a change of `dfsReplication` rolls the journalnodes, then the standby
//!   namenode, then the active one, then the datanodes, each pod only once every pod
//!   rolled before it is Ready again, while a client keeps reading.
//!
//! - **Clients:** after the roll, a file a client writes through the discovery
//!   ConfigMap gets the new `dfsReplication`.
//! - **Bad input:** a cluster naming a ConfigMap without the `ZOOKEEPER` key is
//!   Degraded with `ZookeeperConfigMapInvalid`; a datanode setting Hadoop rejects at
//!   start makes it Degraded with `DaemonExited` and Hadoop's exception, until the
//!   setting is taken back.
//!
//! One control plane serves all three, and one cluster both phases: starting one
//! costs more than either phase.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hdfs_operator::controller::namenode_http::{get, namenode_info};
use hdfs_operator::decommission::AdminState;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::Ingress;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use strata_pod_runner::manifest::apply_all;
use strata_testing::control_plane::{pod_is_ready, wait_until};

use crate::support::operated::Operated;
use crate::support::{
    CLIENT_POD, NAMENODES, NAMESPACE, Phases, client_pod, client_shared, wait_ready,
};

const LEAVING: &str =
    "simple-hdfs-datanode-default-3.simple-hdfs-datanode-default.default.svc.cluster.local";
/// The files the client writes: three at the cluster's replication, eight with a
/// single replica, so that the leaving datanode most likely holds the only copy of some.
const FILES: [&str; 11] = [
    "a", "b", "c", "single1", "single2", "single3", "single4", "single5", "single6", "single7",
    "single8",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root, the control plane and the Hadoop and ZooKeeper image directories; run by cargo xtask test"]
async fn the_operator_decommissions_a_datanode_then_rolls_in_order_on_real_hdfs() {
    let mut phases = Phases::start();
    let operated = Operated::start().await;
    phases.done("the control plane and the operator");
    a_znode_config_map_without_its_key_degrades_the_cluster(&operated).await;
    phases.done("a ConfigMap without the ZooKeeper key");
    operated.create_cluster(4).await;
    operated.wait_available(Duration::from_secs(480)).await;
    phases.done("the cluster Available");
    let runner = operated.agent.runner();
    apply_all(&mut *runner.lock().await, &[client_pod()]).unwrap_or_else(|error| panic!("{error}"));
    wait_ready(
        &*runner.lock().await,
        &[CLIENT_POD],
        Duration::from_secs(60),
    )
    .await;
    let script = "set -e; hdfs dfs -mkdir -p /data; \
        for name in a b c; do head -c 2000000 /dev/urandom > /tmp/$name; done; hdfs dfs -put -f /tmp/a /tmp/b /tmp/c /data/; \
        for n in 1 2 3 4 5 6 7 8; do head -c 10000 /dev/urandom > /tmp/single$n; done; \
        hdfs dfs -D dfs.replication=1 -put -f /tmp/single* /data/; \
        cd /tmp && md5sum a b c single*";
    let (code, written) = client_shared(&runner, script).await;
    assert_eq!(code, 0, "writing: {written}");
    let sums = checksums(&written);
    assert_eq!(sums.len(), FILES.len(), "{written}");
    phases.done("the client's files written");

    decommission(&operated).await;
    phases.done("the decommission");
    assert_every_file_reads(&operated, &sums).await;
    phases.done("every file read");
    roll(&operated, &sums["a"]).await;
    phases.done("the roll");
    assert_every_file_reads(&operated, &sums).await;
    a_client_writes_with_the_clusters_replication(&operated, 2).await;
    phases.done("every file read, one written");
    a_setting_hadoop_rejects_degrades_the_cluster_with_its_cause(&operated).await;
    phases.done("a setting Hadoop rejects, and taken back");
    each_namenode_ui_gets_its_own_node_port_in_discovery(&operated).await;
    phases.done("the node ports");
    operated.agent.shutdown().await;
}

/// Bad input: a cluster naming a ConfigMap that is not a ZNode's discovery ConfigMap
/// (no `ZOOKEEPER` key) is Degraded with a reason that names the cause, and gets no pods.
async fn a_znode_config_map_without_its_key_degrades_the_cluster(operated: &Operated) {
    let not_a_znode: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "not-a-znode"},
        "data": {"ZOOKEEPER_HOSTS": "simple-zk.default.svc.cluster.local:2181"}
    }))
    .expect("a ConfigMap");
    Api::<ConfigMap>::namespaced(operated.client.clone(), NAMESPACE)
        .create(&PostParams::default(), &not_a_znode)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let mut cluster = crate::support::example_cluster();
    cluster.metadata.uid = None;
    cluster.metadata.name = Some("misconfigured-hdfs".to_owned());
    cluster.spec.cluster_config.zookeeper_config_map_name = "not-a-znode".to_owned();
    operated
        .clusters()
        .create(&PostParams::default(), &cluster)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let degraded = operated
        .wait_condition(
            "misconfigured-hdfs",
            "Degraded",
            Duration::from_secs(60),
            |condition| condition.status == "True",
        )
        .await;
    assert_eq!(degraded.reason, "ZookeeperConfigMapInvalid");
    assert_eq!(
        operated
            .replicas("misconfigured-hdfs-namenode-default")
            .await,
        None,
        "a misconfigured cluster gets no StatefulSet"
    );
    operated
        .clusters()
        .delete("misconfigured-hdfs", &Default::default())
        .await
        .unwrap_or_else(|error| panic!("{error}"));
}

/// The namenodes' web UIs exposed (issue 26, item 3): the real API server allocates a
/// node port to each namenode's own HTTP Service, discovery publishes it, and the
/// EndpointSlice controller finds that namenode's pod, and no other, behind it. Each
/// namenode's Ingress is stored with its own host, and its URL reaches discovery once
/// an Ingress controller (played by the test) writes it an address.
async fn each_namenode_ui_gets_its_own_node_port_in_discovery(operated: &Operated) {
    operated
        .clusters()
        .patch(
            "simple-hdfs",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"clusterConfig": {
                "nameNodeHttpService": {"type": "NodePort"},
                "nameNodeIngress": {"domain": "hdfs.example.com", "ingressClassName": "nginx"}
            }}})),
        )
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let config_maps: Api<ConfigMap> = Api::namespaced(operated.client.clone(), NAMESPACE);
    let services: Api<Service> = Api::namespaced(operated.client.clone(), NAMESPACE);
    let slices: Api<EndpointSlice> = Api::namespaced(operated.client.clone(), NAMESPACE);
    for namenode in NAMENODES {
        let service = format!("{namenode}-http");
        let key = format!(
            "{}_HTTP_NODE_PORT",
            namenode.to_ascii_uppercase().replace('-', "_")
        );
        let published = wait_until(
            "each namenode's node port in discovery",
            Duration::from_secs(60),
            async || {
                let data = config_maps.get("simple-hdfs").await.ok()?.data?;
                data.get(&key)?.parse::<i32>().ok()
            },
        )
        .await;
        let allocated = services
            .get(&service)
            .await
            .unwrap_or_else(|error| panic!("{error}"))
            .spec
            .and_then(|spec| spec.ports?.first()?.node_port);
        assert_eq!(Some(published), allocated, "{service}'s node port");
        assert!((30000..=32767).contains(&published), "{published}");
        let behind = wait_until(
            "the namenode's pod behind its HTTP Service",
            Duration::from_secs(60),
            async || {
                let list = slices
                    .list(
                        &ListParams::default()
                            .labels(&format!("kubernetes.io/service-name={service}")),
                    )
                    .await
                    .ok()?;
                let pods: Vec<String> = list
                    .items
                    .iter()
                    .flat_map(|slice| slice.endpoints.iter().flatten())
                    .filter_map(|endpoint| endpoint.target_ref.as_ref()?.name.clone())
                    .collect();
                (!pods.is_empty()).then_some(pods)
            },
        )
        .await;
        assert_eq!(behind, [namenode.to_owned()], "behind {service}");
    }
    let ingresses: Api<Ingress> = Api::namespaced(operated.client.clone(), NAMESPACE);
    for namenode in NAMENODES {
        let ingress = wait_until(
            "each namenode's Ingress",
            Duration::from_secs(60),
            async || ingresses.get_opt(&format!("{namenode}-http")).await.ok()?,
        )
        .await;
        let rules = ingress.spec.and_then(|spec| spec.rules).unwrap_or_default();
        assert_eq!(
            rules[0].host.as_deref(),
            Some(format!("{namenode}.hdfs.example.com").as_str())
        );
    }
    let second = format!("{}-http", NAMENODES[1]);
    ingresses
        .patch_status(
            &second,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.40"}]}}})),
        )
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let key = format!(
        "{}_HTTP_EXTERNAL_URL",
        NAMENODES[1].to_ascii_uppercase().replace('-', "_")
    );
    let url = wait_until(
        "the second namenode's URL in discovery",
        Duration::from_secs(60),
        async || {
            config_maps
                .get("simple-hdfs")
                .await
                .ok()?
                .data?
                .get(&key)
                .cloned()
        },
    )
    .await;
    assert_eq!(url, format!("http://{}.hdfs.example.com/", NAMENODES[1]));
}

/// The replication a client gives a new file is its own `dfs.replication`, so the
/// discovery ConfigMap carries the spec's `dfsReplication` (issue 21, item 11).
async fn a_client_writes_with_the_clusters_replication(operated: &Operated, replication: u16) {
    let runner = operated.agent.runner();
    let (code, stat) = client_shared(
        &runner,
        "set -e; head -c 1000 /dev/urandom > /tmp/replicated; \
         hdfs dfs -put -f /tmp/replicated /data/replicated; hdfs dfs -stat %r /data/replicated",
    )
    .await;
    assert_eq!(code, 0, "{stat}");
    assert_eq!(
        stat.lines().last().map(str::trim),
        Some(replication.to_string().as_str()),
        "the replication of a file a client wrote through the discovery ConfigMap: {stat}"
    );
}

/// Bad input only Hadoop finds: a datanode setting it cannot parse stops the first
/// rolled datanode at start, and the cluster is Degraded with Hadoop's own words for
/// it, not a bare `CrashLoopBackOff`. Taking the setting back heals the cluster.
async fn a_setting_hadoop_rejects_degrades_the_cluster_with_its_cause(operated: &Operated) {
    let handler_count = |value: serde_json::Value| json!({"dataNodes": {"configOverrides": {"hdfs-site.xml": {"dfs.datanode.handler.count": value}}}});
    scale_cluster(operated, handler_count(json!("many"))).await;
    let degraded = operated
        .wait_condition(
            "simple-hdfs",
            "Degraded",
            Duration::from_secs(300),
            |condition| condition.status == "True" && condition.reason == "DaemonExited",
        )
        .await;
    assert!(
        degraded.message.contains(
            r#"container datanode CrashLoopBackOff: DaemonExited: Exiting with status 1: java.lang.NumberFormatException: For input string: "many""#
        ),
        "{degraded:?}"
    );

    scale_cluster(operated, handler_count(serde_json::Value::Null)).await;
    operated
        .wait_condition(
            "simple-hdfs",
            "Degraded",
            Duration::from_secs(300),
            |condition| condition.status == "False",
        )
        .await;
    operated.wait_available(Duration::from_secs(120)).await;
}

async fn decommission(operated: &Operated) {
    scale_cluster(
        operated,
        json!({"dataNodes": {"roleGroups": {"default": {"replicas": 3}}}}),
    )
    .await;
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
        if let Some(info) =
            namenode_info(&namenode_http(operated, namenode), Duration::from_secs(5)).await
        {
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
}

async fn roll(operated: &Operated, sum_of_a: &str) {
    let pods: Api<Pod> = Api::namespaced(operated.client.clone(), NAMESPACE);
    let hdfs = ListParams::default().labels("app.kubernetes.io/instance=simple-hdfs");
    let before: BTreeMap<String, String> = pods
        .list(&hdfs)
        .await
        .unwrap_or_else(|error| panic!("{error}"))
        .items
        .into_iter()
        .filter_map(|pod| Some((pod.metadata.name?, pod.metadata.uid?)))
        .collect();
    assert_eq!(before.len(), 8, "{before:?}");
    let mut active = None;
    for namenode in NAMENODES {
        if let Some((200, _)) = get(
            &namenode_http(operated, namenode),
            "/isActive",
            Duration::from_secs(5),
        )
        .await
        {
            active = Some(namenode);
        }
    }
    let active = active.expect("an active namenode before the roll");
    let standby = NAMENODES
        .into_iter()
        .find(|namenode| *namenode != active)
        .unwrap_or_default();

    // A client reads the same file and writes another, one after the other, through the
    // whole roll: the writes are edits the journalnodes must take while they restart.
    let reading = Arc::new(AtomicBool::new(true));
    let reader = tokio::spawn({
        let runner = operated.agent.runner();
        let reading = reading.clone();
        async move {
            let mut reads = Vec::new();
            while reading.load(Ordering::SeqCst) {
                reads.push(
                    client_shared(
                        &runner,
                        "set -e; hdfs dfs -cat /data/a | md5sum; \
                         date +%s%N | hdfs dfs -put -f - /data/written-during-the-roll",
                    )
                    .await,
                );
            }
            reads
        }
    });

    scale_cluster(operated, json!({"clusterConfig": {"dfsReplication": 2}})).await;
    let mut rolled: Vec<String> = Vec::new();
    wait_until("every HDFS pod rolled and Ready", Duration::from_secs(900), async || {
        let now = pods.list(&hdfs).await.ok()?.items;
        let ready = |name: &str| now.iter().any(|pod| pod.metadata.name.as_deref() == Some(name) && pod_is_ready(pod));
        for (name, uid) in &before {
            let current = now.iter().find(|pod| pod.metadata.name.as_ref() == Some(name));
            let replaced = current.is_none_or(|pod| pod.metadata.uid.as_ref() != Some(uid) || pod.metadata.deletion_timestamp.is_some());
            if replaced && !rolled.contains(name) {
                let waiting: Vec<&String> = rolled.iter().filter(|earlier| !ready(earlier)).collect();
                assert!(waiting.is_empty(), "{name} was restarted while {waiting:?}, restarted before it, was not Ready again");
                rolled.push(name.clone());
            }
        }
        (rolled.len() == before.len() && before.keys().all(|name| ready(name))).then_some(())
    })
    .await;
    reading.store(false, Ordering::SeqCst);
    let reads = reader.await.unwrap_or_default();
    // The active handed over before it stopped (its preStop hook): the standby's ZKFC
    // asked it to cede, a graceful failover, not a lost ZooKeeper session.
    let zkfc = crate::support::log(&*operated.agent.runner().lock().await, standby, "zkfc");
    assert!(
        zkfc.contains("to cede its active state"),
        "no graceful hand-over in {standby}'s ZKFC log:\n{zkfc}"
    );

    let position = |name: &str| {
        rolled
            .iter()
            .position(|rolled| rolled == name)
            .unwrap_or(usize::MAX)
    };
    let journalnodes: Vec<usize> = rolled
        .iter()
        .enumerate()
        .filter(|(_, name)| name.contains("journalnode"))
        .map(|(index, _)| index)
        .collect();
    let datanodes: Vec<usize> = rolled
        .iter()
        .enumerate()
        .filter(|(_, name)| name.contains("datanode"))
        .map(|(index, _)| index)
        .collect();
    assert!(
        journalnodes.iter().all(|index| *index < position(standby)),
        "journalnodes first: {rolled:?}"
    );
    assert!(
        position(standby) < position(active),
        "the standby namenode before the active one: {rolled:?}"
    );
    assert!(
        datanodes.iter().all(|index| *index > position(active)),
        "datanodes last: {rolled:?}"
    );
    assert!(
        reads.len() >= 3,
        "the client read only {} times during the roll",
        reads.len()
    );
    for (code, output) in &reads {
        let read = output
            .lines()
            .any(|line| line.split_whitespace().next() == Some(sum_of_a));
        assert_eq!(
            (*code, read),
            (0, true),
            "a read and a write during the roll: {output}"
        );
    }
}

/// Every file reads back with its checksum, and fsck finds no block missing,
/// under-replicated or corrupt.
async fn assert_every_file_reads(operated: &Operated, sums: &BTreeMap<String, String>) {
    let runner = operated.agent.runner();
    let names = FILES.join(" ");
    let paths: Vec<String> = FILES.iter().map(|name| format!("/data/{name}")).collect();
    let paths = paths.join(" ");
    // One client JVM gets every file.
    let (code, read) = client_shared(&runner, &format!("set -e; rm -rf /tmp/read; mkdir /tmp/read; cd /tmp/read; hdfs dfs -get {paths} .; md5sum {names}")).await;
    assert_eq!(code, 0, "reading: {read}");
    assert_eq!(&checksums(&read), sums);
    let (code, fsck) = client_shared(&runner, "hdfs fsck /").await;
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
}

async fn scale_cluster(operated: &Operated, spec: serde_json::Value) {
    operated
        .clusters()
        .patch(
            "simple-hdfs",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": spec })),
        )
        .await
        .unwrap_or_else(|error| panic!("{error}"));
}

/// The host's end of the forward to a namenode's HTTP port.
fn namenode_http(operated: &Operated, namenode: &str) -> String {
    operated
        .agent
        .forwarded(&format!(
            "{namenode}.simple-hdfs-namenode-default.default.svc.cluster.local:9870"
        ))
        .expect("a forward to the namenode's HTTP port")
        .to_string()
}

/// `md5sum` lines (32 hex digits, two spaces, a name) by name.
fn checksums(output: &str) -> BTreeMap<String, String> {
    output
        .lines()
        .filter(|line| {
            line.len() > 34
                && line[..32].bytes().all(|byte| byte.is_ascii_hexdigit())
                && &line[32..34] == "  "
        })
        .map(|line| (line[34..].to_owned(), line[..32].to_owned()))
        .collect()
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
