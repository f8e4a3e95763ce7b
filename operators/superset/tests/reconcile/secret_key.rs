//! `SECRET_KEY` outlives the cluster: Superset encrypts stored database passwords,
//! SSH tunnel credentials and OAuth tokens with it, in a metadata database that is
//! the user's and survives the SupersetCluster. So the generated key is never
//! garbage-collected with the cluster, a Secret of its name that exists already is
//! adopted as it is, and a key the user names (`secretKeySecret`) wins.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use serde_json::json;
use strata_testing::Harness;
use strata_testing::wait::{
    eventually, stored, stored_names, wait_for_available, wait_for_degraded,
};
use strata_testing::workloads::run_until_settled;

use crate::{CLUSTER, create_cluster, create_secret, create_user_secrets, spec, start};
use superset_operator::crd::SupersetCluster;

const GENERATED: &str = "simple-superset-secret-key";

/// The `SECRET_KEY` value of the Secret `name`, if it has one.
fn key_of(harness: &Harness, name: &str) -> Option<Vec<u8>> {
    harness
        .server
        .get_typed::<Secret>(harness.namespace, name)?
        .data?
        .get("SECRET_KEY")
        .map(|value| value.0.clone())
}

/// The Secret the web servers read `SUPERSET_SECRET_KEY` from.
fn key_secret_of_the_pods(harness: &Harness) -> Option<String> {
    let set = harness
        .server
        .get_typed::<StatefulSet>(harness.namespace, &format!("{CLUSTER}-node-default"))?;
    let containers = set.spec.template.spec?.containers;
    containers.iter().find_map(|container| {
        container
            .env
            .iter()
            .flatten()
            .find(|variable| variable.name == "SUPERSET_SECRET_KEY")?
            .value_from
            .as_ref()?
            .secret_key_ref
            .as_ref()
            .map(|selector| selector.name.clone())
    })
}

async fn delete_cluster(harness: &Harness) {
    Api::<SupersetCluster>::namespaced(harness.server.client(), harness.namespace)
        .delete(CLUSTER, &DeleteParams::default())
        .await
        .expect("the cluster is deleted");
    eventually(
        "the cluster's StatefulSet garbage-collected with it",
        || {
            stored_names::<StatefulSet>(harness)
                .is_empty()
                .then_some(())
        },
        || stored_names::<StatefulSet>(harness),
    )
    .await;
}

#[tokio::test]
async fn the_generated_key_survives_the_deletion_of_the_cluster_and_serves_its_successor() {
    let harness = start();
    create_user_secrets(&harness).await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;
    let first = key_of(&harness, GENERATED).expect("a generated key");
    let secret: Secret = stored(&harness, GENERATED);
    assert_eq!(
        secret.metadata.owner_references.unwrap_or_default(),
        Vec::new(),
        "no owner reference: the garbage collector must never take the key"
    );

    delete_cluster(&harness).await;
    harness.settle().await;
    assert_eq!(
        key_of(&harness, GENERATED),
        Some(first.clone()),
        "the key outlives the cluster, like the metadata database it encrypts"
    );

    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;
    wait_for_available::<SupersetCluster>(&harness, CLUSTER).await;
    assert_eq!(key_of(&harness, GENERATED), Some(first));
    assert_eq!(key_secret_of_the_pods(&harness).as_deref(), Some(GENERATED));
}

#[tokio::test]
async fn a_secret_of_that_name_that_exists_already_is_adopted_and_never_overwritten() {
    let harness = start();
    create_user_secrets(&harness).await;
    create_secret(
        &harness,
        GENERATED,
        &[("SECRET_KEY", "restored-from-backup")],
    )
    .await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;
    wait_for_available::<SupersetCluster>(&harness, CLUSTER).await;
    assert_eq!(
        key_of(&harness, GENERATED),
        Some(b"restored-from-backup".to_vec())
    );
    let secret: Secret = stored(&harness, GENERATED);
    assert_eq!(secret.metadata.owner_references, None, "adopted as it is");
}

#[tokio::test]
async fn an_adopted_secret_without_the_key_is_named_before_any_pod_reads_it() {
    let harness = start();
    create_user_secrets(&harness).await;
    create_secret(&harness, GENERATED, &[("key", "not SECRET_KEY")]).await;
    create_cluster(&harness, spec(json!({}))).await;
    let degraded =
        wait_for_degraded::<SupersetCluster>(&harness, CLUSTER, "SecretKeyMissing").await;
    assert!(
        degraded.message.contains(GENERATED) && degraded.message.contains("SECRET_KEY"),
        "{degraded:?}"
    );
    harness.settle().await;
    assert!(stored_names::<StatefulSet>(&harness).is_empty());
    assert_eq!(key_of(&harness, GENERATED), None, "never overwritten");
}

#[tokio::test]
async fn a_key_the_user_names_wins_and_nothing_is_generated() {
    let harness = start();
    create_user_secrets(&harness).await;
    create_cluster(
        &harness,
        spec(json!({"clusterConfig": {
            "metadataDatabase": {"postgresql": {
                "host": "postgresql.default.svc", "database": "superset",
                "credentialsSecret": "superset-db"
            }},
            "adminUser": {"secretName": "superset-admin"},
            "secretKeySecret": "my-superset-key"
        }})),
    )
    .await;
    let degraded = wait_for_degraded::<SupersetCluster>(&harness, CLUSTER, "SecretMissing").await;
    assert!(
        degraded.message.contains("my-superset-key")
            && degraded.message.contains("clusterConfig.secretKeySecret"),
        "{degraded:?}"
    );

    create_secret(
        &harness,
        "my-superset-key",
        &[("SECRET_KEY", "the-users-key")],
    )
    .await;
    run_until_settled(&harness, || {}).await;
    wait_for_available::<SupersetCluster>(&harness, CLUSTER).await;
    assert_eq!(
        key_secret_of_the_pods(&harness).as_deref(),
        Some("my-superset-key")
    );
    assert!(!stored_names::<Secret>(&harness).contains(GENERATED));
}

/// What releases before this one created: the key with a controller reference to the
/// cluster, so that deleting the cluster deleted the key.
async fn create_key_of_an_earlier_release(harness: &Harness, cluster: &SupersetCluster) {
    let owned = serde_json::from_value::<Secret>(json!({
        "metadata": {
            "name": GENERATED,
            "labels": {"app.kubernetes.io/managed-by": "superset-operator",
                       "app.kubernetes.io/instance": CLUSTER,
                       "app.kubernetes.io/name": "superset"},
            "annotations": {"strata.dev/create-once": "true"},
            "ownerReferences": [{
                "apiVersion": "superset.strata.dev/v1alpha1", "kind": "SupersetCluster",
                "name": CLUSTER, "uid": cluster.metadata.uid.clone().unwrap_or_default(),
                "controller": true, "blockOwnerDeletion": true
            }]
        },
        "stringData": {"SECRET_KEY": "generated-by-an-earlier-release"}
    }))
    .expect("a Secret");
    Api::<Secret>::namespaced(harness.server.client(), harness.namespace)
        .create(&PostParams::default(), &owned)
        .await
        .expect("the earlier release's key");
}

/// The cluster as the upgrade finds it: created by an earlier release, with its owned
/// key; then this release reconciles it, with `spec_change` merged into the spec.
async fn upgraded_from_an_earlier_release(harness: &Harness, spec_change: serde_json::Value) {
    let cluster = strata_testing::manifests::create::<SupersetCluster>(
        harness,
        CLUSTER,
        spec(json!({"clusterOperation": {"reconciliationPaused": true}})),
    )
    .await;
    create_key_of_an_earlier_release(harness, &cluster).await;
    let mut change = json!({"clusterOperation": {"reconciliationPaused": false}});
    if let (Some(change), serde_json::Value::Object(more)) = (change.as_object_mut(), spec_change) {
        change.extend(more);
    }
    strata_testing::manifests::patch_spec::<SupersetCluster>(harness, CLUSTER, change).await;
}

#[tokio::test]
async fn a_key_created_by_an_earlier_release_is_never_pruned_when_the_user_names_their_own() {
    let harness = start();
    create_user_secrets(&harness).await;
    create_secret(
        &harness,
        "my-superset-key",
        &[("SECRET_KEY", "the-users-key")],
    )
    .await;
    upgraded_from_an_earlier_release(
        &harness,
        json!({"clusterConfig": {"secretKeySecret": "my-superset-key"}}),
    )
    .await;
    run_until_settled(&harness, || {}).await;
    wait_for_available::<SupersetCluster>(&harness, CLUSTER).await;
    assert_eq!(
        key_of(&harness, GENERATED),
        Some(b"generated-by-an-earlier-release".to_vec()),
        "a generated key is data: no longer desired, it is still never pruned"
    );
}

#[tokio::test]
async fn a_key_created_by_an_earlier_release_is_released_from_the_cluster() {
    let harness = start();
    create_user_secrets(&harness).await;
    upgraded_from_an_earlier_release(&harness, json!({})).await;
    eventually(
        "the key released from the cluster",
        || {
            let secret: Secret = stored(&harness, GENERATED);
            secret
                .metadata
                .owner_references
                .unwrap_or_default()
                .is_empty()
                .then_some(())
        },
        || {
            stored::<Secret>(&harness, GENERATED)
                .metadata
                .owner_references
        },
    )
    .await;
    run_until_settled(&harness, || {}).await;

    delete_cluster(&harness).await;
    harness.settle().await;
    assert_eq!(
        key_of(&harness, GENERATED),
        Some(b"generated-by-an-earlier-release".to_vec())
    );
}
