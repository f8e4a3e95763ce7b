//! The reconcile benchmark of the Trino operator: 1,000 TrinoClusters (the example's
//! coordinator and two workers each) against the in-memory API, and `render` on its own
//! (`strata_testing::bench`). The example's two catalogs and the Secret the postgresql
//! one names are stored first; every cluster selects both.
//!
//! Run with `cargo bench -p trino-operator --bench reconcile`; see BENCHMARKS.md.

use std::process::ExitCode;

use k8s_openapi::api::core::v1::Secret;
use strata_operator::render::{documents_of_kind, parse_documents};
use strata_test_apiserver::TestApiServer;
use strata_testing::Harness;
use strata_testing::bench::{ReconcileBench, run};
use trino_operator::controller::cluster::ClusterContext;
use trino_operator::controller::run_with;
use trino_operator::crd::{TrinoCatalog, TrinoCluster};
use trino_operator::{OPERATOR_NAME, TrinoOperator};

const EXAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/trino/simple-trino.yaml"
);

fn main() -> ExitCode {
    run::<TrinoOperator, TrinoCluster>(ReconcileBench {
        title: "Trino operator",
        example: EXAMPLE,
        name_prefix: "trino",
        stored_resources: &[
            "trinoclusters.trino.strata.dev",
            "trinocatalogs.trino.strata.dev",
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

/// The operator, with the example's catalogs and their Secret in place.
fn start(server: TestApiServer) -> Harness {
    server.register::<TrinoCluster>();
    server.register::<TrinoCatalog>();
    let secret: Secret = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "trino-postgres", "namespace": "default"},
        "stringData": {"username": "bench", "password": "bench"}
    }))
    .unwrap_or_default();
    if let Err(error) = server.upsert(&secret) {
        eprintln!("storing the Secret failed: {error}");
    }
    let example = std::fs::read_to_string(EXAMPLE).unwrap_or_default();
    let catalogs = parse_documents(&example)
        .and_then(|documents| documents_of_kind::<TrinoCatalog>(&documents))
        .unwrap_or_else(|error| {
            eprintln!("the example's catalogs cannot be read: {error}");
            Vec::new()
        });
    for catalog in catalogs {
        if let Err(error) = server.upsert(&catalog) {
            eprintln!("storing a catalog failed: {error}");
        }
    }
    Harness::start(server, OPERATOR_NAME, |runtime| {
        run_with(runtime, ClusterContext::new("cluster.local"))
    })
}
