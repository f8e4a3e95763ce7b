//! Pause and stop (`spec.clusterOperation` and the `operator-command` annotation) on
//! the real API: no write to a paused cluster's children, and a stopped one at zero
//! replicas with its claims kept.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim};
use kube::ResourceExt;
use serde_json::json;
use strata_status::{ConditionStatus, ConditionType};

use crate::widget::widget;
use crate::widgets::{Widgets, since};

pub async fn pause_and_stop(widgets: Widgets) {
    let mut with_extra = widget("w", 3);
    with_extra.spec.extra = true;
    widgets.create(&with_extra).await;
    widgets.exists::<StatefulSet>("w").await;
    widgets.settle().await;

    widgets
        .patch_spec(
            "w",
            json!({"clusterOperation": {"reconciliationPaused": true}}),
        )
        .await;
    widgets
        .wait_for_condition("w", ConditionType::Paused, ConditionStatus::True, None)
        .await;
    let paused = widgets.settle().await;

    // While paused, drift is left alone and nothing but status and Events is written.
    widgets
        .merge::<StatefulSet>("w", json!({"spec": {"replicas": 4}}))
        .await;
    let before = widgets.reconciles();
    widgets
        .patch_spec("w", json!({"replicas": 2, "extra": false}))
        .await;
    let child_writes: Vec<String> = since(&paused, widgets.settle_after(before).await)
        .iter()
        .filter(|request| request.is_write())
        .filter(|request| request.resource != "widgets" && request.resource != "events")
        .map(|request| request.describe())
        .collect();
    assert_eq!(
        child_writes,
        Vec::<String>::new(),
        "a paused cluster's children must not be written"
    );
    let sts = widgets.api::<StatefulSet>().get("w").await.unwrap();
    assert_eq!(sts.spec.replicas, Some(4));
    assert!(
        widgets.stored::<ConfigMap>("w-extra").await.is_some(),
        "no pruning while paused"
    );

    // Stopping scales to zero and keeps the claims.
    widgets
        .patch_spec(
            "w",
            json!({"clusterOperation": {"reconciliationPaused": false, "stopped": true}}),
        )
        .await;
    widgets
        .wait_for("w", "scaled to zero", |sts: &StatefulSet| {
            (sts.spec.replicas == Some(0)).then_some(())
        })
        .await;
    widgets
        .wait_for_condition("w", ConditionType::Stopped, ConditionStatus::True, None)
        .await;
    widgets
        .wait_for_condition("w", ConditionType::Paused, ConditionStatus::False, None)
        .await;
    widgets
        .wait_for_condition(
            "w",
            ConditionType::Available,
            ConditionStatus::False,
            Some("ClusterStopped"),
        )
        .await;
    assert!(
        widgets
            .stored::<PersistentVolumeClaim>("w-scratch")
            .await
            .is_some()
    );
}

pub async fn the_operator_command_annotation_pauses_too(widgets: Widgets) {
    let mut annotated = widget("w", 1);
    annotated
        .annotations_mut()
        .insert("operator-command".into(), "Paused".into());
    widgets.create(&annotated).await;
    widgets
        .wait_for_condition("w", ConditionType::Paused, ConditionStatus::True, None)
        .await;
    widgets.settle().await;
    assert!(
        widgets.stored::<StatefulSet>("w").await.is_none(),
        "a cluster paused from the start gets no children"
    );
}
