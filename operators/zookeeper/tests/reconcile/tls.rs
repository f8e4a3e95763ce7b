//! `clusterConfig.tls` with the user's Secret: a missing Secret or key is named before
//! anything is applied, and the cluster follows once the Secret holds what the pods read;
//! a renewed certificate rolls the pods through the references hash.

use k8s_openapi::api::apps::v1::StatefulSet;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use strata_model::build::REFERENCES_HASH_ANNOTATION;
use strata_status::{ConditionStatus, ConditionType};
use strata_testing::manifests::{create_secret, patch_secret};
use zookeeper_operator::controller::cluster::runs_tls;
use zookeeper_operator::crd::ZookeeperCluster;

use crate::support::conditions::wait_for_reason;
use crate::support::workload::run_group;
use crate::support::{
    Harness, cluster, create, patch_spec, single_group_spec, start, started, stored, stored_names,
    wait_for, wait_for_event,
};

const SECRET: &str = "zk-tls";

fn tls_spec() -> serde_json::Value {
    json!({
        "clusterConfig": {"tls": {"enabled": true, "secretName": SECRET}},
        "servers": {"roleGroups": {"default": {"replicas": 3}}},
    })
}

fn references_hash(set: &StatefulSet) -> Option<String> {
    set.spec
        .template
        .metadata
        .as_ref()?
        .annotations
        .as_ref()?
        .get(REFERENCES_HASH_ANNOTATION)
        .cloned()
}

#[tokio::test]
async fn a_missing_tls_secret_or_key_is_named_and_the_cluster_follows_once_it_is_complete() {
    let harness = start();
    create(&harness, &cluster("zk", tls_spec())).await;
    let degraded = wait_for_reason(
        &harness,
        "zk",
        ConditionType::Degraded,
        ConditionStatus::True,
        "SecretMissing",
    )
    .await;
    for part in ["default/zk-tls", "clusterConfig.tls.secretName"] {
        assert!(degraded.message.contains(part), "{degraded:?}");
    }
    wait_for_event(&harness, "zk", "Warning", "SecretMissing").await;
    harness.settle().await;
    assert!(stored_names::<StatefulSet>(&harness).is_empty());

    // cert-manager's Secret before its CA is filled in.
    create_secret(&harness, SECRET, &[("tls.crt", "c"), ("tls.key", "k")]).await;
    let degraded = wait_for_reason(
        &harness,
        "zk",
        ConditionType::Degraded,
        ConditionStatus::True,
        "SecretKeyMissing",
    )
    .await;
    assert!(degraded.message.contains("ca.crt"), "{degraded:?}");
    assert!(stored_names::<StatefulSet>(&harness).is_empty());

    patch_secret(&harness, SECRET, &[("ca.crt", "a")]).await;
    let first = wait_for::<StatefulSet>(
        &harness,
        "zk-server-default",
        "the StatefulSet once the Secret is complete",
        |set| references_hash(set).is_some(),
    )
    .await;

    // A renewed certificate changes the Secret: the template follows, so the pods roll.
    patch_secret(&harness, SECRET, &[("tls.crt", "renewed")]).await;
    wait_for::<StatefulSet>(
        &harness,
        "zk-server-default",
        "a new references hash after the renewal",
        |set| references_hash(set).is_some() && references_hash(set) != references_hash(&first),
    )
    .await;
}

async fn annotate(harness: &Harness, value: serde_json::Value) {
    Api::<ZookeeperCluster>::namespaced(harness.server.client(), harness.namespace)
        .patch(
            "zk",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"operator-command": value}}})),
        )
        .await
        .expect("the cluster is annotated");
}

/// Servers with and without quorum TLS cannot form a quorum: a running ensemble keeps
/// its setting, with a reason that says how to switch (stop, change, start).
#[tokio::test]
async fn tls_is_not_switched_on_a_running_ensemble_but_on_a_stopped_one() {
    let harness = started(single_group_spec(3), &["default"]).await;
    run_group(&harness, "zk-server-default", 3);
    create_secret(
        &harness,
        SECRET,
        &[("tls.crt", "c"), ("tls.key", "k"), ("ca.crt", "a")],
    )
    .await;
    patch_spec(&harness, "zk", tls_spec()).await;
    let degraded = wait_for_reason(
        &harness,
        "zk",
        ConditionType::Degraded,
        ConditionStatus::True,
        "TlsSwitchNeedsStop",
    )
    .await;
    for part in [
        "turn TLS on",
        "zk-server-default",
        "operator-command=Stopped",
    ] {
        assert!(degraded.message.contains(part), "{degraded:?}");
    }
    harness.settle().await;
    let set: StatefulSet = stored(&harness, "zk-server-default");
    assert!(!runs_tls(&set), "the running ensemble was switched");

    annotate(&harness, json!("Stopped")).await;
    wait_for::<StatefulSet>(
        &harness,
        "zk-server-default",
        "the TLS template once the cluster is stopped",
        runs_tls,
    )
    .await;
    annotate(&harness, serde_json::Value::Null).await;
    wait_for::<StatefulSet>(
        &harness,
        "zk-server-default",
        "three servers on the TLS template once started again",
        |set| runs_tls(set) && set.spec.replicas == Some(3),
    )
    .await;
}
