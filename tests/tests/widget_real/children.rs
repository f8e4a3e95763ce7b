//! The children the apply step makes: owned, labelled, applied server-side, restored
//! when edited, pruned when no longer wanted (never a claim), and collected by the real
//! garbage collector with their owner.

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Service};
use kube::ResourceExt;
use kube::api::DeleteParams;
use serde_json::json;

use crate::widget::{OPERATOR, widget};
use crate::widgets::{TIMEOUT, Widgets, since};

pub async fn owned_labelled_applied_and_collected(widgets: Widgets) {
    let created = widgets.create(&widget("w", 3)).await;
    let sts = widgets.exists::<StatefulSet>("w").await;
    widgets.exists::<ConfigMap>("w-config").await;
    widgets.exists::<Service>("w").await;

    let owner = &sts.owner_references()[0];
    assert_eq!(owner.uid, created.uid().expect("uid"));
    assert_eq!(owner.kind, "Widget");
    assert_eq!(owner.controller, Some(true));
    let labels = sts.labels();
    assert_eq!(labels["app.kubernetes.io/managed-by"], OPERATOR);
    assert_eq!(labels["app.kubernetes.io/instance"], "w");
    assert_eq!(labels["app.kubernetes.io/name"], "widget");
    assert_eq!(sts.spec.replicas, Some(3));
    let applied_by_operator = sts.managed_fields().iter().any(|entry| {
        entry.manager.as_deref() == Some(OPERATOR)
            && entry.operation.as_deref() == Some("Apply")
            && entry
                .fields_v1
                .as_ref()
                .is_some_and(|fields| fields.0["f:spec"]["f:replicas"].is_object())
    });
    assert!(
        applied_by_operator,
        "replicas must be owned by the operator's field manager, through apply: {:#?}",
        sts.managed_fields()
    );

    // In the foreground: the widget stays until the collector has removed its children,
    // and each removal wakes the operator, which must not apply them again.
    widgets
        .api::<crate::widget::Widget>()
        .delete("w", &DeleteParams::foreground())
        .await
        .expect("the widget is deleted");
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let left = (
            widgets
                .stored::<crate::widget::Widget>("w")
                .await
                .map(|widget| widget.metadata.name),
            widgets.stored::<StatefulSet>("w").await,
            widgets.stored::<ConfigMap>("w-config").await,
            widgets.stored::<Service>("w").await,
        );
        if matches!(left, (None, None, None, None)) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the garbage collector left children of a deleted widget: {left:#?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

pub async fn restored_and_economical(widgets: Widgets) {
    widgets.create_available(&widget("w", 2)).await;
    let settled = widgets.settle().await;

    // Nothing changed but an annotation: the reconcile reads from its caches only.
    let before = widgets.reconciles();
    widgets
        .merge::<crate::widget::Widget>(
            "w",
            json!({"metadata": {"annotations": {"touched": "by-test"}}}),
        )
        .await;
    // A watch the client renews on its own timer is not the reconcile's.
    let requests: Vec<String> = since(&settled, widgets.settle_after(before).await)
        .iter()
        .filter(|request| request.verb != "watch")
        .map(|request| request.describe())
        .collect();
    assert_eq!(
        requests,
        Vec::<String>::new(),
        "a steady-state reconcile sends no request at all: no write, no LIST, no GET"
    );

    // A user edits the children: the operator applies its own fields again.
    widgets
        .merge::<StatefulSet>("w", json!({"spec": {"replicas": 7}}))
        .await;
    widgets
        .wait_for("w", "replicas restored", |sts: &StatefulSet| {
            (sts.spec.replicas == Some(2)).then_some(())
        })
        .await;
    widgets
        .merge::<ConfigMap>("w-config", json!({"data": {"version": "edited"}}))
        .await;
    widgets
        .wait_for("w-config", "config restored", |config: &ConfigMap| {
            (config.data.as_ref()?.get("version")? == "1.0.0").then_some(())
        })
        .await;

    // A user deletes a child of a settled widget: its deletion alone, with nothing else
    // changing, brings it back (the next retry or resync is minutes away).
    widgets.settle().await;
    let deleted = widgets.api::<Service>().get("w").await.unwrap();
    widgets
        .api::<Service>()
        .delete("w", &DeleteParams::default())
        .await
        .expect("the Service is deleted");
    widgets
        .wait_for("w", "the deleted Service recreated", |service: &Service| {
            (service.metadata.uid != deleted.metadata.uid).then_some(())
        })
        .await;
}

pub async fn pruned_but_never_claims(widgets: Widgets) {
    let mut with_extra = widget("w", 1);
    with_extra.spec.extra = true;
    widgets.create(&with_extra).await;
    widgets.exists::<ConfigMap>("w-extra").await;
    widgets.exists::<PersistentVolumeClaim>("w-scratch").await;
    widgets.settle().await;

    widgets.patch_spec("w", json!({"extra": false})).await;
    let deadline = Instant::now() + TIMEOUT;
    while widgets.stored::<ConfigMap>("w-extra").await.is_some() {
        assert!(Instant::now() < deadline, "w-extra was never pruned");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let requests = widgets.settle().await;

    assert!(
        widgets
            .stored::<PersistentVolumeClaim>("w-scratch")
            .await
            .is_some(),
        "a claim must never be pruned"
    );
    let claim_deletions: Vec<String> = requests
        .iter()
        .filter(|request| request.resource == "persistentvolumeclaims" && request.verb == "delete")
        .map(|request| request.describe())
        .collect();
    assert_eq!(claim_deletions, Vec::<String>::new());
    widgets.exists::<StatefulSet>("w").await;
}

/// An operator that starts again (a rolling update of the operator, a new leader) finds
/// its children in its new caches and sends nothing for a settled widget: no apply, no
/// status write.
pub async fn a_restarted_operator_applies_nothing_again(widgets: Widgets) {
    let mut widgets = widgets;
    widgets.create_available(&widget("w", 2)).await;
    let settled = widgets.settle().await;

    widgets.restart_operator();
    let requests = since(&settled, widgets.settle_after(0).await);
    let writes: Vec<String> = requests
        .iter()
        .filter(|request| request.is_write())
        .map(|request| request.describe())
        .collect();
    assert_eq!(
        writes,
        Vec::<String>::new(),
        "a restarted operator re-applies nothing of a settled widget"
    );
}
