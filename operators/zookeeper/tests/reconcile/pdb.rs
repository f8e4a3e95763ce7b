//! The role's PodDisruptionBudget (ADR030 option 1): on by default with
//! `maxUnavailable: 1`, configurable, and removed when disabled.

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use pretty_assertions::assert_eq;
use rstest::rstest;
use serde_json::{Value, json};
use strata_test_apiserver::Verb;

use crate::support::{
    ExpectedObjects, TIMEOUT, cluster, create, patch_spec, start, stored_objects, two_group_spec,
    wait_for, wait_for_objects,
};

const PDB: &str = "zk-server";

fn max_unavailable(pdb: &PodDisruptionBudget) -> Option<IntOrString> {
    pdb.spec
        .as_ref()
        .and_then(|spec| spec.max_unavailable.clone())
}

fn spec_with_pdb(pdb: Value) -> Value {
    let mut spec = two_group_spec();
    spec["servers"]["roleConfig"] = json!({"podDisruptionBudget": pdb});
    spec
}

#[tokio::test]
async fn disabling_the_pdb_removes_it_and_enabling_brings_it_back() {
    let harness = start();
    create(&harness, &cluster("zk", two_group_spec())).await;
    let mut expected = ExpectedObjects::new("zk", &["primary", "secondary"]);
    wait_for_objects(&harness, &expected).await;
    harness.settle().await;
    harness.server.reset_requests();

    patch_spec(
        &harness,
        "zk",
        json!({"servers": {"roleConfig": {"podDisruptionBudget": {"enabled": false}}}}),
    )
    .await;
    harness
        .server
        .wait_for_deletion::<PodDisruptionBudget>(harness.namespace, PDB, TIMEOUT)
        .await
        .expect("the disabled PDB is removed");
    harness.settle().await;
    expected.pdb = false;
    assert_eq!(
        stored_objects(&harness),
        expected.all(),
        "only the PDB is removed"
    );
    assert_eq!(
        harness.server.count(Verb::Delete, "poddisruptionbudgets"),
        1
    );
    assert_eq!(
        harness
            .server
            .requests()
            .iter()
            .filter(|request| request.verb == Verb::Delete)
            .count(),
        1,
        "nothing but the PDB is deleted"
    );

    patch_spec(
        &harness,
        "zk",
        json!({"servers": {"roleConfig": {"podDisruptionBudget": {"enabled": true}}}}),
    )
    .await;
    let pdb = wait_for::<PodDisruptionBudget>(&harness, PDB, "created again", |_| true).await;
    assert_eq!(max_unavailable(&pdb), Some(IntOrString::Int(1)));
}

#[tokio::test]
async fn a_cluster_created_without_a_pdb_never_gets_one() {
    let harness = start();
    create(
        &harness,
        &cluster("zk", spec_with_pdb(json!({"enabled": false}))),
    )
    .await;
    let mut expected = ExpectedObjects::new("zk", &["primary", "secondary"]);
    expected.pdb = false;
    wait_for_objects(&harness, &expected).await;
    harness.settle().await;
    assert_eq!(stored_objects(&harness), expected.all());
    assert_eq!(harness.server.count(Verb::Patch, "poddisruptionbudgets"), 0);
}

#[rstest]
#[case::default_is_one(json!({}), 1)]
#[case::enabled_without_a_value_is_one(json!({"enabled": true}), 1)]
#[case::custom_two(json!({"maxUnavailable": 2}), 2)]
#[case::custom_zero_blocks_every_eviction(json!({"maxUnavailable": 0}), 0)]
#[tokio::test]
async fn max_unavailable_follows_the_spec(#[case] pdb: Value, #[case] expected: i32) {
    let harness = start();
    create(&harness, &cluster("zk", spec_with_pdb(pdb))).await;
    let stored = wait_for::<PodDisruptionBudget>(&harness, PDB, "created", |_| true).await;
    assert_eq!(max_unavailable(&stored), Some(IntOrString::Int(expected)));
    assert_eq!(
        stored.spec.and_then(|spec| spec.min_available),
        None,
        "maxUnavailable only"
    );

    // Changing the value updates the existing PDB.
    let changed = expected + 1;
    patch_spec(
        &harness,
        "zk",
        json!({"servers": {"roleConfig": {"podDisruptionBudget": {"maxUnavailable": changed}}}}),
    )
    .await;
    wait_for::<PodDisruptionBudget>(&harness, PDB, "the new maxUnavailable", |pdb| {
        max_unavailable(pdb) == Some(IntOrString::Int(changed))
    })
    .await;
}
