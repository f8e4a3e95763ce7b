//! Waiting for the test operator's conditions and objects, and acting as a user.

use k8s_openapi::api::apps::v1::StatefulSet;
use strata_operator::testing::workloads::PodState;
use strata_status::{ConditionStatus, ConditionType};

use super::widget::Widget;
use super::{Harness, TIMEOUT};

pub fn condition(
    harness: &Harness,
    name: &str,
    type_: ConditionType,
) -> Option<(ConditionStatus, String)> {
    let widget = harness
        .server
        .get_typed::<Widget>(harness.namespace, name)?;
    let condition = widget.status?.condition(type_)?.clone();
    Some((condition.status, condition.reason))
}

pub async fn wait_for_condition(
    harness: &Harness,
    name: &str,
    type_: ConditionType,
    status: ConditionStatus,
) -> String {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        if let Some((actual, reason)) = condition(harness, name, type_)
            && actual == status
        {
            return reason;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{type_} never became {status}; it is {:?}",
            condition(harness, name, type_)
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// A Pod as the kubelet reports it, from the current template.
pub fn pod<'a>(phase: &'a str, waiting: Option<&'a str>) -> PodState<'a> {
    PodState {
        phase,
        waiting,
        version: None,
    }
}

pub async fn wait_for_reason(
    harness: &Harness,
    name: &str,
    type_: ConditionType,
    status: ConditionStatus,
    reason: &str,
) {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    while condition(harness, name, type_) != Some((status, reason.to_owned())) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{type_} never became {status} with reason {reason}; it is {:?}",
            condition(harness, name, type_)
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Waits until an object exists and returns it.
pub async fn exists<K>(harness: &Harness, name: &str) -> K
where
    K: kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
{
    harness
        .server
        .wait_for::<K>(harness.namespace, name, |_| true, TIMEOUT)
        .await
        .unwrap_or_else(|error| panic!("{} {name} was never created: {error}", K::kind(&())))
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
