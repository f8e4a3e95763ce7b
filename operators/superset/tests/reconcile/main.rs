//! Reconcile tests of the Superset operator against the in-memory API: the operator
//! runs as in a cluster; the tests act as the user (clusters, Secrets) and as
//! Kubernetes' own controllers (pods).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod celery;
mod creation;
mod database_tls;
mod exposure;
mod secret_key;
mod secrets;
mod trino_connections;

use serde_json::{Value, json};
use strata_test_apiserver::TestApiServer;
use strata_testing::Harness;
use superset_operator::OPERATOR_NAME;
use superset_operator::controller::cluster::ClusterContext;
use superset_operator::controller::run_with;
use superset_operator::crd::SupersetCluster;

/// The cluster's name in every test.
pub const CLUSTER: &str = "simple-superset";

/// Starts the operator on `server`.
pub fn start_on(server: TestApiServer) -> Harness {
    Harness::start(server, OPERATOR_NAME, |runtime| {
        run_with(
            runtime,
            ClusterContext {
                cluster_domain: "cluster.local".to_owned(),
            },
        )
    })
}

/// Starts the operator on a fresh in-memory API.
pub fn start() -> Harness {
    let server = TestApiServer::new();
    server.register::<SupersetCluster>();
    start_on(server)
}

/// The example's spec: PostgreSQL with the Secret `superset-db`, the admin from
/// `superset-admin`, two web servers; `patch` replaces top-level keys.
pub fn spec(patch: Value) -> Value {
    let mut spec = json!({
        "clusterConfig": {
            "metadataDatabase": {"postgresql": {
                "host": "postgresql.default.svc", "database": "superset",
                "credentialsSecret": "superset-db"
            }},
            "adminUser": {"secretName": "superset-admin"}
        },
        "nodes": {"roleGroups": {"default": {"replicas": 2}}}
    });
    if let (Some(spec), Value::Object(patch)) = (spec.as_object_mut(), patch) {
        spec.extend(patch);
    }
    spec
}

/// Creates the cluster through the API, as `kubectl apply` would.
pub async fn create_cluster(harness: &Harness, spec: Value) {
    strata_testing::manifests::create::<SupersetCluster>(harness, CLUSTER, spec).await;
}

/// Merges `spec` into the cluster's spec.
pub async fn patch_spec(harness: &Harness, spec: Value) {
    strata_testing::manifests::patch_spec::<SupersetCluster>(harness, CLUSTER, spec).await;
}

/// Creates the Secret `name` with `data`, as the user would.
pub use strata_testing::manifests::create_secret;

/// The user's two Secrets.
pub async fn create_user_secrets(harness: &Harness) {
    create_secret(
        harness,
        "superset-db",
        &[
            ("username", "superset"),
            ("password", "db-password-never-logged"),
        ],
    )
    .await;
    create_secret(
        harness,
        "superset-admin",
        &[
            ("username", "admin"),
            ("firstname", "Superset"),
            ("lastname", "Admin"),
            ("email", "admin@example.com"),
            ("password", "admin-password-never-logged"),
        ],
    )
    .await;
}
