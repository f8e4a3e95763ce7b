//! The ZooKeeper operator itself on the real control plane, with the pod runner as the
//! node that runs ZooKeeper 3.9.5 as rendered: the real StatefulSet controller creates
//! the pods, the operator's planner grows the ensemble 1 → 3 one server and one restart
//! at a time, and asks the real servers which one leads through the runner's forwards
//! (as an in-cluster operator reaches the pods). A znode written before the growth is
//! read after it from the newest server. Then the ZNode controller, against the same
//! real ensemble: a ZookeeperZnode's path is created and published, and its finalizer
//! removes it.

#![allow(clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use strata_operator::cli::Operator;
use strata_pod_runner::agent::{Forwards, NodeAgent};
use strata_pod_runner::image::Images;
use strata_pod_runner::runner::{PodRunner, RunnerOptions};
use strata_testing::control_plane::{
    ControlPlane, ControlPlaneOptions, RunningOperator, wait_until,
};
use strata_testing::tools::{self, ZOOKEEPER_IMAGE};
use zookeeper_operator::controller::RunOptions;
use zookeeper_operator::controller::leader::ServerAddress;
use zookeeper_operator::controller::znode::EnsembleAddress;
use zookeeper_operator::crd::{ZookeeperCluster, ZookeeperZnode};
use zookeeper_operator::znode_client::ZnodeClient;
use zookeeper_operator::{OPERATOR_NAME, ZookeeperOperator};

use crate::support::pods::four_letter_word;

pub(crate) const NAMESPACE: &str = "default";
const NODE: &str = "strata-runner-0";
pub(crate) const CLUSTER: &str = "simple-zk";
const STATEFUL_SET: &str = "simple-zk-server-default";

/// Each server's ports through the agent's forwards of them.
#[derive(Debug)]
pub(crate) struct Forwarded(Forwards);

impl Forwarded {
    pub(crate) fn port(&self, server_fqdn: &str, port: u16) -> Option<String> {
        let forwards = self.0.read().ok()?;
        forwards
            .get(&format!("{server_fqdn}:{port}"))
            .map(ToString::to_string)
    }
}

/// A cluster's ensemble as the forwards of its servers' client ports, in place of its
/// client Service, which has no address on this host.
impl EnsembleAddress for Forwarded {
    fn hosts(&self, _cluster: &ZookeeperCluster, port: u16) -> String {
        (0..3)
            .filter_map(|ordinal| self.port(&server_fqdn(ordinal), port))
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl ServerAddress for Forwarded {
    fn address(&self, server_fqdn: &str) -> String {
        self.port(server_fqdn, 7000)
            .unwrap_or_else(|| format!("{server_fqdn}:7000"))
    }
}

/// The FQDN of the server with `ordinal`.
pub(crate) fn server_fqdn(ordinal: u32) -> String {
    format!("{STATEFUL_SET}-{ordinal}.{STATEFUL_SET}.{NAMESPACE}.svc.cluster.local")
}

/// Waits until the StatefulSet has `replicas` Ready pods, all on its update revision,
/// and the cluster is Available and not Progressing.
pub(crate) async fn wait_settled(client: &kube::Client, replicas: i32, timeout: Duration) {
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), NAMESPACE);
    let clusters: Api<ZookeeperCluster> = Api::namespaced(client.clone(), NAMESPACE);
    let what = format!("{replicas} servers Ready on the update revision, Available");
    wait_until(&what, timeout, async || {
        let set = sets.get_opt(STATEFUL_SET).await.ok().flatten()?;
        let status = set.status?;
        let rolled = set.spec.replicas == Some(replicas)
            && status.observed_generation == set.metadata.generation
            && status.ready_replicas == Some(replicas)
            && status.updated_replicas == Some(replicas)
            && status.current_revision == status.update_revision;
        let cluster = clusters.get_status(CLUSTER).await.ok()?;
        let conditions = serde_json::to_value(cluster.status?).ok()?["conditions"].clone();
        let has = |kind: &str, value: &str| {
            conditions.as_array().is_some_and(|all| {
                all.iter()
                    .any(|condition| condition["type"] == kind && condition["status"] == value)
            })
        };
        (rolled && has("Available", "True") && has("Progressing", "False")).then_some(())
    })
    .await;
}

/// The operator on a real control plane, with the pod runner as its one node.
pub(crate) struct Operated {
    pub(crate) control_plane: ControlPlane,
    pub(crate) client: kube::Client,
    pub(crate) agent: NodeAgent,
    pub(crate) forwarded: Arc<Forwarded>,
    pub(crate) operator: RunningOperator,
}

impl Operated {
    /// The control plane, the CRDs, the runner's node and the operator, which reaches
    /// the servers through the node's forwards.
    pub(crate) async fn start() -> Self {
        let control_plane = ControlPlane::start(ControlPlaneOptions {
            nodes: 0,
            ..ControlPlaneOptions::default()
        })
        .await
        .unwrap_or_else(|error| panic!("the control plane starts: {error}"));
        control_plane
            .install_crds(&ZookeeperOperator::crds())
            .await
            .expect("the CRDs are established");
        let client = control_plane.client().await.expect("a client");
        let dir = tools::required_path(ZOOKEEPER_IMAGE).unwrap_or_else(|error| panic!("{error}"));
        let mut images = Images::default();
        images.add(&dir).unwrap_or_else(|error| panic!("{error}"));
        let runner = PodRunner::new(RunnerOptions::new(images))
            .unwrap_or_else(|error| panic!("the pod runner cannot start: {error}"));
        let agent = NodeAgent::start(client.clone(), NODE, runner)
            .await
            .unwrap_or_else(|error| panic!("{error}"));
        let forwarded = Arc::new(Forwarded(agent.forwards()));
        let operator_client = control_plane
            .cluster_admin_client(NAMESPACE, OPERATOR_NAME)
            .await
            .expect("the operator's identity");
        let server_address = forwarded.clone();
        let operator = RunningOperator::start(operator_client, OPERATOR_NAME, move |runtime| {
            let mut options = RunOptions::for_runtime(&runtime);
            options.ensemble_address = server_address.clone();
            options.server_address = server_address;
            zookeeper_operator::controller::run(runtime, options)
        });
        Self {
            control_plane,
            client,
            agent,
            forwarded,
            operator,
        }
    }

    /// Creates the cluster [`CLUSTER`] with `spec`.
    pub(crate) async fn create_cluster(&self, spec: serde_json::Value) {
        let cluster: ZookeeperCluster = serde_json::from_value(json!({
            "apiVersion": "zookeeper.strata.dev/v1alpha1",
            "kind": "ZookeeperCluster",
            "metadata": {"name": CLUSTER, "namespace": NAMESPACE},
            "spec": spec,
        }))
        .expect("a ZookeeperCluster");
        Api::<ZookeeperCluster>::namespaced(self.client.clone(), NAMESPACE)
            .create(&PostParams::default(), &cluster)
            .await
            .unwrap_or_else(|error| panic!("{error}"));
    }

    /// The CA the cluster's discovery ConfigMap publishes.
    pub(crate) async fn discovery_ca(&self) -> String {
        Api::<ConfigMap>::namespaced(self.client.clone(), NAMESPACE)
            .get(CLUSTER)
            .await
            .ok()
            .and_then(|config_map| config_map.data?.get("ca.crt").cloned())
            .expect("the CA in the discovery ConfigMap")
    }

    /// Stops the operator, the node's pods and the control plane.
    pub(crate) async fn stop(self) {
        drop(self.operator);
        self.agent.shutdown().await;
        drop(self.control_plane);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root, the control plane and the ZooKeeper image directory; run by cargo xtask test"]
async fn the_operator_grows_a_real_3_9_5_ensemble_from_one_server_to_three_and_serves_a_znode() {
    let operated = Operated::start().await;
    let (client, forwarded) = (operated.client.clone(), operated.forwarded.clone());

    let clusters: Api<ZookeeperCluster> = Api::namespaced(client.clone(), NAMESPACE);
    // Plaintext: the ZNode controller reaches the servers through loopback forwards,
    // whose addresses no certificate names.
    operated
        .create_cluster(json!({
            "clusterConfig": {"tls": {"enabled": false}},
            "servers": {"roleGroups": {"default": {"replicas": 1}}}
        }))
        .await;
    let started = Instant::now();
    wait_settled(&client, 1, Duration::from_secs(180)).await;
    eprintln!(
        "one server Available {:?} after the cluster's creation",
        started.elapsed()
    );

    let first = forwarded
        .port(&server_fqdn(0), 2181)
        .expect("server 0 is forwarded");
    let writer = ZnodeClient::connect(&first, Duration::from_secs(10))
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    writer
        .ensure_path("/written-before-the-growth")
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    drop(writer);

    let grow = json!({"spec": {"servers": {"roleGroups": {"default": {"replicas": 3}}}}});
    clusters
        .patch(CLUSTER, &PatchParams::default(), &Patch::Merge(&grow))
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let grown = Instant::now();
    wait_settled(&client, 3, Duration::from_secs(420)).await;
    eprintln!("grown to three servers in {:?}", grown.elapsed());

    // One leader, two followers, all on 3.9.5, and the znode on the newest server.
    let mut modes = Vec::new();
    for ordinal in 0..3 {
        let address = forwarded
            .port(&server_fqdn(ordinal), 2181)
            .expect("the server is forwarded")
            .parse()
            .expect("a socket address");
        // Available counts Ready pods; a server that just restarted may still be
        // joining the quorum ("not currently serving requests") when the host is busy.
        let what = format!("server {ordinal} serving srvr");
        let srvr = wait_until(&what, Duration::from_secs(60), async || {
            four_letter_word(address, "srvr", Duration::from_secs(5))
                .ok()
                .filter(|answer| answer.contains("Mode: "))
        })
        .await;
        assert!(srvr.contains("Zookeeper version: 3.9.5"), "{srvr}");
        modes.extend(
            srvr.lines()
                .filter_map(|line| line.strip_prefix("Mode: "))
                .map(str::to_owned),
        );
    }
    modes.sort();
    assert_eq!(modes, ["follower", "follower", "leader"]);
    let newest = forwarded
        .port(&server_fqdn(2), 2181)
        .expect("server 2 is forwarded");
    let reader = ZnodeClient::connect(&newest, Duration::from_secs(10))
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    assert!(
        reader
            .exists("/written-before-the-growth")
            .await
            .unwrap_or_else(|error| panic!("{error}")),
        "the znode written on one server is missing after the growth"
    );

    a_znode_gets_its_path_and_its_finalizer_removes_it(&client, &forwarded).await;
    operated.stop().await;
}

/// The ZNode controller against the grown real ensemble: a ZookeeperZnode gets its path
/// and a discovery ConfigMap naming it, and its deletion removes the path.
async fn a_znode_gets_its_path_and_its_finalizer_removes_it(
    client: &kube::Client,
    forwarded: &Forwarded,
) {
    let znodes: Api<ZookeeperZnode> = Api::namespaced(client.clone(), NAMESPACE);
    let znode: ZookeeperZnode = serde_json::from_value(json!({
        "apiVersion": "zookeeper.strata.dev/v1alpha1",
        "kind": "ZookeeperZnode",
        "metadata": {"name": "app-znode", "namespace": NAMESPACE},
        "spec": {"clusterRef": {"name": CLUSTER}}
    }))
    .expect("a ZookeeperZnode");
    let created = znodes
        .create(&PostParams::default(), &znode)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let path = format!("/znode-{}", created.metadata.uid.clone().expect("a uid"));
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    let published = wait_until(
        "the ZNode's discovery ConfigMap",
        Duration::from_secs(60),
        async || {
            config_maps
                .get_opt("app-znode")
                .await
                .ok()
                .flatten()?
                .data?
                .get("ZOOKEEPER")
                .cloned()
        },
    )
    .await;
    assert!(published.ends_with(&path), "{published}");
    let ensemble = forwarded
        .port(&server_fqdn(1), 2181)
        .expect("server 1 is forwarded");
    let check = ZnodeClient::connect(&ensemble, Duration::from_secs(10))
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    assert!(
        check
            .exists(&path)
            .await
            .unwrap_or_else(|error| panic!("{error}")),
        "{path} is not in the ensemble"
    );
    znodes
        .delete("app-znode", &DeleteParams::default())
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    wait_until(
        "the ZNode's deletion",
        Duration::from_secs(60),
        async || {
            znodes
                .get_opt("app-znode")
                .await
                .ok()?
                .is_none()
                .then_some(())
        },
    )
    .await;
    assert!(
        !check
            .exists(&path)
            .await
            .unwrap_or_else(|error| panic!("{error}")),
        "the finalizer left {path} in the ensemble"
    );
}
