//! Reading and waiting for the cluster's status conditions.

use strata_status::{ClusterCondition, ClusterStatus, ConditionStatus, ConditionType};
use zookeeper_operator::crd::ZookeeperCluster;

use super::{Harness, eventually};

/// The stored status of a cluster.
pub fn status(harness: &Harness, name: &str) -> Option<ClusterStatus> {
    harness
        .server
        .get_typed::<ZookeeperCluster>(harness.namespace, name)?
        .status
}

/// One stored condition of a cluster.
pub fn condition(harness: &Harness, name: &str, type_: ConditionType) -> Option<ClusterCondition> {
    status(harness, name)?.condition(type_).cloned()
}

/// Waits until the condition has `status`, and returns it (reason and message included).
pub async fn wait_for_condition(
    harness: &Harness,
    name: &str,
    type_: ConditionType,
    expected: ConditionStatus,
) -> ClusterCondition {
    eventually(
        &format!("{type_} becoming {expected} on {name}"),
        || condition(harness, name, type_).filter(|found| found.status == expected),
        || condition(harness, name, type_),
    )
    .await
}

/// Waits until the condition has `status` with `reason`.
pub async fn wait_for_reason(
    harness: &Harness,
    name: &str,
    type_: ConditionType,
    expected: ConditionStatus,
    reason: &str,
) -> ClusterCondition {
    eventually(
        &format!("{type_} becoming {expected} with reason {reason} on {name}"),
        || {
            condition(harness, name, type_)
                .filter(|found| found.status == expected && found.reason == reason)
        },
        || condition(harness, name, type_),
    )
    .await
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
