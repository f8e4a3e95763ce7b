//! The shared runtime's references and create-once objects on real watches.
//!
//! The periodic resync is ten minutes and every wait here is a minute at most, so each
//! recovery below proves that a change to a referenced object requeued its owner
//! through the API server's watch.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use serde_json::json;
use strata_status::{ConditionStatus, ConditionType};

use crate::widget::{Widget, widget};
use crate::widgets::{Widgets, since};

fn greeting(name: &str, text: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("greeting".to_owned(), text.to_owned())])),
        ..ConfigMap::default()
    }
}

/// Creates or replaces a ConfigMap as a user would (`kubectl apply --server-side`).
async fn apply_config_map(widgets: &Widgets, config_map: &ConfigMap) {
    let name = config_map.metadata.name.clone().unwrap_or_default();
    let mut document = serde_json::to_value(config_map).unwrap();
    document["apiVersion"] = json!("v1");
    document["kind"] = json!("ConfigMap");
    widgets
        .api::<ConfigMap>()
        .patch(
            &name,
            &PatchParams::apply("a-user").force(),
            &Patch::Apply(document),
        )
        .await
        .unwrap_or_else(|error| panic!("the ConfigMap {name} is applied: {error}"));
}

async fn wait_for_greeting(widgets: &Widgets, expected: &str) {
    widgets
        .wait_for(
            "w-config",
            &format!("the greeting {expected:?} in the widget's config"),
            |config: &ConfigMap| (config.data.as_ref()?.get("greeting")? == expected).then_some(()),
        )
        .await;
}

fn greeted_widget() -> Widget {
    let mut greeted = widget("w", 1);
    greeted.spec.greeting_config_map = Some("greetings".to_owned());
    greeted
}

pub async fn a_missing_config_map_is_reported_and_requeues(widgets: Widgets) {
    widgets.create(&greeted_widget()).await;
    widgets
        .wait_for_condition(
            "w",
            ConditionType::Degraded,
            ConditionStatus::True,
            Some("ConfigMapMissing"),
        )
        .await;
    widgets.wait_for_event("w", "ConfigMapMissing").await;

    apply_config_map(&widgets, &greeting("greetings", "hello")).await;
    wait_for_greeting(&widgets, "hello").await;
    widgets
        .wait_for_condition("w", ConditionType::Degraded, ConditionStatus::False, None)
        .await;
}

pub async fn an_edit_rolls_in_and_an_unrelated_one_does_not(widgets: Widgets) {
    apply_config_map(&widgets, &greeting("greetings", "hello")).await;
    widgets.create(&greeted_widget()).await;
    wait_for_greeting(&widgets, "hello").await;

    apply_config_map(&widgets, &greeting("greetings", "good morning")).await;
    wait_for_greeting(&widgets, "good morning").await;
    widgets.settle().await;

    let before = widgets.reconciles();
    apply_config_map(&widgets, &greeting("unrelated", "noise")).await;
    widgets.settle().await;
    assert_eq!(widgets.reconciles(), before, "nobody refers to it");
}

pub async fn a_missing_secret_is_reported_and_requeues(widgets: Widgets) {
    let mut w = widget("w", 1);
    w.spec.credentials_secret = Some("credentials".to_owned());
    widgets.create(&w).await;
    widgets
        .wait_for_condition(
            "w",
            ConditionType::Degraded,
            ConditionStatus::True,
            Some("SecretMissing"),
        )
        .await;

    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("credentials".to_owned()),
            ..ObjectMeta::default()
        },
        string_data: Some(BTreeMap::from([(
            "password".to_owned(),
            "do-not-leak".to_owned(),
        )])),
        ..Secret::default()
    };
    widgets
        .api::<Secret>()
        .create(&PostParams::default(), &secret)
        .await
        .expect("the Secret is created");
    widgets
        .wait_for_condition("w", ConditionType::Degraded, ConditionStatus::False, None)
        .await;
}

pub async fn a_create_once_secret_is_never_overwritten(widgets: Widgets) {
    let mut w = widget("w", 1);
    w.spec.generated_key = true;
    widgets.create(&w).await;
    let secret = widgets.exists::<Secret>("w-key").await;
    let key = secret
        .data
        .as_ref()
        .and_then(|data| data.get("KEY"))
        .map(|value| String::from_utf8_lossy(&value.0).into_owned())
        .expect("the generated key");
    assert_eq!(key.len(), 64, "32 random bytes, hex-encoded");
    let settled = widgets.settle().await;

    // A user (or a rotation) replaces the value; the operator must keep it.
    widgets
        .merge::<Secret>("w-key", json!({"stringData": {"KEY": "rotated"}}))
        .await;
    let before = widgets.reconciles();
    widgets
        .merge::<Widget>(
            "w",
            json!({"metadata": {"annotations": {"touched": "yes"}}}),
        )
        .await;
    let requests = widgets.settle_after(before).await;

    let kept = widgets.api::<Secret>().get("w-key").await.unwrap();
    assert_eq!(
        kept.data
            .as_ref()
            .and_then(|data| data.get("KEY"))
            .map(|value| value.0.as_slice()),
        Some(b"rotated".as_slice())
    );
    let secret_writes: Vec<String> = requests
        .iter()
        .filter(|request| request.resource == "secrets" && request.is_write())
        .map(|request| request.describe())
        .collect();
    assert_eq!(
        secret_writes.len(),
        1,
        "the Secret is created once and never written again: {secret_writes:?}"
    );
    assert!(
        since(&settled, requests)
            .iter()
            .all(|request| request.resource != "secrets" || !request.is_write())
    );
}
