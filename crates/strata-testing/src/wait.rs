//! Waiting for what an operator does, and reading it back, for any kind.
//!
//! Every wait polls the in-memory API and fails after [`TIMEOUT`] with what it
//! waited for and the last state it saw, so a failing test says what was wrong.

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::time::Duration;

use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::Value;
use strata_status::{ClusterCondition, ConditionStatus, ConditionType, ResourceStatus};
use strata_test_apiserver::ResourceKey;

use crate::harness::{Harness, TIMEOUT};

/// How often the waits look again.
const POLL: Duration = Duration::from_millis(20);

/// Polls `probe` until it returns `Some`, failing after [`TIMEOUT`] with `what`
/// and the last thing `describe` reports.
pub async fn eventually<T, D: Debug>(
    what: &str,
    mut probe: impl FnMut() -> Option<T>,
    describe: impl Fn() -> D,
) -> T {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what} did not happen within {TIMEOUT:?}; last seen: {:#?}",
            describe()
        );
        tokio::time::sleep(POLL).await;
    }
}

/// Reads a stored object that the test expects to exist.
pub fn stored<K>(harness: &Harness, name: &str) -> K
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    harness
        .server
        .get_typed::<K>(harness.namespace, name)
        .unwrap_or_else(|| panic!("{} {name} does not exist", K::kind(&())))
}

/// Waits until an object exists and satisfies `predicate`.
pub async fn wait_for<K>(
    harness: &Harness,
    name: &str,
    what: &str,
    predicate: impl Fn(&K) -> bool,
) -> K
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    harness
        .server
        .wait_for::<K>(harness.namespace, name, predicate, TIMEOUT)
        .await
        .unwrap_or_else(|error| panic!("{} {name}: {what}: {error}", K::kind(&())))
}

/// Waits until an object exists and returns it.
pub async fn exists<K>(harness: &Harness, name: &str) -> K
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    wait_for::<K>(harness, name, "was never created", |_| true).await
}

/// Names of every stored object of a kind, in the harness's namespace.
pub fn stored_names<K>(harness: &Harness) -> BTreeSet<String>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    harness
        .server
        .list_typed::<K>()
        .iter()
        .filter(|object| object.namespace().as_deref() == Some(harness.namespace))
        .map(ResourceExt::name_any)
        .collect()
}

/// One stored condition of an object of kind `K`, read from its JSON, so that
/// it works for every status type that keeps ADR027 `conditions`.
pub fn condition<K>(harness: &Harness, name: &str, type_: ConditionType) -> Option<ClusterCondition>
where
    K: Resource<DynamicType = ()>,
{
    let resource = ResourceKey::of::<K>().to_string();
    let object = harness.server.object(&resource, harness.namespace, name)?;
    serde_json::from_value::<ResourceStatus>(object["status"].clone())
        .ok()?
        .condition(type_)
        .cloned()
}

/// Waits until the condition has `expected` status, and returns it.
pub async fn wait_for_condition<K>(
    harness: &Harness,
    name: &str,
    type_: ConditionType,
    expected: ConditionStatus,
) -> ClusterCondition
where
    K: Resource<DynamicType = ()>,
{
    eventually(
        &format!("{type_} becoming {expected} on {} {name}", K::kind(&())),
        || condition::<K>(harness, name, type_).filter(|found| found.status == expected),
        || condition::<K>(harness, name, type_),
    )
    .await
}

/// Waits until the condition has `expected` status with `reason`.
pub async fn wait_for_reason<K>(
    harness: &Harness,
    name: &str,
    type_: ConditionType,
    expected: ConditionStatus,
    reason: &str,
) -> ClusterCondition
where
    K: Resource<DynamicType = ()>,
{
    eventually(
        &format!(
            "{type_} becoming {expected} with reason {reason} on {} {name}",
            K::kind(&())
        ),
        || {
            condition::<K>(harness, name, type_)
                .filter(|found| found.status == expected && found.reason == reason)
        },
        || condition::<K>(harness, name, type_),
    )
    .await
}

/// Waits until `name` is Available as expected: how a test says the cluster is up.
pub async fn wait_for_available<K>(harness: &Harness, name: &str) -> ClusterCondition
where
    K: Resource<DynamicType = ()>,
{
    wait_for_reason::<K>(
        harness,
        name,
        ConditionType::Available,
        ConditionStatus::True,
        "AsExpected",
    )
    .await
}

/// Waits until `name` is Degraded with `reason`: how a test says that bad input was
/// reported.
pub async fn wait_for_degraded<K>(harness: &Harness, name: &str, reason: &str) -> ClusterCondition
where
    K: Resource<DynamicType = ()>,
{
    wait_for_reason::<K>(
        harness,
        name,
        ConditionType::Degraded,
        ConditionStatus::True,
        reason,
    )
    .await
}

/// Events published about the object `name`, as stored JSON.
pub fn events_about(harness: &Harness, name: &str) -> Vec<Value> {
    harness
        .server
        .objects("events.events.k8s.io")
        .into_iter()
        .filter(|event| event["regarding"]["name"] == name)
        .collect()
}

/// Waits for an Event of `event_type` with `reason` about the object `name`.
pub async fn wait_for_event(
    harness: &Harness,
    name: &str,
    event_type: &str,
    reason: &str,
) -> Value {
    eventually(
        &format!("a {event_type} Event {reason} about {name}"),
        || {
            events_about(harness, name)
                .into_iter()
                .find(|event| event["type"] == event_type && event["reason"] == reason)
        },
        || events_about(harness, name),
    )
    .await
}

/// Fails when any stored object of the `resources` (such as `configmaps`,
/// `events.events.k8s.io`) holds `secret_value`: what an operator writes must never
/// carry a Secret's value.
pub fn assert_no_object_holds(harness: &Harness, resources: &[&str], secret_value: &str) {
    for resource in resources {
        for object in harness.server.objects(resource) {
            let text = object.to_string();
            assert!(
                !text.contains(secret_value),
                "{resource} holds a Secret value: {text}"
            );
        }
    }
}
