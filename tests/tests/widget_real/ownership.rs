//! The apply step never takes over an object it does not own: one a user created, or
//! one another owner controls. Either makes the widget Degraded with `ObjectNotOwned`,
//! the object stays as it was, and nothing else is applied until the name is free.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use strata_model::labels::MANAGED_BY_LABEL;
use strata_status::{ConditionStatus, ConditionType};

use crate::widget::{OPERATOR, widget};
use crate::widgets::Widgets;

fn users_config_map(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("mine".to_owned(), "keep".to_owned())])),
        ..ConfigMap::default()
    }
}

/// Waits until widget `name` is Degraded with `ObjectNotOwned`; returns the Event's
/// note.
async fn wait_until_not_owned(widgets: &Widgets, name: &str) -> String {
    widgets
        .wait_for_condition(
            name,
            ConditionType::Degraded,
            ConditionStatus::True,
            Some("ObjectNotOwned"),
        )
        .await;
    let event = widgets.wait_for_event(name, "ObjectNotOwned").await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    event.note.unwrap_or_default()
}

/// Run with a quick retry of failures that need the user: the operator watches only
/// what it labels, so the user deleting their own object shows at the next retry.
pub async fn a_users_object_is_never_taken_over(widgets: Widgets) {
    widgets
        .api::<ConfigMap>()
        .create(&PostParams::default(), &users_config_map("w-config"))
        .await
        .expect("the user's ConfigMap");

    widgets.create(&widget("w", 1)).await;
    let note = wait_until_not_owned(&widgets, "w").await;
    assert!(
        note.contains("ConfigMap/w-config") && note.contains("not controlled by any owner"),
        "{note}"
    );
    let kept = widgets.api::<ConfigMap>().get("w-config").await.unwrap();
    assert_eq!(
        kept.metadata.owner_references, None,
        "no owner reference added"
    );
    assert_eq!(kept.metadata.labels, None, "no label added");
    assert_eq!(kept.data, users_config_map("w-config").data);
    assert!(
        widgets.stored::<StatefulSet>("w").await.is_none(),
        "nothing else was applied"
    );

    // The user frees the name: the widget comes up without being touched again.
    widgets
        .api::<ConfigMap>()
        .delete("w-config", &DeleteParams::default())
        .await
        .expect("the user's ConfigMap is deleted");
    widgets.exists::<StatefulSet>("w").await;
    let config = widgets
        .wait_for(
            "w-config",
            "the widget's own config",
            |config: &ConfigMap| config.metadata.labels.clone(),
        )
        .await;
    assert_eq!(config[MANAGED_BY_LABEL], OPERATOR);
}

pub async fn another_owners_object_is_never_taken_over(widgets: Widgets) {
    // A real owner: another widget, paused so that it writes nothing itself.
    let mut other = widget("other", 1);
    other
        .metadata
        .annotations
        .get_or_insert_default()
        .insert("operator-command".into(), "Paused".into());
    let other = widgets.create(&other).await;
    let mut theirs = users_config_map("w-config");
    theirs.metadata.labels = Some(BTreeMap::from([(
        MANAGED_BY_LABEL.to_owned(),
        OPERATOR.to_owned(),
    )]));
    theirs.metadata.owner_references = Some(vec![
        kube::Resource::controller_owner_ref(&other, &()).expect("an owner reference"),
    ]);
    widgets
        .api::<ConfigMap>()
        .create(&PostParams::default(), &theirs)
        .await
        .expect("another owner's ConfigMap");

    widgets.create(&widget("w", 1)).await;
    let note = wait_until_not_owned(&widgets, "w").await;
    assert!(note.contains("controlled by Widget/other"), "{note}");
    let kept = widgets.api::<ConfigMap>().get("w-config").await.unwrap();
    assert_eq!(
        kept.metadata.owner_references,
        theirs.metadata.owner_references
    );
    assert_eq!(kept.data, theirs.data);
}

pub async fn someone_elses_create_once_secret_is_reported(widgets: Widgets) {
    widgets
        .api::<Secret>()
        .create(
            &PostParams::default(),
            &Secret {
                metadata: ObjectMeta {
                    name: Some("w-key".to_owned()),
                    ..ObjectMeta::default()
                },
                ..Secret::default()
            },
        )
        .await
        .expect("a user's Secret with the generated key's name");
    let mut keyed = widget("w", 1);
    keyed.spec.generated_key = true;
    widgets.create(&keyed).await;
    wait_until_not_owned(&widgets, "w").await;
}
