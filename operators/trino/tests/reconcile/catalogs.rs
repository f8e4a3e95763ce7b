//! Catalog selection by label, and every kind of catalog change rolling the pods:
//! create, edit, relabel into and out of the selector, and delete.

use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};
use pretty_assertions::assert_eq;
use serde_json::json;
use strata_model::build::REFERENCES_HASH_ANNOTATION;
use strata_testing::Harness;
use strata_testing::manifests::patch_secret;
use strata_testing::wait::{eventually, stored};
use strata_testing::workloads::run_until_settled;

use crate::{
    CLUSTER, SELECTED, catalog_files, create_catalog, create_cluster, create_example_catalogs,
    create_postgres_secret, spec, start, template_annotations, template_hashes,
};
use trino_operator::crd::{TrinoCatalog, TrinoCluster};

/// Waits until the pods mount exactly `files` and their template hash differs from
/// `before`; returns the new hashes.
async fn rolled_to(harness: &Harness, files: &[&str], before: &[String]) -> Vec<String> {
    eventually(
        &format!("the catalogs {files:?} in the ConfigMap and a new pod template"),
        || {
            let hashes = template_hashes(harness);
            (catalog_files(harness) == files
                && hashes.iter().zip(before).all(|(now, then)| now != then))
            .then_some(hashes)
        },
        || (catalog_files(harness), template_hashes(harness)),
    )
    .await
}

async fn patch_catalog(harness: &Harness, name: &str, patch: serde_json::Value) {
    Api::<TrinoCatalog>::namespaced(harness.server.client(), harness.namespace)
        .patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .expect("the catalog is patched");
}

#[tokio::test]
async fn catalogs_are_selected_by_label_and_every_change_rolls_the_pods() {
    let harness = start();
    let selected = json!({SELECTED.0: SELECTED.1});
    create_catalog(
        &harness,
        "tpch",
        selected.clone(),
        json!({"connector": {"tpch": {}}}),
    )
    .await;
    create_catalog(
        &harness,
        "scratch",
        json!({"trino": "another-cluster"}),
        json!({"connector": {"memory": {}}}),
    )
    .await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;
    assert_eq!(catalog_files(&harness), ["tpch.properties"]);
    let initial = template_hashes(&harness);

    // Relabelled into the selector.
    patch_catalog(
        &harness,
        "scratch",
        json!({"metadata": {"labels": selected}}),
    )
    .await;
    let with_scratch = rolled_to(
        &harness,
        &["scratch.properties", "tpch.properties"],
        &initial,
    )
    .await;

    // Edited.
    patch_catalog(
        &harness,
        "tpch",
        json!({"spec": {"connector": {"tpch": {"splitsPerNode": 4}}}}),
    )
    .await;
    let edited = rolled_to(
        &harness,
        &["scratch.properties", "tpch.properties"],
        &with_scratch,
    )
    .await;
    let tpch = stored::<k8s_openapi::api::core::v1::ConfigMap>(&harness, "simple-trino-catalog")
        .data
        .unwrap_or_default()["tpch.properties"]
        .clone();
    assert_eq!(tpch, "connector.name=tpch\ntpch.splits-per-node=4\n");

    // Relabelled out of the selector.
    patch_catalog(
        &harness,
        "scratch",
        json!({"metadata": {"labels": {"trino": "another-cluster"}}}),
    )
    .await;
    let without_scratch = rolled_to(&harness, &["tpch.properties"], &edited).await;
    assert_ne!(without_scratch, initial, "tpch was edited since");

    // Deleted.
    Api::<TrinoCatalog>::namespaced(harness.server.client(), harness.namespace)
        .delete("tpch", &DeleteParams::default())
        .await
        .expect("the catalog is deleted");
    rolled_to(&harness, &[], &without_scratch).await;
    // status.catalogs follows once the pods run the new template.
    run_until_settled(&harness, || {}).await;
    eventually(
        "status.catalogs empty",
        || {
            stored::<TrinoCluster>(&harness, CLUSTER)
                .status
                .filter(|status| status.product.catalogs.is_empty())
        },
        || stored::<TrinoCluster>(&harness, CLUSTER).status,
    )
    .await;
    eventually(
        "the unselected catalog used by nobody",
        || {
            stored::<TrinoCatalog>(&harness, "scratch")
                .status
                .filter(|status| {
                    status.used_by.is_empty() && status.resource.observed_generation.is_some()
                })
        },
        || stored::<TrinoCatalog>(&harness, "scratch").status,
    )
    .await;
}

/// The references hash of each role group's pod template.
fn references_hashes(harness: &Harness) -> Vec<Option<String>> {
    template_annotations(harness, REFERENCES_HASH_ANNOTATION)
}

#[tokio::test]
async fn a_rotated_catalog_secret_rolls_the_pods_that_serve_the_catalog() {
    let harness = start();
    create_postgres_secret(&harness).await;
    create_example_catalogs(&harness).await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;
    let before = eventually(
        "both role groups roll on the postgres catalog's references",
        || {
            let hashes = references_hashes(&harness);
            hashes.iter().all(Option::is_some).then_some(hashes)
        },
        || references_hashes(&harness),
    )
    .await;
    let config_hashes = template_hashes(&harness);
    strata_testing::manifests::create_secret(&harness, "unrelated", &[("password", "x")]).await;
    patch_secret(&harness, "unrelated", &[("password", "y")]).await;
    harness.settle().await;
    assert_eq!(references_hashes(&harness), before, "no catalog reads it");

    patch_secret(&harness, "trino-postgres", &[("password", "rotated")]).await;
    eventually(
        "a new references hash on both role groups",
        || {
            let hashes = references_hashes(&harness);
            hashes
                .iter()
                .zip(&before)
                .all(|(now, then)| now != then)
                .then_some(())
        },
        || references_hashes(&harness),
    )
    .await;
    assert_eq!(
        template_hashes(&harness),
        config_hashes,
        "no file changed: only the references hash rolls the pods"
    );
}

/// `status.catalogs` names what the pods serve, and Trino reads catalog files only at
/// start: a new selection shows there only once every pod runs the template that
/// carries it, not when the ConfigMap has it.
#[tokio::test]
async fn status_catalogs_move_only_once_every_pod_serves_them() {
    let harness = start();
    let selected = json!({SELECTED.0: SELECTED.1});
    create_catalog(
        &harness,
        "tpch",
        selected.clone(),
        json!({"connector": {"tpch": {}}}),
    )
    .await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;
    let catalogs = || {
        stored::<TrinoCluster>(&harness, CLUSTER)
            .status
            .map(|status| status.product.catalogs)
            .unwrap_or_default()
    };
    eventually(
        "status.catalogs [tpch]",
        || (catalogs() == ["tpch"]).then_some(()),
        catalogs,
    )
    .await;

    create_catalog(
        &harness,
        "scratch",
        selected,
        json!({"connector": {"memory": {}}}),
    )
    .await;
    // The operator writes the ConfigMap and the new templates; no pod has rolled yet.
    eventually(
        "scratch in the catalog ConfigMap",
        || (catalog_files(&harness) == ["scratch.properties", "tpch.properties"]).then_some(()),
        || catalog_files(&harness),
    )
    .await;
    harness.settle().await;
    assert_eq!(
        catalogs(),
        ["tpch"],
        "the pods still serve the old selection"
    );

    run_until_settled(&harness, || {}).await;
    eventually(
        "status.catalogs [scratch, tpch] once the pods rolled",
        || (catalogs() == ["scratch", "tpch"]).then_some(()),
        catalogs,
    )
    .await;
}
