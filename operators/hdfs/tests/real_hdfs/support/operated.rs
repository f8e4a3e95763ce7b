//! The HDFS operator itself, in the test's process, on the real control plane, with the
//! pod runner as the node that runs the pods: the real StatefulSet controller creates
//! them, the runner runs the real daemons and reports their status, and the operator
//! reaches the namenodes' HTTP servers through the runner's forwards, as an in-cluster
//! operator reaches them through the pod network.

use std::sync::Arc;
use std::time::Duration;

use hdfs_operator::OPERATOR_NAME;
use hdfs_operator::controller::cluster::ClusterContext;
use hdfs_operator::controller::namenodes::NameNodeHttp;
use hdfs_operator::crd::HdfsCluster;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::PostParams;
use serde_json::Value;
use strata_operator::cli::Operator;
use strata_pod_runner::agent::NodeAgent;
use strata_pod_runner::manifest::apply_all;
use strata_testing::control_plane::{
    ControlPlane, ControlPlaneOptions, RunningOperator, wait_until,
};

use super::{NAMESPACE, ZOOKEEPER_POD, example_cluster, runner};

/// The node the runner serves.
const NODE: &str = "strata-runner-0";
/// How often the operator asks the namenodes while it waits on them; a real
/// operator's 15 s would only make the test slower.
const NAMENODE_CHECK: Duration = Duration::from_secs(3);
/// How often the namenodes check a decommission's progress (Hadoop's default: 30 s).
const DECOMMISSION_INTERVAL: &str = "dfs.namenode.decommission.interval";

/// A condition of an HdfsCluster, as the tests read it.
#[derive(Debug)]
pub struct Condition {
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// The CamelCase reason.
    pub reason: String,
    /// The sentence.
    pub message: String,
}

/// A control plane, the runner as its node, ZooKeeper, and the HDFS operator.
/// Fields drop in order: the operator and the node before the control plane.
pub struct Operated {
    pub operator: RunningOperator,
    pub agent: NodeAgent,
    pub client: kube::Client,
    pub control_plane: ControlPlane,
}

impl Operated {
    /// Starts everything but the HdfsCluster.
    pub async fn start() -> Self {
        let control_plane = ControlPlane::start(ControlPlaneOptions {
            nodes: 0,
            ..ControlPlaneOptions::default()
        })
        .await
        .unwrap_or_else(|error| panic!("the control plane starts: {error}"));
        control_plane
            .install_crds(&hdfs_operator::HdfsOperator::crds())
            .await
            .expect("the CRDs are established");
        let client = control_plane.client().await.expect("a client");
        let agent = NodeAgent::start(client.clone(), NODE, runner())
            .await
            .unwrap_or_else(|error| panic!("{error}"));
        let (discovery, client_certificate) = start_zookeeper_on(&agent).await;
        Api::<ConfigMap>::namespaced(client.clone(), NAMESPACE)
            .create(
                &PostParams::default(),
                &serde_json::from_value(discovery).expect("a ConfigMap"),
            )
            .await
            .expect("the ZNode's discovery ConfigMap is created");
        Api::<Secret>::namespaced(client.clone(), NAMESPACE)
            .create(
                &PostParams::default(),
                &serde_json::from_value(client_certificate).expect("a Secret"),
            )
            .await
            .expect("the ZNode's client certificate Secret is created");
        let operator_client = control_plane
            .cluster_admin_client(NAMESPACE, OPERATOR_NAME)
            .await
            .expect("the operator's identity");
        let forwards = agent.forwards();
        let operator = RunningOperator::start(operator_client, OPERATOR_NAME, move |runtime| {
            let context = ClusterContext {
                cluster_domain: runtime.cluster_domain.clone(),
                namenodes: NameNodeHttp {
                    timeout: Duration::from_secs(2),
                    address: Arc::new(move |namenode| {
                        let address = namenode.pod_http_address();
                        let local = forwards
                            .read()
                            .ok()
                            .and_then(|forwards| forwards.get(&address).copied());
                        local.map_or(address, |local| local.to_string())
                    }),
                },
                namenode_check: NAMENODE_CHECK,
            };
            hdfs_operator::controller::run_with(runtime, context)
        });
        Self {
            control_plane,
            client,
            agent,
            operator,
        }
    }

    /// Creates the example cluster with `datanodes` datanodes.
    pub async fn create_cluster(&self, datanodes: u16) -> HdfsCluster {
        let mut cluster = example_cluster();
        cluster.metadata.uid = None;
        if let Some(group) = cluster.spec.data_nodes.role_groups.get_mut("default") {
            group.replicas = Some(datanodes);
        }
        // The namenodes look at a decommission's progress every 30 s unless told
        // otherwise, so a datanode with a few blocks is decommissioned up to 30 s after
        // its last block is copied. A user's override, through the operator, as a
        // small cluster would set it.
        cluster
            .spec
            .name_nodes
            .config_overrides
            .hdfs_site_xml
            .insert(DECOMMISSION_INTERVAL.to_owned(), "3s".to_owned());
        self.clusters()
            .create(&PostParams::default(), &cluster)
            .await
            .unwrap_or_else(|error| panic!("{error}"))
    }

    /// The HdfsClusters.
    pub fn clusters(&self) -> Api<HdfsCluster> {
        Api::namespaced(self.client.clone(), NAMESPACE)
    }

    /// A condition of the cluster `name`.
    pub async fn condition(&self, name: &str, kind: &str) -> Option<Condition> {
        let cluster = self.clusters().get_status(name).await.ok()?;
        let status = serde_json::to_value(cluster.status?).ok()?;
        let condition = status["conditions"]
            .as_array()?
            .iter()
            .find(|condition| condition["type"] == kind)?
            .clone();
        let text = |field: &str| condition[field].as_str().unwrap_or_default().to_owned();
        Some(Condition {
            status: text("status"),
            reason: text("reason"),
            message: text("message"),
        })
    }

    /// Waits until the cluster `name`'s condition `kind` is `accepted`; returns it.
    pub async fn wait_condition(
        &self,
        name: &str,
        kind: &str,
        timeout: Duration,
        accepted: impl Fn(&Condition) -> bool,
    ) -> Condition {
        let what = format!("{kind} of the HdfsCluster {name} as expected");
        wait_until(&what, timeout, async || {
            self.condition(name, kind)
                .await
                .filter(|condition| accepted(condition))
        })
        .await
    }

    /// Waits for the example cluster's `Available` condition to be `True`.
    pub async fn wait_available(&self, timeout: Duration) {
        self.wait_condition("simple-hdfs", "Available", timeout, |condition| {
            condition.status == "True"
        })
        .await;
    }

    /// A StatefulSet's spec replicas.
    pub async fn replicas(&self, set: &str) -> Option<i32> {
        Api::<StatefulSet>::namespaced(self.client.clone(), NAMESPACE)
            .get(set)
            .await
            .ok()?
            .spec
            .replicas
    }
}

/// Runs ZooKeeper on the agent's runner, outside the API (only HDFS is under test),
/// creates the ZNode's path with the ZooKeeper operator's client, and returns the
/// ZNode's discovery ConfigMap and client certificate Secret for the API.
async fn start_zookeeper_on(agent: &NodeAgent) -> (Value, Value) {
    let runner = agent.runner();
    let mut runner = runner.lock().await;
    let objects = super::zookeeper_objects();
    let (discovery, zookeeper): (Vec<Value>, Vec<Value>) =
        objects.into_iter().partition(|object| {
            object["metadata"]["name"] == "hdfs-znode"
                || object["metadata"]["name"] == "hdfs-znode-client-tls"
        });
    apply_all(&mut runner, &zookeeper).unwrap_or_else(|error| panic!("{error}"));
    drop(runner);
    let runner = agent.runner();
    wait_until("ZooKeeper Ready", Duration::from_secs(180), async || {
        runner
            .lock()
            .await
            .status(NAMESPACE, ZOOKEEPER_POD)
            .filter(|status| status.ready())
            .map(drop)
    })
    .await;
    let runner = runner.lock().await;
    super::create_znode_path(&runner).await;
    let find = |kind: &str| {
        let mut object = discovery
            .iter()
            .find(|object| object["kind"] == kind)
            .cloned()
            .unwrap_or_else(|| panic!("the ZNode's {kind}"));
        if let Some(metadata) = object["metadata"].as_object_mut() {
            metadata.remove("ownerReferences");
        }
        object
    };
    (find("ConfigMap"), find("Secret"))
}
