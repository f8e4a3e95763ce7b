//! The running operator, cluster manifests and the names of the objects the operator
//! builds for them.

pub mod conditions;
pub mod inspect;
pub mod workload;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use strata_test_apiserver::TestApiServer;
pub use strata_testing::wait::{eventually, stored, stored_names, wait_for, wait_for_event};
pub use strata_testing::{Harness, TIMEOUT};
use zookeeper_operator::OPERATOR_NAME;
use zookeeper_operator::controller::ZNODE_CHECK_PERIOD;
use zookeeper_operator::controller::leader::FixedServerAddress;
use zookeeper_operator::controller::znode::{ClientServiceAddress, EnsembleAddress};
use zookeeper_operator::controller::{self, RunOptions};
use zookeeper_operator::crd::{ZookeeperCluster, ZookeeperZnode};

/// The namespace the harness's operator watches; every test object lives here.
pub const NAMESPACE: &str = "default";
/// The cluster DNS domain the operator is started with.
pub const CLUSTER_DOMAIN: &str = "cluster.local";

/// Starts both controllers of the operator on a fresh in-memory API server; ensembles
/// are reached through their client Services, as in a real cluster.
pub fn start() -> Harness {
    start_with(Arc::new(ClientServiceAddress {
        cluster_domain: CLUSTER_DOMAIN.to_owned(),
    }))
}

/// Starts the operator with the ZNode controller reaching ensembles at `ensemble_address`.
pub fn start_with(ensemble_address: Arc<dyn EnsembleAddress>) -> Harness {
    let server = TestApiServer::new();
    server.register::<ZookeeperCluster>();
    server.register::<ZookeeperZnode>();
    let options = RunOptions {
        cluster_domain: CLUSTER_DOMAIN.to_owned(),
        ensemble_address,
        zookeeper_timeout: Duration::from_secs(1),
        znode_check_period: ZNODE_CHECK_PERIOD,
        // The pods run no ZooKeeper: the leader lookup finds a refused port instead of
        // resolving cluster DNS names on the test machine.
        server_address: Arc::new(FixedServerAddress(nobody_listens())),
    };
    Harness::start(server, OPERATOR_NAME, move |runtime| {
        controller::run(runtime, options)
    })
}

/// A loopback address where nothing listens: a connection there is refused at once.
fn nobody_listens() -> String {
    let port = strata_testing::postgres::free_port("127.0.0.1").expect("a free loopback port");
    format!("127.0.0.1:{port}")
}

/// A cluster manifest in the test namespace; `spec` is the JSON users would write.
pub fn cluster(name: &str, spec: Value) -> ZookeeperCluster {
    let spec = serde_json::from_value(spec).expect("the test spec deserialises");
    let mut cluster = ZookeeperCluster::new(name, spec);
    cluster.metadata.namespace = Some(NAMESPACE.to_owned());
    cluster
}

/// The spec of one role group `default` with `replicas` servers.
pub fn single_group_spec(replicas: u16) -> Value {
    json!({"servers": {"roleGroups": {"default": {"replicas": replicas}}}})
}

/// The spec of two role groups: `primary` (3 servers, ids 1-3) and `secondary`
/// (2 servers, ids 10-11).
pub fn two_group_spec() -> Value {
    json!({"servers": {"roleGroups": {
        "primary": {"replicas": 3},
        "secondary": {"replicas": 2, "config": {"myidOffset": 10}}
    }}})
}

fn clusters(harness: &Harness) -> Api<ZookeeperCluster> {
    Api::namespaced(harness.server.client(), harness.namespace)
}

/// Creates a cluster through the API, as `kubectl apply` would.
pub async fn create(harness: &Harness, cluster: &ZookeeperCluster) -> ZookeeperCluster {
    clusters(harness)
        .create(&PostParams::default(), cluster)
        .await
        .expect("the cluster is created")
}

/// Merges `spec` into a cluster's spec through the API (a JSON merge patch).
pub async fn patch_spec(harness: &Harness, name: &str, spec: Value) {
    clusters(harness)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": spec })),
        )
        .await
        .expect("the cluster spec is patched");
}

/// Deletes a cluster through the API, as `kubectl delete` would.
pub async fn delete_cluster(harness: &Harness, name: &str) {
    clusters(harness)
        .delete(name, &DeleteParams::background())
        .await
        .expect("the cluster is deleted");
}

/// The names of the objects the operator builds for a cluster, by kind.
#[derive(Clone, Debug)]
pub struct ExpectedObjects {
    /// The cluster's name.
    pub cluster: String,
    /// Its role groups.
    pub groups: Vec<String>,
    /// Whether the role's PodDisruptionBudget is expected.
    pub pdb: bool,
}

impl ExpectedObjects {
    /// The objects of `cluster` with `groups` and the default (enabled) PDB.
    pub fn new(cluster: &str, groups: &[&str]) -> Self {
        Self {
            cluster: cluster.to_owned(),
            groups: groups.iter().map(|&group| group.to_owned()).collect(),
            pdb: true,
        }
    }

    /// `<cluster>-server-<group>` for every group.
    pub fn group_objects(&self) -> BTreeSet<String> {
        self.groups
            .iter()
            .map(|group| format!("{}-server-{group}", self.cluster))
            .collect()
    }

    /// The StatefulSets.
    pub fn stateful_sets(&self) -> BTreeSet<String> {
        self.group_objects()
    }

    /// Role group ConfigMaps and the discovery ConfigMap.
    pub fn config_maps(&self) -> BTreeSet<String> {
        let mut names = self.group_objects();
        names.insert(self.cluster.clone());
        names
    }

    /// Headless and metrics Services per group, and the client Service.
    pub fn services(&self) -> BTreeSet<String> {
        let mut names = self.group_objects();
        names.extend(
            self.group_objects()
                .iter()
                .map(|name| format!("{name}-metrics")),
        );
        names.insert(self.cluster.clone());
        names
    }

    /// The role's PodDisruptionBudget, unless disabled.
    pub fn pdbs(&self) -> BTreeSet<String> {
        if self.pdb {
            BTreeSet::from([format!("{}-server", self.cluster)])
        } else {
            BTreeSet::new()
        }
    }

    /// Every expected object as `Kind/name`.
    pub fn all(&self) -> BTreeSet<String> {
        let tagged = |kind: &str, names: BTreeSet<String>| {
            names
                .into_iter()
                .map(|name| format!("{kind}/{name}"))
                .collect::<Vec<_>>()
        };
        [
            tagged("ConfigMap", self.config_maps()),
            tagged("Service", self.services()),
            tagged("StatefulSet", self.stateful_sets()),
            tagged("PodDisruptionBudget", self.pdbs()),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// Every ConfigMap, Service, StatefulSet and PodDisruptionBudget in the test namespace,
/// as `Kind/name`.
pub fn stored_objects(harness: &Harness) -> BTreeSet<String> {
    let tagged = |kind: &str, names: BTreeSet<String>| {
        names
            .into_iter()
            .map(|name| format!("{kind}/{name}"))
            .collect::<Vec<_>>()
    };
    [
        tagged("ConfigMap", stored_names::<ConfigMap>(harness)),
        tagged("Service", stored_names::<Service>(harness)),
        tagged("StatefulSet", stored_names::<StatefulSet>(harness)),
        tagged(
            "PodDisruptionBudget",
            stored_names::<PodDisruptionBudget>(harness),
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Waits until exactly the expected objects exist (nothing missing, nothing extra).
pub async fn wait_for_objects(harness: &Harness, expected: &ExpectedObjects) {
    let want = expected.all();
    eventually(
        &format!("the objects {want:?}"),
        || (stored_objects(harness) == want).then_some(()),
        || stored_objects(harness),
    )
    .await;
}

/// A running operator with cluster `zk` of `spec` created and the objects of its
/// role groups `groups` applied.
pub async fn started(spec: Value, groups: &[&str]) -> Harness {
    let harness = start();
    create(&harness, &cluster("zk", spec)).await;
    wait_for_objects(&harness, &ExpectedObjects::new("zk", groups)).await;
    harness
}

/// Clears the request log, touches the cluster `zk` (an annotation, `value`), and waits
/// for the reconcile that follows to settle; false if none followed.
pub async fn touch_and_settle(harness: &Harness, value: &str) -> bool {
    harness.server.reset_requests();
    let before = harness.reconciles();
    harness
        .server
        .modify::<ZookeeperCluster>(harness.namespace, "zk", |cluster| {
            cluster
                .annotations_mut()
                .insert("test.strata.dev/touched".into(), value.to_owned());
        })
        .expect("touch the cluster");
    let reconciled = harness.wait_for_reconcile_after(before).await;
    harness.settle().await;
    reconciled
}
