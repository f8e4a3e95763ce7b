//! A new cluster: every object, Available through the pods, the catalogs in use on both
//! sides, the shared secret created once, and stop, pause and PDB.

use std::collections::BTreeSet;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use pretty_assertions::assert_eq;
use serde_json::json;
use strata_status::{ConditionStatus, ConditionType};
use strata_testing::wait::{eventually, stored, stored_names, wait_for_condition};
use strata_testing::workloads::run_until_settled;

use crate::{
    CLUSTER, catalog_files, create_cluster, create_example_catalogs, create_postgres_secret,
    patch_spec, spec, start, start_on,
};
use trino_operator::crd::{TrinoCatalog, TrinoCluster};

fn names(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

#[tokio::test]
async fn a_new_cluster_gets_every_object_and_becomes_available() {
    let harness = start();
    create_postgres_secret(&harness).await;
    create_example_catalogs(&harness).await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;

    assert_eq!(
        stored_names::<StatefulSet>(&harness),
        names(&[
            "simple-trino-coordinator-default",
            "simple-trino-worker-default"
        ])
    );
    assert_eq!(
        stored_names::<ConfigMap>(&harness),
        names(&[
            "simple-trino",
            "simple-trino-access-control",
            "simple-trino-catalog",
            "simple-trino-coordinator-default",
            "simple-trino-worker-default"
        ])
    );
    assert_eq!(
        stored_names::<Service>(&harness),
        names(&[
            "simple-trino-coordinator",
            "simple-trino-coordinator-default",
            "simple-trino-coordinator-default-metrics",
            "simple-trino-worker-default",
            "simple-trino-worker-default-metrics"
        ])
    );
    assert_eq!(
        stored_names::<PodDisruptionBudget>(&harness),
        names(&["simple-trino-coordinator", "simple-trino-worker"])
    );
    let secrets = stored_names::<Secret>(&harness);
    for secret in [
        "simple-trino-internal-secret",
        "simple-trino-metrics",
        "simple-trino-ca",
        "simple-trino-coordinator-default-tls",
        "simple-trino-worker-default-tls",
    ] {
        assert!(secrets.contains(secret), "{secret} in {secrets:?}");
    }
    assert_eq!(
        catalog_files(&harness),
        ["postgres.properties", "tpch.properties"]
    );
    wait_for_condition::<TrinoCluster>(
        &harness,
        CLUSTER,
        ConditionType::Available,
        ConditionStatus::True,
    )
    .await;
    let status = stored::<TrinoCluster>(&harness, CLUSTER)
        .status
        .unwrap_or_default();
    assert_eq!(status.deployed_product_version.as_deref(), Some("483"));
    assert_eq!(status.product.catalogs, ["postgres", "tpch"]);

    for catalog in ["postgres", "tpch"] {
        wait_for_condition::<TrinoCatalog>(
            &harness,
            catalog,
            ConditionType::Available,
            ConditionStatus::True,
        )
        .await;
        let status = stored::<TrinoCatalog>(&harness, catalog)
            .status
            .unwrap_or_default();
        assert_eq!(status.used_by, [CLUSTER], "{catalog}");
        assert_eq!(status.catalog_name.as_deref(), Some(catalog));
    }
}

#[tokio::test]
async fn the_shared_secret_is_created_once_and_survives_reconciles_and_an_operator_restart() {
    let harness = start();
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;
    let secret = |harness: &strata_testing::Harness| {
        stored::<Secret>(harness, "simple-trino-internal-secret")
            .data
            .and_then(|data| data.get("sharedSecret").cloned())
            .map(|value| value.0)
    };
    let first = secret(&harness).expect("a generated secret");
    assert_eq!(first.len(), 128, "64 random bytes, hex-encoded");

    let workers =
        json!({"config": {"heapPercent": 70}, "roleGroups": {"default": {"replicas": 2}}});
    patch_spec(&harness, json!({"workers": workers})).await;
    run_until_settled(&harness, || {}).await;
    assert_eq!(secret(&harness), Some(first.clone()));

    let server = harness.server.clone();
    drop(harness);
    let restarted = start_on(server);
    let workers =
        json!({"config": {"heapPercent": 75}, "roleGroups": {"default": {"replicas": 2}}});
    patch_spec(&restarted, json!({"workers": workers})).await;
    run_until_settled(&restarted, || {}).await;
    assert_eq!(secret(&restarted), Some(first));
}

#[tokio::test]
async fn stop_pause_and_a_disabled_pdb() {
    let harness = start();
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;

    let workers =
        json!({"config": {"heapPercent": 60}, "roleGroups": {"default": {"replicas": 2}}});
    patch_spec(
        &harness,
        json!({"workers": workers, "clusterOperation": {"reconciliationPaused": true}}),
    )
    .await;
    harness.settle().await;
    let jvm = stored::<ConfigMap>(&harness, "simple-trino-worker-default")
        .data
        .unwrap_or_default()["jvm.config"]
        .clone();
    assert!(
        jvm.contains("-Xmx3276m"),
        "nothing is applied while paused: {jvm}"
    );
    wait_for_condition::<TrinoCluster>(
        &harness,
        CLUSTER,
        ConditionType::Paused,
        ConditionStatus::True,
    )
    .await;

    patch_spec(
        &harness,
        json!({"clusterOperation": {"reconciliationPaused": false, "stopped": true},
        "workers": {"roleConfig": {"podDisruptionBudget": {"enabled": false}},
                    "roleGroups": {"default": {"replicas": 2}}}}),
    )
    .await;
    eventually(
        "both roles scaled to zero and the worker PDB pruned",
        || {
            let scaled = [
                "simple-trino-coordinator-default",
                "simple-trino-worker-default",
            ]
            .iter()
            .all(|name| stored::<StatefulSet>(&harness, name).spec.replicas == Some(0));
            (scaled
                && stored_names::<PodDisruptionBudget>(&harness)
                    == names(&["simple-trino-coordinator"]))
            .then_some(())
        },
        || stored_names::<PodDisruptionBudget>(&harness),
    )
    .await;
    wait_for_condition::<TrinoCluster>(
        &harness,
        CLUSTER,
        ConditionType::Stopped,
        ConditionStatus::True,
    )
    .await;
}
