//! The reconcile benchmark of the Superset operator: 1,000 SupersetClusters (the
//! example's two web servers each) against the in-memory API, and `render` on its own
//! (`strata_testing::bench`). The two Secrets the clusters name are stored first, with
//! every key the operator checks.
//!
//! Run with `cargo bench -p superset-operator --bench reconcile`; see BENCHMARKS.md.

use std::process::ExitCode;

use k8s_openapi::api::core::v1::Secret;
use strata_test_apiserver::TestApiServer;
use strata_testing::Harness;
use strata_testing::bench::{ReconcileBench, run};
use superset_operator::controller::cluster::ClusterContext;
use superset_operator::controller::run_with;
use superset_operator::crd::SupersetCluster;
use superset_operator::{OPERATOR_NAME, SupersetOperator};

fn main() -> ExitCode {
    run::<SupersetOperator, SupersetCluster>(ReconcileBench {
        title: "Superset operator",
        example: concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/superset/simple-superset.yaml"
        ),
        name_prefix: "superset",
        stored_resources: &[
            "supersetclusters.superset.strata.dev",
            "configmaps",
            "secrets",
            "services",
            "statefulsets.apps",
            "poddisruptionbudgets.policy",
            "events.events.k8s.io",
            "events",
        ],
        start,
    })
}

/// The operator, with the example's Secrets in place.
fn start(server: TestApiServer) -> Harness {
    server.register::<SupersetCluster>();
    let database = serde_json::json!({"username": "bench", "password": "bench"});
    let admin = serde_json::json!({
        "username": "bench", "firstname": "B", "lastname": "B",
        "email": "bench@example.com", "password": "bench"
    });
    for (name, keys) in [("superset-db", database), ("superset-admin", admin)] {
        let secret: Secret = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": "default"},
            "stringData": keys
        }))
        .unwrap_or_default();
        if let Err(error) = server.upsert(&secret) {
            eprintln!("storing the Secret {name} failed: {error}");
        }
    }
    Harness::start(server, OPERATOR_NAME, |runtime| {
        run_with(
            runtime,
            ClusterContext {
                cluster_domain: "cluster.local".to_owned(),
            },
        )
    })
}
