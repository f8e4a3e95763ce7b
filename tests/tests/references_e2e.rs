//! The shared runtime's references, create-once objects and unreadable objects,
//! against the in-memory API with a real kube-runtime `Controller`.
//!
//! The periodic resync is ten minutes and every wait here is ten seconds, so each
//! recovery below proves that a change to a referenced object requeued its owner.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

#[allow(dead_code)] // shared with controller_e2e, which uses the rest of it
mod support;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::ResourceExt;
use kube::api::ObjectMeta;
use serde_json::json;
use strata_status::{ConditionStatus, ConditionType};
use strata_testing::wait::exists;
use support::TIMEOUT;
use support::wait::{wait_for_condition, wait_for_reason};
use support::widget::{Widget, create, start, widget};

fn greeting(name: &str, text: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("default".to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("greeting".to_owned(), text.to_owned())])),
        ..ConfigMap::default()
    }
}

async fn wait_for_greeting(harness: &support::Harness, expected: &str) {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let actual = harness
            .server
            .get_typed::<ConfigMap>("default", "w-config")
            .and_then(|config| config.data)
            .and_then(|data| data.get("greeting").cloned());
        if actual.as_deref() == Some(expected) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the widget's config never got greeting {expected:?}; it has {actual:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

fn events_with_reason(harness: &support::Harness, reason: &str) -> Vec<serde_json::Value> {
    harness
        .server
        .objects("events.events.k8s.io")
        .into_iter()
        .filter(|event| event["reason"] == reason)
        .collect()
}

#[tokio::test]
async fn a_missing_config_map_is_reported_and_its_creation_requeues_the_owner() {
    let harness = start();
    let mut w = widget("w", 1);
    w.spec.greeting_config_map = Some("greetings".to_owned());
    create(&harness, &w).await;

    let reason = wait_for_condition(
        &harness,
        "w",
        ConditionType::Degraded,
        ConditionStatus::True,
    )
    .await;
    assert_eq!(reason, "ConfigMapMissing");
    assert!(
        !events_with_reason(&harness, "ConfigMapMissing").is_empty(),
        "a missing reference must be announced in an Event"
    );

    harness
        .server
        .upsert(&greeting("greetings", "hello"))
        .expect("create the referenced ConfigMap");
    wait_for_greeting(&harness, "hello").await;
    wait_for_condition(
        &harness,
        "w",
        ConditionType::Degraded,
        ConditionStatus::False,
    )
    .await;
}

#[tokio::test]
async fn an_edit_of_a_referenced_config_map_rolls_into_the_owner() {
    let harness = start();
    harness
        .server
        .upsert(&greeting("greetings", "hello"))
        .expect("create the referenced ConfigMap");
    let mut w = widget("w", 1);
    w.spec.greeting_config_map = Some("greetings".to_owned());
    create(&harness, &w).await;
    wait_for_greeting(&harness, "hello").await;

    harness
        .server
        .upsert(&greeting("greetings", "good morning"))
        .expect("edit the referenced ConfigMap");
    wait_for_greeting(&harness, "good morning").await;
}

#[tokio::test]
async fn an_unrelated_config_map_does_not_requeue_anyone() {
    let harness = start();
    harness
        .server
        .upsert(&greeting("greetings", "hello"))
        .expect("create the referenced ConfigMap");
    let mut w = widget("w", 1);
    w.spec.greeting_config_map = Some("greetings".to_owned());
    create(&harness, &w).await;
    wait_for_greeting(&harness, "hello").await;
    harness.settle().await;

    let before = harness.reconciles();
    harness
        .server
        .upsert(&greeting("unrelated", "noise"))
        .expect("create an unrelated ConfigMap");
    harness.settle().await;
    assert_eq!(harness.reconciles(), before);
}

#[tokio::test]
async fn a_missing_secret_is_reported_without_reading_any_secret_value() {
    let harness = start();
    let mut w = widget("w", 1);
    w.spec.credentials_secret = Some("credentials".to_owned());
    create(&harness, &w).await;
    wait_for_reason(
        &harness,
        "w",
        ConditionType::Degraded,
        ConditionStatus::True,
        "SecretMissing",
    )
    .await;

    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("credentials".to_owned()),
            namespace: Some("default".to_owned()),
            ..ObjectMeta::default()
        },
        string_data: Some(BTreeMap::from([(
            "password".to_owned(),
            "do-not-leak".to_owned(),
        )])),
        ..Secret::default()
    };
    harness.server.upsert(&secret).expect("create the Secret");
    wait_for_condition(
        &harness,
        "w",
        ConditionType::Degraded,
        ConditionStatus::False,
    )
    .await;

    let secret_reads: Vec<_> = harness
        .server
        .requests()
        .into_iter()
        .filter(|request| request.resource == "secrets" && request.verb.is_read())
        .collect();
    assert!(
        !secret_reads.is_empty(),
        "the Secret must be watched, not ignored"
    );
    assert!(
        secret_reads.iter().all(|request| request.metadata_only),
        "every read of Secrets must ask for metadata only: {secret_reads:?}"
    );
}

#[tokio::test]
async fn a_create_once_secret_is_generated_once_and_never_overwritten() {
    let harness = start();
    let mut w = widget("w", 1);
    w.spec.generated_key = true;
    create(&harness, &w).await;
    let secret = exists::<Secret>(&harness, "w-key").await;
    // Like the real API server, the in-memory one stores `stringData` as `data`.
    let key = secret
        .data
        .as_ref()
        .and_then(|data| data.get("KEY"))
        .map(|value| String::from_utf8_lossy(&value.0).into_owned())
        .expect("the generated key");
    assert_eq!(key.len(), 64, "32 random bytes, hex-encoded");
    harness.settle().await;

    // A user (or a rotation) replaces the value; the operator must keep it.
    harness
        .server
        .modify::<Secret>("default", "w-key", |secret| {
            secret.string_data = Some(BTreeMap::from([("KEY".to_owned(), "rotated".to_owned())]));
        })
        .expect("edit the Secret");
    let before = harness.reconciles();
    harness
        .server
        .modify::<Widget>("default", "w", |widget| {
            widget
                .annotations_mut()
                .insert("touched".into(), "yes".into());
        })
        .expect("touch the widget");
    assert!(harness.wait_for_reconcile_after(before).await);
    harness.settle().await;

    let kept = harness
        .server
        .get_typed::<Secret>("default", "w-key")
        .expect("the Secret still exists");
    assert_eq!(
        kept.data
            .as_ref()
            .and_then(|data| data.get("KEY"))
            .map(|value| value.0.as_slice()),
        Some(b"rotated".as_slice())
    );
    let operator_secret_writes: Vec<_> = harness
        .server
        .writes()
        .into_iter()
        .filter(|request| request.resource == "secrets")
        .collect();
    assert_eq!(
        operator_secret_writes.len(),
        1,
        "the Secret is created once and never written again: {operator_secret_writes:?}"
    );
}

#[tokio::test]
async fn an_unreadable_widget_gets_an_event_and_the_others_keep_reconciling() {
    let harness = start();
    harness
        .server
        .upsert_value(
            "widgets.test.strata.dev",
            json!({
                "apiVersion": "test.strata.dev/v1alpha1",
                "kind": "Widget",
                "metadata": {"name": "broken", "namespace": "default"},
                "spec": {"replicas": "three", "version": "1"}
            }),
        )
        .expect("store the unreadable widget");
    create(&harness, &widget("good", 1)).await;
    exists::<k8s_openapi::api::apps::v1::StatefulSet>(&harness, "good").await;

    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let events = events_with_reason(&harness, "InvalidObject");
        if let Some(event) = events.first() {
            assert_eq!(event["regarding"]["name"], "broken");
            assert_eq!(event["type"], "Warning");
            let note = event["note"].as_str().unwrap_or_default();
            assert!(
                note.contains("replicas"),
                "the note names the field: {note}"
            );
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no InvalidObject Event for the unreadable widget"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    // Later changes to good widgets are still reconciled.
    support::widget::patch_spec(&harness, "good", json!({"replicas": 2})).await;
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    while harness
        .server
        .get_typed::<k8s_openapi::api::apps::v1::StatefulSet>("default", "good")
        .and_then(|sts| sts.spec.replicas)
        != Some(2)
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the good widget stopped being reconciled"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(
        harness
            .server
            .get_typed::<Widget>("default", "good")
            .is_some_and(|widget| widget.name_any() == "good")
    );
}
