//! The ZooKeeper operator on the real control plane (`strata_testing::control_plane`):
//! its PodDisruptionBudget (ADR030) against the real disruption controller, the real
//! eviction API and the real `kubectl drain`; an ensemble growing through the real
//! StatefulSet controller; a malformed cluster the API server accepts, reported
//! without stopping the others; and the CA outliving its cluster (`ca_retention`).
//!
//! KWOK plays the kubelets, so the pods run no ZooKeeper: the operator's leader lookup
//! is pointed at a loopback port where nothing listens ([`nobody_listens`]), which is
//! what it sees of a server that does not answer.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod ca_retention;
mod exposure;
mod growth;
mod malformed;
mod monitoring;
mod pdb;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams};
use serde_json::{Value, json};
use strata_operator::cli::Operator;
use strata_testing::control_plane::{
    ControlPlane, ControlPlaneOptions, RunningOperator, wait_until,
};
use zookeeper_operator::controller::leader::FixedServerAddress;
use zookeeper_operator::controller::{RunOptions, run};
use zookeeper_operator::crd::ZookeeperCluster;
use zookeeper_operator::{OPERATOR_NAME, ZookeeperOperator};

/// The identity the operator runs as in these tests.
const OPERATOR_USER: &str = "system:serviceaccount:default:zookeeper-operator";

/// How long one step of a scenario may take.
const TIMEOUT: Duration = Duration::from_secs(90);

/// A control plane with the ZooKeeper CRDs, and an admin client.
struct Cluster {
    control_plane: ControlPlane,
    client: kube::Client,
}

impl Cluster {
    async fn start(options: ControlPlaneOptions) -> Self {
        let control_plane = ControlPlane::start(options)
            .await
            .unwrap_or_else(|error| panic!("the control plane starts: {error}"));
        control_plane
            .install_crds(&ZookeeperOperator::crds())
            .await
            .expect("the CRDs are established");
        let client = control_plane.client().await.expect("a client");
        Self {
            control_plane,
            client,
        }
    }

    /// The operator's controllers in this process, as the ServiceAccount
    /// [`OPERATOR_USER`] names, so the audit log tells its requests apart.
    async fn run_operator(&self) -> RunningOperator {
        let client = self
            .control_plane
            .cluster_admin_client("default", OPERATOR_NAME)
            .await
            .expect("the operator's own identity");
        run_operator_as(client)
    }
}

/// The operator's controllers, as `client` (from [`Cluster::run_operator`]'s identity),
/// for a test that restarts the operator.
fn run_operator_as(client: kube::Client) -> RunningOperator {
    let nobody = FixedServerAddress(nobody_listens());
    RunningOperator::start(client, OPERATOR_NAME, move |runtime| {
        let options = RunOptions {
            server_address: Arc::new(nobody),
            ..RunOptions::for_runtime(&runtime)
        };
        run(runtime, options)
    })
}

/// A loopback address where nothing listens: a connection there is refused at once.
fn nobody_listens() -> String {
    let port = strata_testing::postgres::free_port("127.0.0.1").expect("a free loopback port");
    format!("127.0.0.1:{port}")
}

/// A ZookeeperCluster with one role group of `replicas` servers.
fn zookeeper_cluster(name: &str, replicas: u16) -> ZookeeperCluster {
    serde_json::from_value(json!({
        "apiVersion": "zookeeper.strata.dev/v1alpha1", "kind": "ZookeeperCluster",
        "metadata": {"name": name},
        "spec": {"servers": {"roleGroups": {"default": {"replicas": replicas}}}}
    }))
    .expect("a ZookeeperCluster")
}

/// The object `kind/name` as JSON, `None` while it does not exist.
fn stored(control_plane: &ControlPlane, object: &str) -> Option<Value> {
    let json = control_plane.kubectl(&["get", object, "-o", "json"]).ok()?;
    serde_json::from_str(&json).ok()
}

/// The first Event about `object` with `reason`, waited for.
async fn event_with_reason(client: &kube::Client, object: &str, reason: &str) -> Event {
    wait_until(&format!("the {reason} Event"), TIMEOUT, async || {
        let events = Api::<Event>::namespaced(client.clone(), "default")
            .list(&ListParams::default().fields(&format!("involvedObject.name={object}")))
            .await
            .ok()?;
        events
            .items
            .into_iter()
            .find(|event| event.reason.as_deref() == Some(reason))
    })
    .await
}

/// The condition `type_` of the cluster `simple`.
fn condition(control_plane: &ControlPlane, type_: &str) -> Value {
    stored(control_plane, "zookeepercluster/simple")
        .and_then(|cluster| {
            cluster["status"]["conditions"]
                .as_array()?
                .iter()
                .find(|condition| condition["type"] == type_)
                .cloned()
        })
        .unwrap_or(Value::Null)
}
