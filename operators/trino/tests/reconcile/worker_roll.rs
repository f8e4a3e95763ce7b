//! The workers' roll (issue 20, item 9): a catalog change restarts every worker at
//! once, without a drain, while the coordinator restarts; any other change drains
//! one worker at a time, the highest ordinal first.

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use pretty_assertions::assert_eq;
use serde_json::json;
use strata_testing::Harness;
use strata_testing::workloads::run_until_settled;

use crate::{SELECTED, create_catalog, create_cluster, patch_spec, spec};

const WORKERS: [&str; 3] = [
    "simple-trino-worker-default-0",
    "simple-trino-worker-default-1",
    "simple-trino-worker-default-2",
];

/// The workers the operator has deleted and the simulated StatefulSet controller not
/// yet recreated.
fn deleted_workers(harness: &Harness) -> Vec<&'static str> {
    let pods: Vec<String> = harness
        .server
        .list_typed::<Pod>()
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    WORKERS
        .into_iter()
        .filter(|worker| !pods.iter().any(|pod| pod == worker))
        .collect()
}

/// Lets the operator and the simulated StatefulSet controller take turns until they
/// settle; returns the workers each operator turn deleted, for the turns that
/// deleted any.
async fn restart_steps(harness: &Harness) -> Vec<Vec<&'static str>> {
    let mut steps = Vec::new();
    run_until_settled(harness, || {
        let deleted = deleted_workers(harness);
        if !deleted.is_empty() {
            steps.push(deleted);
        }
    })
    .await;
    steps
}

#[tokio::test]
async fn a_catalog_change_restarts_every_worker_at_once_and_other_changes_drain_one_at_a_time() {
    let harness = crate::start();
    create_cluster(
        &harness,
        spec(json!({"workers": {"roleGroups": {"default": {"replicas": 3}}}})),
    )
    .await;
    run_until_settled(&harness, || {}).await;

    create_catalog(
        &harness,
        "tpch",
        json!({SELECTED.0: SELECTED.1}),
        json!({"connector": {"tpch": {}}}),
    )
    .await;
    assert_eq!(
        restart_steps(&harness).await,
        [WORKERS.to_vec()],
        "every worker in one step"
    );

    patch_spec(
        &harness,
        json!({"workers": {
            "configOverrides": {"config.properties": {"task.max-worker-threads": "8"}},
            "roleGroups": {"default": {"replicas": 3}}
        }}),
    )
    .await;
    assert_eq!(
        restart_steps(&harness).await,
        [[WORKERS[2]], [WORKERS[1]], [WORKERS[0]]],
        "one at a time, the highest ordinal first"
    );
}
