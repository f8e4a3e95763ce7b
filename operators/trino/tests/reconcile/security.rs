//! TLS, password authentication and the user's rules through the in-memory API: the
//! Secrets the operator makes, what it refuses before applying anything, and that it
//! never writes a password anywhere.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::PostParams;
use rstest::rstest;
use serde_json::{Value, json};
use strata_operator::roll::stateless::RESTART_TOGETHER_ANNOTATION;
use strata_testing::Harness;
use strata_testing::manifests::{create_secret, patch_secret};
use strata_testing::wait::{
    assert_no_object_holds, stored, stored_names, wait_for, wait_for_degraded, wait_for_event,
};
use strata_testing::workloads::run_until_settled;
use trino_operator::build::internal_secret::SHARED_SECRET_ID_ANNOTATION;

use crate::{CLUSTER, create_cluster, spec, start};
use trino_operator::crd::TrinoCluster;

/// The users Secret's name.
const USERS: &str = "trino-users";
/// Alice's password, which must never leave the users Secret.
const ALICE_PASSWORD: &str = "alice-password-never-written";
/// The rules ConfigMap's name.
const RULES: &str = "trino-rules";

fn secured(rules: Option<&str>) -> Value {
    let mut config = json!({
        "authentication": [{"password": {"secretName": USERS}}]
    });
    if let Some(rules) = rules {
        config["authorization"] = json!({"rulesConfigMap": rules});
    }
    spec(json!({"clusterConfig": config}))
}

async fn create_rules(harness: &Harness, rules: &str) {
    let config_map: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": RULES, "namespace": harness.namespace},
        "data": {"rules.json": rules}
    }))
    .expect("a ConfigMap");
    Api::<ConfigMap>::namespaced(harness.server.client(), harness.namespace)
        .create(&PostParams::default(), &config_map)
        .await
        .expect("the rules are created");
}

fn secret_text(harness: &Harness, name: &str, key: &str) -> String {
    let secret = stored::<Secret>(harness, name);
    let mut data: std::collections::BTreeMap<String, String> = secret
        .data
        .unwrap_or_default()
        .into_iter()
        .map(|(key, value)| (key, String::from_utf8_lossy(&value.0).into_owned()))
        .collect();
    data.extend(secret.string_data.unwrap_or_default());
    data.remove(key).unwrap_or_default()
}

/// The hash of `user` in the password file Secret.
fn hash_of(harness: &Harness, user: &str) -> String {
    secret_text(harness, "simple-trino-password-db", "password.db")
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{user}:")).map(str::to_owned))
        .unwrap_or_default()
}

#[tokio::test]
async fn password_authentication_writes_the_users_file_the_shutdown_user_and_the_rules() {
    let harness = start();
    create_secret(&harness, USERS, &[("alice", ALICE_PASSWORD)]).await;
    create_rules(
        &harness,
        r#"{"catalogs": [{"user": "alice", "catalog": "system", "allow": "all"}]}"#,
    )
    .await;
    create_cluster(&harness, secured(Some(RULES))).await;
    run_until_settled(&harness, || {}).await;

    let alice = hash_of(&harness, "alice");
    assert!(alice.starts_with("$2y$10$"), "{alice}");
    assert!(bcrypt::verify(ALICE_PASSWORD, &alice).expect("a bcrypt hash"));
    let shutdown_password = secret_text(&harness, "simple-trino-graceful-shutdown", "password");
    let shutdown_file = secret_text(&harness, "simple-trino-graceful-shutdown", "password.db");
    let shutdown_hash = shutdown_file
        .trim_end()
        .strip_prefix("graceful-shutdown:")
        .expect("the shutdown user's line");
    assert!(bcrypt::verify(&shutdown_password, shutdown_hash).expect("a bcrypt hash"));

    let rules: Value = serde_json::from_str(
        &stored::<ConfigMap>(&harness, "simple-trino-access-control")
            .data
            .unwrap_or_default()["rules.json"],
    )
    .expect("JSON rules");
    assert_eq!(
        rules["system_information"],
        json!([
            {"user": "graceful-shutdown", "allow": ["read", "write"]},
            {"user": "strata-metrics", "allow": ["read"]}
        ])
    );
    assert_eq!(
        rules["catalogs"],
        json!([
            {"user": "graceful-shutdown|strata-metrics", "allow": "none"},
            {"user": "alice", "catalog": "system", "allow": "all"}
        ])
    );

    // A steady reconcile hashes nothing again: the file is the one made before.
    harness.settle().await;
    assert_eq!(hash_of(&harness, "alice"), alice);
    // A new password reaches the file; the pods do not restart for it (Trino reads the
    // file again by itself).
    let before: Vec<_> = stored_names::<StatefulSet>(&harness)
        .iter()
        .map(|name| stored::<StatefulSet>(&harness, name).spec)
        .collect();
    patch_secret(&harness, USERS, &[("alice", "a-new-password")]).await;
    wait_for::<Secret>(
        &harness,
        "simple-trino-password-db",
        "the new password",
        |_| bcrypt::verify("a-new-password", &hash_of(&harness, "alice")).unwrap_or(false),
    )
    .await;
    let after: Vec<_> = stored_names::<StatefulSet>(&harness)
        .iter()
        .map(|name| stored::<StatefulSet>(&harness, name).spec)
        .collect();
    assert_eq!(before, after, "a password change rolls no pod");
    assert_no_object_holds(
        &harness,
        &["configmaps", "events.events.k8s.io", "trinoclusters"],
        ALICE_PASSWORD,
    );
}

#[tokio::test]
async fn the_discovery_config_map_carries_the_clusters_ca() {
    let harness = start();
    create_cluster(&harness, spec(json!({}))).await;
    let discovery = wait_for::<ConfigMap>(&harness, CLUSTER, "the CA", |config_map| {
        config_map
            .data
            .as_ref()
            .is_some_and(|data| data.contains_key("ca.crt"))
    })
    .await
    .data
    .unwrap_or_default();
    wait_for::<Secret>(&harness, "simple-trino-ca", "the CA", |_| true).await;
    assert_eq!(
        discovery["ca.crt"],
        secret_text(&harness, "simple-trino-ca", "ca.crt")
    );
    assert_eq!(discovery["TRINO_TLS"], "true");
    wait_for_event(&harness, CLUSTER, "Normal", "CertificateIssued").await;
}

#[rstest]
#[case::an_invalid_user_name(&[("al:ice", "pw")], None, "InvalidPasswordEntry", "\"al:ice\"")]
#[case::an_empty_password(&[("bob", "")], None, "InvalidPasswordEntry", "\"bob\"")]
#[case::rules_that_are_not_json(&[("bob", "pw")], Some("{catalogs"), "InvalidAccessRules", "trino-rules")]
#[tokio::test]
async fn invalid_users_or_rules_are_named_before_anything_is_applied(
    #[case] users: &[(&str, &str)],
    #[case] rules: Option<&str>,
    #[case] reason: &str,
    #[case] names: &str,
) {
    let harness = start();
    create_secret(&harness, USERS, users).await;
    if let Some(rules) = rules {
        create_rules(&harness, rules).await;
    }
    create_cluster(&harness, secured(rules.map(|_| RULES))).await;
    let degraded = wait_for_degraded::<TrinoCluster>(&harness, CLUSTER, reason).await;
    assert!(degraded.message.contains(names), "{degraded:?}");
    wait_for_event(&harness, CLUSTER, "Warning", reason).await;
    assert!(
        stored_names::<StatefulSet>(&harness).is_empty(),
        "nothing is applied"
    );
}

#[tokio::test]
async fn a_missing_users_secret_is_named_and_recovers() {
    let harness = start();
    create_cluster(&harness, secured(None)).await;
    let degraded = wait_for_degraded::<TrinoCluster>(&harness, CLUSTER, "SecretMissing").await;
    assert!(degraded.message.contains(USERS), "{degraded:?}");
    create_secret(&harness, USERS, &[("alice", ALICE_PASSWORD)]).await;
    wait_for::<Secret>(
        &harness,
        "simple-trino-password-db",
        "the users' file",
        |_| true,
    )
    .await;
}

/// Security review, finding 20: deleting `<trino>-internal-secret` is its rotation. The
/// operator makes a new Secret with a new id, and that id is in the restart-together
/// hash, so every pod restarts at once onto the new value; while the Secret stays, the
/// hash stays, reconcile after reconcile.
#[tokio::test]
async fn a_new_internal_secret_restarts_every_pod_together_and_an_old_one_none() {
    let harness = start();
    create_cluster(&harness, spec(json!({}))).await;
    let secret_name = format!("{CLUSTER}-internal-secret");
    let first = wait_for::<Secret>(&harness, &secret_name, "the internal secret", |_| true).await;
    run_until_settled(&harness, || {}).await;
    let together = || crate::template_annotations(&harness, RESTART_TOGETHER_ANNOTATION);
    let before = together();
    assert!(before.iter().all(Option::is_some), "{before:?}");
    assert_eq!(before[0], before[1], "one hash for every role group");
    run_until_settled(&harness, || {}).await;
    assert_eq!(together(), before, "an old Secret restarts nothing");

    Api::<Secret>::namespaced(harness.server.client(), harness.namespace)
        .delete(&secret_name, &Default::default())
        .await
        .expect("the Secret is deleted");
    let second = wait_for::<Secret>(&harness, &secret_name, "a new internal secret", |secret| {
        secret.metadata.uid != first.metadata.uid
    })
    .await;
    let id = |secret: &Secret| {
        secret
            .metadata
            .annotations
            .as_ref()
            .and_then(|annotations| annotations.get(SHARED_SECRET_ID_ANNOTATION).cloned())
    };
    assert!(id(&first).is_some() && id(&second).is_some() && id(&first) != id(&second));
    let after = strata_testing::wait::eventually(
        "a new restart-together hash on every role group",
        || {
            let now = together();
            (now.iter().all(|hash| hash.is_some() && *hash != before[0]) && now[0] == now[1])
                .then_some(now)
        },
        together,
    )
    .await;
    run_until_settled(&harness, || {}).await;
    assert_eq!(together(), after, "the new Secret's hash stays");
}
