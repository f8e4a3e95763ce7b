//! `clusterConfig.tls` with the user's Secret: a missing Secret or key, a certificate
//! that leaves a pod out or one only for `serverAuth`, is named before anything is applied, and the cluster follows
//! once the Secret holds what the pods read; a renewed certificate rolls the pods
//! through the references hash. A running ensemble is not switched between TLS and
//! plaintext.

use k8s_openapi::api::apps::v1::StatefulSet;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use strata_certificates::authority::{CertificateAuthority, Validity};
use strata_certificates::facts::KeyPurpose;
use strata_model::build::REFERENCES_HASH_ANNOTATION;
use strata_status::{ConditionStatus, ConditionType};
use strata_test_apiserver::Verb;
use strata_testing::manifests::{create_secret, patch_secret};
use zookeeper_operator::controller::cluster::runs_tls;
use zookeeper_operator::crd::ZookeeperCluster;

use crate::support::conditions::wait_for_reason;
use crate::support::workload::run_group;
use crate::support::{
    Harness, cluster, create, patch_spec, single_group_spec, start, started, stored, stored_names,
    touch_and_settle, wait_for, wait_for_event,
};

const SECRET: &str = "zk-tls";
const DAY: std::time::Duration = std::time::Duration::from_secs(86_400);

/// A certificate as cert-manager's Secret holds it, for `names`, and its CA.
fn user_certificate(names: &[&str]) -> Vec<(&'static str, String)> {
    user_certificate_for(names, &[KeyPurpose::ServerAuth, KeyPurpose::ClientAuth])
}

/// The same, with an extended key usage of `purposes` only.
fn user_certificate_for(names: &[&str], purposes: &[KeyPurpose]) -> Vec<(&'static str, String)> {
    let now = std::time::SystemTime::now();
    let ca =
        CertificateAuthority::create("user CA", Validity::starting(now, 30 * DAY)).expect("a CA");
    let names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
    let issued = ca
        .issue_for(&names, Validity::starting(now, 30 * DAY), purposes)
        .expect("a certificate");
    vec![
        ("tls.crt", issued.certificate_pem().to_owned()),
        ("tls.key", issued.key_pem().to_owned()),
        ("ca.crt", ca.certificate_pem().to_owned()),
    ]
}

/// What a certificate for the cluster `zk` must cover: its pods and its client Service.
const COVERING: [&str; 2] = [
    "*.zk-server-default.default.svc.cluster.local",
    "zk.default.svc.cluster.local",
];

fn as_pairs<'a>(values: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    values
        .iter()
        .map(|(key, value)| (*key, value.as_str()))
        .collect()
}

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
    let certificate = user_certificate(&COVERING);
    create_secret(&harness, SECRET, &as_pairs(&certificate[..2])).await;
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

    // A certificate for the client Service alone leaves the pods out.
    let narrow = user_certificate(&["zk.default.svc.cluster.local"]);
    patch_secret(&harness, SECRET, &as_pairs(&narrow)).await;
    let degraded = wait_for_reason(
        &harness,
        "zk",
        ConditionType::Degraded,
        ConditionStatus::True,
        "TlsNamesNotCovered",
    )
    .await;
    assert!(
        degraded
            .message
            .contains("zk-server-default-0.zk-server-default.default.svc.cluster.local"),
        "{degraded:?}"
    );
    assert!(stored_names::<StatefulSet>(&harness).is_empty());

    // cert-manager's common `usages: [server auth]`: the quorum peers, which connect to
    // each other with it, would refuse it for want of clientAuth.
    let server_only = user_certificate_for(&COVERING, &[KeyPurpose::ServerAuth]);
    patch_secret(&harness, SECRET, &as_pairs(&server_only)).await;
    let degraded = wait_for_reason(
        &harness,
        "zk",
        ConditionType::Degraded,
        ConditionStatus::True,
        "TlsKeyUsageMissing",
    )
    .await;
    assert!(
        degraded.message.contains("clientAuth") && degraded.message.contains("client auth"),
        "{degraded:?}"
    );
    assert!(stored_names::<StatefulSet>(&harness).is_empty());

    patch_secret(&harness, SECRET, &as_pairs(&certificate)).await;
    let first = wait_for::<StatefulSet>(
        &harness,
        "zk-server-default",
        "the StatefulSet once the Secret is complete",
        |set| references_hash(set).is_some(),
    )
    .await;

    let discovery: k8s_openapi::api::core::v1::ConfigMap = stored(&harness, "zk");
    let data = discovery.data.unwrap_or_default();
    assert_eq!(
        data.get("ca.crt"),
        Some(&certificate[2].1),
        "the user's CA is published"
    );
    assert_eq!(data.get("ZOOKEEPER_TLS").map(String::as_str), Some("true"));

    // A renewed certificate changes the Secret: the template follows, so the pods roll.
    let renewed = user_certificate(&COVERING);
    patch_secret(&harness, SECRET, &as_pairs(&renewed)).await;
    wait_for::<StatefulSet>(
        &harness,
        "zk-server-default",
        "a new references hash after the renewal",
        |set| references_hash(set).is_some() && references_hash(set) != references_hash(&first),
    )
    .await;

    // Once the renewal is read, a reconcile in which nothing changed reads no Secret.
    harness.settle().await;
    assert!(touch_and_settle(&harness, "1").await, "no reconcile");
    let secret_reads: Vec<_> = harness
        .server
        .requests()
        .into_iter()
        .filter(|request| request.resource == "secrets" && request.verb == Verb::Get)
        .collect();
    assert_eq!(
        secret_reads,
        vec![],
        "the user's Secret is read again unchanged"
    );
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
    let mut plaintext = single_group_spec(3);
    plaintext["clusterConfig"] = json!({"tls": {"enabled": false}});
    let harness = started(plaintext, &["default"]).await;
    run_group(&harness, "zk-server-default", 3);
    let certificate = user_certificate(&COVERING);
    create_secret(&harness, SECRET, &as_pairs(&certificate)).await;
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
