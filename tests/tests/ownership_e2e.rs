//! The apply step never takes over an object it does not own: one a user or
//! another tool created, or one another owner controls. Either makes the
//! resource Degraded with `ObjectNotOwned`, the object stays as it was, and
//! nothing else is applied until the name is free.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

#[allow(dead_code, unused_imports)] // shared with controller_e2e, which uses the rest of it
mod support;

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::ObjectMeta;
use strata_model::labels::MANAGED_BY_LABEL;
use strata_status::{ConditionStatus, ConditionType};
use strata_testing::wait::{exists, wait_for_event};
use support::wait::wait_for_reason;
use support::widget::{OPERATOR, create, start, widget};

fn users_config_map(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("default".to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("mine".to_owned(), "keep".to_owned())])),
        ..ConfigMap::default()
    }
}

/// Waits until widget `w` is Degraded with `ObjectNotOwned`, and returns the
/// Event that says so.
async fn wait_until_not_owned(harness: &support::Harness) -> serde_json::Value {
    wait_for_reason(
        harness,
        "w",
        ConditionType::Degraded,
        ConditionStatus::True,
        "ObjectNotOwned",
    )
    .await;
    wait_for_event(harness, "w", "Warning", "ObjectNotOwned").await
}

#[tokio::test]
async fn an_object_a_user_created_is_never_taken_over() {
    let harness = start();
    harness
        .server
        .upsert(&users_config_map("w-config"))
        .expect("the user's ConfigMap");

    create(&harness, &widget("w", 1)).await;
    let event = wait_until_not_owned(&harness).await;
    let note = event["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("ConfigMap/w-config") && note.contains("not controlled by any owner"),
        "{event}"
    );

    let kept = harness
        .server
        .get_typed::<ConfigMap>("default", "w-config")
        .expect("the user's ConfigMap is still there");
    assert_eq!(
        kept.metadata.owner_references, None,
        "no owner reference was added"
    );
    assert_eq!(kept.metadata.labels, None, "no label was added");
    assert_eq!(kept.data, users_config_map("w-config").data);
    assert!(
        harness
            .server
            .get_typed::<StatefulSet>("default", "w")
            .is_none(),
        "nothing else was applied"
    );

    // The user frees the name: the widget comes up without being touched again.
    harness
        .server
        .delete_direct::<ConfigMap>("default", "w-config")
        .expect("delete");
    exists::<StatefulSet>(&harness, "w").await;
    let config = exists::<ConfigMap>(&harness, "w-config").await;
    assert_eq!(config.metadata.labels.unwrap()[MANAGED_BY_LABEL], OPERATOR);
}

#[tokio::test]
async fn an_object_another_owner_controls_is_never_taken_over_even_with_our_label() {
    let harness = start();
    let mut theirs = users_config_map("w-config");
    theirs.metadata.labels = Some(BTreeMap::from([(
        MANAGED_BY_LABEL.to_owned(),
        OPERATOR.to_owned(),
    )]));
    theirs.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "test.strata.dev/v1alpha1".to_owned(),
        kind: "Widget".to_owned(),
        name: "other".to_owned(),
        uid: "uid-of-another-widget".to_owned(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }]);
    harness
        .server
        .upsert(&theirs)
        .expect("another owner's ConfigMap");

    create(&harness, &widget("w", 1)).await;
    let event = wait_until_not_owned(&harness).await;
    assert!(
        event["note"]
            .as_str()
            .is_some_and(|note| note.contains("controlled by Widget/other")),
        "{event}"
    );
    let kept = harness
        .server
        .get_typed::<ConfigMap>("default", "w-config")
        .expect("still there");
    assert_eq!(
        kept.metadata.owner_references,
        theirs.metadata.owner_references
    );
    assert_eq!(kept.data, theirs.data);
}

#[tokio::test]
async fn a_create_once_secret_of_someone_else_is_reported_not_kept_silently() {
    let harness = start();
    harness
        .server
        .upsert(&Secret {
            metadata: ObjectMeta {
                name: Some("w-key".to_owned()),
                namespace: Some("default".to_owned()),
                ..ObjectMeta::default()
            },
            ..Secret::default()
        })
        .expect("a user's Secret with the generated key's name");
    let mut keyed = widget("w", 1);
    keyed.spec.generated_key = true;
    create(&harness, &keyed).await;
    wait_until_not_owned(&harness).await;
}
