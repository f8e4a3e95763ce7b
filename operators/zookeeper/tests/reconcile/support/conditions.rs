//! The cluster's status conditions, through the shared waits.

use strata_status::{ClusterCondition, ClusterStatus, ConditionStatus, ConditionType};
use strata_testing::wait;
use zookeeper_operator::crd::ZookeeperCluster;

use serde_json::json;

use super::{Harness, eventually, patch_spec};

/// The stored status of a cluster.
pub fn status(harness: &Harness, name: &str) -> Option<ClusterStatus> {
    harness
        .server
        .get_typed::<ZookeeperCluster>(harness.namespace, name)?
        .status
}

/// Waits until the cluster's condition has `expected` status, and returns it.
pub async fn wait_for_condition(
    harness: &Harness,
    name: &str,
    type_: ConditionType,
    expected: ConditionStatus,
) -> ClusterCondition {
    wait::wait_for_condition::<ZookeeperCluster>(harness, name, type_, expected).await
}

/// Waits until the cluster's condition has `expected` status with `reason`.
pub async fn wait_for_reason(
    harness: &Harness,
    name: &str,
    type_: ConditionType,
    expected: ConditionStatus,
    reason: &str,
) -> ClusterCondition {
    wait::wait_for_reason::<ZookeeperCluster>(harness, name, type_, expected, reason).await
}

/// Waits until the status reports `version` as the deployed product version.
pub async fn wait_for_deployed_version(harness: &Harness, name: &str, version: &str) {
    eventually(
        &format!("deployedProductVersion becoming {version} on {name}"),
        || {
            status(harness, name)
                .filter(|status| status.deployed_product_version.as_deref() == Some(version))
        },
        || status(harness, name),
    )
    .await;
}

/// Pauses reconciliation of the cluster `name` and waits until its Paused condition
/// says so.
pub async fn pause(harness: &Harness, name: &str) {
    patch_spec(
        harness,
        name,
        json!({"clusterOperation": {"reconciliationPaused": true}}),
    )
    .await;
    wait_for_reason(
        harness,
        name,
        ConditionType::Paused,
        ConditionStatus::True,
        "ReconciliationPaused",
    )
    .await;
}
