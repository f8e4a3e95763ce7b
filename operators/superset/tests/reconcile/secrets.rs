//! Bad input: a missing Secret, a database named neither way, two login methods, a
//! failed init step; and no Secret value in anything the operator writes.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use strata_model::build::REFERENCES_HASH_ANNOTATION;
use strata_testing::manifests::patch_secret;
use strata_testing::wait::{
    assert_no_object_holds, eventually, stored_names, wait_for_degraded, wait_for_event,
};
use strata_testing::workloads::{run_until_settled, step_stateful_sets};

use crate::{CLUSTER, create_cluster, create_secret, create_user_secrets, spec, start};
use superset_operator::crd::SupersetCluster;

#[tokio::test]
async fn a_missing_secret_is_named_and_the_cluster_recovers_when_it_appears() {
    let harness = start();
    create_secret(
        &harness,
        "superset-db",
        &[("username", "superset"), ("password", "p")],
    )
    .await;
    create_cluster(&harness, spec(json!({}))).await;
    let degraded = wait_for_degraded::<SupersetCluster>(&harness, CLUSTER, "SecretMissing").await;
    assert!(
        degraded.message.contains("default/superset-admin"),
        "{degraded:?}"
    );
    assert!(degraded.message.contains("adminUser"), "{degraded:?}");
    wait_for_event(&harness, CLUSTER, "Warning", "SecretMissing").await;
    harness.settle().await;
    assert!(stored_names::<StatefulSet>(&harness).is_empty());

    create_secret(
        &harness,
        "superset-admin",
        &[
            ("username", "admin"),
            ("firstname", "A"),
            ("lastname", "B"),
            ("email", "a@example.com"),
            ("password", "p"),
        ],
    )
    .await;
    eventually(
        "the StatefulSet once the Secret exists",
        || (!stored_names::<StatefulSet>(&harness).is_empty()).then_some(()),
        || stored_names::<StatefulSet>(&harness),
    )
    .await;
}

#[tokio::test]
async fn a_missing_key_is_named_before_any_pod_reads_it_and_the_cluster_recovers() {
    let harness = start();
    create_secret(&harness, "superset-db", &[("username", "superset")]).await;
    create_secret(
        &harness,
        "superset-admin",
        &[
            ("username", "admin"),
            ("firstname", "A"),
            ("lastname", "B"),
            ("email", "a@example.com"),
            ("password", "admin-password-never-logged"),
        ],
    )
    .await;
    create_cluster(&harness, spec(json!({}))).await;
    let degraded =
        wait_for_degraded::<SupersetCluster>(&harness, CLUSTER, "SecretKeyMissing").await;
    assert!(
        degraded.message.contains("default/superset-db") && degraded.message.contains("password"),
        "the message names the Secret and the key: {degraded:?}"
    );
    assert!(
        !degraded.message.contains("username"),
        "only the missing key is named: {degraded:?}"
    );
    wait_for_event(&harness, CLUSTER, "Warning", "SecretKeyMissing").await;
    harness.settle().await;
    assert!(stored_names::<StatefulSet>(&harness).is_empty());

    let secrets = Api::<Secret>::namespaced(harness.server.client(), harness.namespace);
    secrets
        .patch(
            "superset-db",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"password": "db-password-never-logged"}})),
        )
        .await
        .expect("the key is added");
    eventually(
        "the StatefulSet once the key exists",
        || (!stored_names::<StatefulSet>(&harness).is_empty()).then_some(()),
        || stored_names::<StatefulSet>(&harness),
    )
    .await;
}

#[tokio::test]
async fn invalid_specs_get_a_reason_and_nothing_is_applied() {
    for (config, reason) in [
        (
            json!({"metadataDatabase": {}, "adminUser": {"secretName": "superset-admin"}}),
            "InvalidMetadataDatabase",
        ),
        (
            json!({
                "metadataDatabase": {"generic": {"uriSecret": "superset-db"}},
                "authentication": {
                    "ldap": {"serverUri": "ldaps://l", "bindDn": "cn=b", "bindPasswordSecret": "b", "searchBase": "dc=x"},
                    "oidc": {"issuerUrl": "https://i", "clientId": "c", "clientSecretSecret": "s"}
                }
            }),
            "ConflictingAuthentication",
        ),
    ] {
        let harness = start();
        create_user_secrets(&harness).await;
        create_cluster(&harness, spec(json!({"clusterConfig": config}))).await;
        wait_for_degraded::<SupersetCluster>(&harness, CLUSTER, reason).await;
        assert!(stored_names::<StatefulSet>(&harness).is_empty(), "{reason}");
    }
}

#[tokio::test]
async fn a_failed_init_step_is_degraded_with_the_steps_reason() {
    let harness = start();
    create_user_secrets(&harness).await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;

    harness
        .server
        .patch_status_direct::<Pod>(
            harness.namespace,
            "simple-superset-node-default-1",
            json!({
                "phase": "Pending",
                "initContainerStatuses": [{
                    "name": "init-database", "image": "", "imageID": "", "ready": false,
                    "restartCount": 3,
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                    "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                        "message": "DatabaseUpgradeFailed\n'superset db upgrade' exited 1; its output is in the log of the init-database container\n"}}
                }],
                "containerStatuses": [{"name": "superset", "image": "", "imageID": "",
                    "ready": false, "restartCount": 0,
                    "state": {"waiting": {"reason": "PodInitializing"}}}]
            }),
        )
        .expect("the pod status is written");
    step_stateful_sets(&harness);
    let degraded =
        wait_for_degraded::<SupersetCluster>(&harness, CLUSTER, "DatabaseUpgradeFailed").await;
    assert!(
        degraded.message.contains("superset db upgrade"),
        "{degraded:?}"
    );
}

#[tokio::test]
async fn no_secret_value_reaches_what_the_operator_writes() {
    let harness = start();
    create_user_secrets(&harness).await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;
    assert_no_object_holds(
        &harness,
        &[
            "configmaps",
            "statefulsets.apps",
            "services",
            "events.events.k8s.io",
            "supersetclusters.superset.strata.dev",
        ],
        "password-never-logged",
    );
}

/// The references hash on the pod template of the cluster's StatefulSet, if it exists.
pub fn references_hash(harness: &strata_testing::Harness) -> Option<String> {
    harness
        .server
        .get_typed::<StatefulSet>(harness.namespace, &format!("{CLUSTER}-node-default"))?
        .spec
        .template
        .metadata?
        .annotations?
        .get(REFERENCES_HASH_ANNOTATION)
        .cloned()
}

#[tokio::test]
async fn a_rotated_secret_rolls_the_pods_and_an_unrelated_secret_does_not() {
    let harness = start();
    create_user_secrets(&harness).await;
    create_cluster(&harness, spec(json!({}))).await;
    let first = eventually(
        "the StatefulSet's pod template carries the references hash",
        || references_hash(&harness),
        || stored_names::<StatefulSet>(&harness),
    )
    .await;

    create_secret(&harness, "unrelated", &[("password", "x")]).await;
    patch_secret(&harness, "unrelated", &[("password", "y")]).await;
    harness.settle().await;
    assert_eq!(references_hash(&harness), Some(first.clone()));

    patch_secret(&harness, "superset-db", &[("password", "rotated-password")]).await;
    eventually(
        "a new references hash after the rotation",
        || references_hash(&harness).filter(|now| *now != first),
        || references_hash(&harness),
    )
    .await;
}
