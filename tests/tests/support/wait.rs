//! Waiting for the test operator's conditions and objects, and acting as a user.

use k8s_openapi::api::apps::v1::StatefulSet;
use strata_status::{ConditionStatus, ConditionType};
use strata_testing::workloads::PodState;

use super::Harness;
use super::widget::Widget;
use strata_testing::wait;

/// Waits until the widget's condition has `status`, and returns its reason.
pub async fn wait_for_condition(
    harness: &Harness,
    name: &str,
    type_: ConditionType,
    status: ConditionStatus,
) -> String {
    wait::wait_for_condition::<Widget>(harness, name, type_, status)
        .await
        .reason
}

/// A Pod as the kubelet reports it, from the current template.
pub fn pod<'a>(phase: &'a str, waiting: Option<&'a str>) -> PodState<'a> {
    PodState {
        phase,
        waiting,
        version: None,
        ready: true,
    }
}

/// Waits until the widget's condition has `status` with `reason`.
pub async fn wait_for_reason(
    harness: &Harness,
    name: &str,
    type_: ConditionType,
    status: ConditionStatus,
    reason: &str,
) {
    wait::wait_for_reason::<Widget>(harness, name, type_, status, reason).await;
}

/// Changes the StatefulSet's replicas as another actor (a user) would.
pub fn edit_replicas(harness: &Harness, replicas: i32) {
    harness
        .server
        .modify::<StatefulSet>(harness.namespace, "w", |sts| {
            sts.spec.replicas = Some(replicas);
        })
        .expect("drift");
}
