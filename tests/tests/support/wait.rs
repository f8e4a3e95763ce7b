//! Waiting for the test operator's conditions on the in-memory API.

use strata_status::{ConditionStatus, ConditionType};

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
