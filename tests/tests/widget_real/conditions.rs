//! Conditions from real pods: KWOK's kubelets make them Ready, or report a crash loop
//! for a pod annotated [`SIMULATED_FAILURE_ANNOTATION`].

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use serde_json::json;
use strata_status::{ConditionStatus, ConditionType};
use strata_testing::control_plane::SIMULATED_FAILURE_ANNOTATION;

use crate::widget::{Widget, widget};
use crate::widgets::Widgets;

pub async fn follow_the_workload_and_its_pods(widgets: Widgets) {
    widgets.create(&widget("w", 2)).await;
    widgets.exists::<StatefulSet>("w").await;

    let available = widgets
        .wait_for_condition("w", ConditionType::Available, ConditionStatus::True, None)
        .await;
    assert_eq!(available.reason, "AsExpected");
    for (type_, status) in [
        (ConditionType::Progressing, ConditionStatus::False),
        (ConditionType::Degraded, ConditionStatus::False),
        (ConditionType::Upgradable, ConditionStatus::True),
    ] {
        widgets.wait_for_condition("w", type_, status, None).await;
    }
    widgets
        .wait_for("w", "the deployed version reported", |widget: &Widget| {
            (widget.status.as_ref()?.deployed_product_version.as_deref() == Some("1.0.0"))
                .then_some(())
        })
        .await;
    // The first status already saw the StatefulSet the same reconcile created, and
    // starting up is no warning.
    assert!(widgets.events("w", "NoWorkloads").await.is_empty());
    let warnings: Vec<_> = widgets
        .api::<k8s_openapi::api::events::v1::Event>()
        .list(&Default::default())
        .await
        .expect("the Events")
        .items
        .into_iter()
        .filter(|event| event.type_.as_deref() == Some("Warning"))
        .filter(|event| event.reporting_controller.as_deref() == Some(crate::widget::OPERATOR))
        .collect();
    assert!(warnings.is_empty(), "{warnings:#?}");

    // One pod's container crash-loops: Degraded with PodsFailing, not Available.
    widgets
        .merge::<Pod>(
            "w-1",
            json!({"metadata": {"annotations": {SIMULATED_FAILURE_ANNOTATION: "CrashLoopBackOff"}}}),
        )
        .await;
    widgets
        .wait_for_condition(
            "w",
            ConditionType::Degraded,
            ConditionStatus::True,
            Some("PodsFailing"),
        )
        .await;
    widgets
        .wait_for_condition("w", ConditionType::Available, ConditionStatus::False, None)
        .await;
    widgets
        .wait_for_condition(
            "w",
            ConditionType::Progressing,
            ConditionStatus::False,
            None,
        )
        .await;

    // The kubelet reports it running again: Available, not Degraded.
    widgets
        .merge::<Pod>(
            "w-1",
            json!({"metadata": {"annotations": {SIMULATED_FAILURE_ANNOTATION: null}}}),
        )
        .await;
    widgets
        .wait_for_condition("w", ConditionType::Available, ConditionStatus::True, None)
        .await;
    widgets
        .wait_for_condition("w", ConditionType::Degraded, ConditionStatus::False, None)
        .await;
}
