//! Reconcile tests of the Trino operator against the in-memory API: the operator runs
//! both controllers as in a cluster; the tests act as the user (clusters, catalogs,
//! Secrets) and as Kubernetes' own controllers (pods).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod bad_input;
mod catalogs;
mod creation;
mod exposure;
mod http_route;
mod monitoring;
mod security;
mod worker_roll;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use strata_test_apiserver::TestApiServer;
use strata_testing::Harness;
use strata_testing::wait::stored;
use trino_operator::OPERATOR_NAME;
use trino_operator::controller::cluster::ClusterContext;
use trino_operator::controller::run_with;
use trino_operator::crd::{TrinoCatalog, TrinoCluster};

/// The cluster's name in every test.
pub const CLUSTER: &str = "simple-trino";
/// The label the cluster selects its catalogs by.
pub const SELECTED: (&str, &str) = ("trino", "simple-trino");
/// The role groups' StatefulSets.
pub const STATEFUL_SETS: [&str; 2] = [
    "simple-trino-coordinator-default",
    "simple-trino-worker-default",
];
/// A Secret value that must never appear in anything the operator writes.
pub const PASSWORD: &str = "postgres-password-never-logged";

/// Starts the operator on `server`.
pub fn start_on(server: TestApiServer) -> Harness {
    Harness::start(server, OPERATOR_NAME, |runtime| {
        run_with(runtime, ClusterContext::new("cluster.local"))
    })
}

/// Starts the operator on a fresh in-memory API.
pub fn start() -> Harness {
    let server = TestApiServer::new();
    server.register::<TrinoCluster>();
    server.register::<TrinoCatalog>();
    start_on(server)
}

/// The example's spec: one coordinator, two workers, catalogs labelled
/// `trino=simple-trino`; `patch` replaces top-level keys.
pub fn spec(patch: Value) -> Value {
    let mut spec = json!({
        "clusterConfig": {"catalogLabelSelector": {"matchLabels": {SELECTED.0: SELECTED.1}}},
        "coordinators": {"roleGroups": {"default": {"replicas": 1}}},
        "workers": {"roleGroups": {"default": {"replicas": 2}}}
    });
    if let (Some(spec), Value::Object(patch)) = (spec.as_object_mut(), patch) {
        spec.extend(patch);
    }
    spec
}

/// Creates the cluster through the API, as `kubectl apply` would.
pub async fn create_cluster(harness: &Harness, spec: Value) {
    strata_testing::manifests::create::<TrinoCluster>(harness, CLUSTER, spec).await;
}

/// Merges `spec` into the cluster's spec.
pub async fn patch_spec(harness: &Harness, spec: Value) {
    strata_testing::manifests::patch_spec::<TrinoCluster>(harness, CLUSTER, spec).await;
}

/// Creates the catalog `name` with `labels` and `spec`.
pub async fn create_catalog(harness: &Harness, name: &str, labels: Value, spec: Value) {
    let catalog: TrinoCatalog = serde_json::from_value(json!({
        "apiVersion": "trino.strata.dev/v1alpha1",
        "kind": "TrinoCatalog",
        "metadata": {"name": name, "namespace": harness.namespace, "labels": labels},
        "spec": spec
    }))
    .expect("the catalog deserialises");
    Api::<TrinoCatalog>::namespaced(harness.server.client(), harness.namespace)
        .create(&PostParams::default(), &catalog)
        .await
        .expect("the catalog is created");
}

/// The example's two catalogs, selected by the cluster.
pub async fn create_example_catalogs(harness: &Harness) {
    let selected = json!({SELECTED.0: SELECTED.1});
    create_catalog(
        harness,
        "tpch",
        selected.clone(),
        json!({"connector": {"tpch": {}}}),
    )
    .await;
    create_catalog(
        harness,
        "postgres",
        selected,
        json!({"connector": {"postgresql": {
            "connectionUrl": "jdbc:postgresql://postgresql:5432/sales",
            "credentialsSecret": "trino-postgres"
        }}}),
    )
    .await;
}

/// The postgresql catalog's Secret.
pub async fn create_postgres_secret(harness: &Harness) {
    strata_testing::manifests::create_secret(
        harness,
        "trino-postgres",
        &[("username", "trino"), ("password", PASSWORD)],
    )
    .await;
}

/// The catalog files the cluster's pods mount, by file name.
pub fn catalog_files(harness: &Harness) -> Vec<String> {
    stored::<ConfigMap>(harness, "simple-trino-catalog")
        .data
        .unwrap_or_default()
        .into_keys()
        .collect()
}

/// The annotation `key` of each role group's pod template.
pub fn template_annotations(harness: &Harness, key: &str) -> Vec<Option<String>> {
    STATEFUL_SETS
        .iter()
        .map(|name| {
            stored::<StatefulSet>(harness, name)
                .spec
                .template
                .metadata
                .and_then(|meta| meta.annotations)
                .and_then(|annotations| annotations.get(key).cloned())
        })
        .collect()
}

/// The config hash of each role group's pod template.
pub fn template_hashes(harness: &Harness) -> Vec<String> {
    template_annotations(harness, "strata.dev/config-hash")
        .into_iter()
        .map(Option::unwrap_or_default)
        .collect()
}
