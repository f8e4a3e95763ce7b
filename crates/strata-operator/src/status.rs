//! Step 5 of the pipeline: observe the workloads, compute the status, write
//! it only when it changed, and tell people about transitions.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference, Time};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Resource, ResourceExt};
use serde::Serialize;
use strata_status::{
    ClusterCondition, ClusterInputs, ClusterStatus, ConditionStatus, ConditionType, OperationState,
    WorkloadObservation, cluster_conditions, needs_write, next_deployed_version,
};

use crate::apply::{ApplyReport, DesiredObjects};
use crate::cache::ChildCaches;
use crate::controller::Context;
use crate::error::ReconcileError;
use crate::metrics::ConditionLabels;

/// How long a healthy object waits for its next periodic reconcile. Watches
/// trigger reconciles on every change; this only bounds how long a missed
/// event can go unnoticed, and costs nothing in steady state.
pub const RESYNC_PERIOD: Duration = Duration::from_secs(600);

/// The kinds [`observe_workloads`] turns into observations; the others are
/// not even scanned.
const WORKLOAD_KINDS: [&str; 3] = ["StatefulSet", "Deployment", "DaemonSet"];

/// The workloads `owner_ref` controls, each with the pods its selector picks.
///
/// Workloads come from the watch caches, corrected by what this reconcile's
/// apply step just did (`applied`): objects it applied are observed as the
/// API server returned them, and objects it pruned are left out. Without
/// that, the first status of a new cluster would say it has no workloads,
/// because the caches see the new objects a moment later.
pub fn observe_workloads(
    caches: &ChildCaches,
    owner_ref: &OwnerReference,
    namespace: &str,
    applied: Option<&ApplyReport>,
) -> Vec<WorkloadObservation> {
    let mut workloads: BTreeMap<(String, String), DynamicObject> = caches
        .controlled_by_of_kinds(owner_ref, namespace, |kind| {
            WORKLOAD_KINDS.contains(&kind.resource.kind.as_str())
        })
        .into_iter()
        .map(|(kind, object)| {
            (
                (kind.resource.kind, object.name_any()),
                object.as_ref().clone(),
            )
        })
        .collect();
    if let Some(report) = applied {
        for response in &report.responses {
            let kind = response
                .types
                .as_ref()
                .map(|types| types.kind.clone())
                .unwrap_or_default();
            if WORKLOAD_KINDS.contains(&kind.as_str()) {
                workloads.insert((kind, response.name_any()), response.clone());
            }
        }
        workloads.retain(|(kind, name), _| !report.pruned.contains(&format!("{kind}/{name}")));
    }
    workloads
        .into_iter()
        .filter_map(|((kind, _), object)| match kind.as_str() {
            "StatefulSet" => observe(
                caches,
                namespace,
                object,
                |w: &StatefulSet| Some(&w.spec.selector),
                WorkloadObservation::from_stateful_set,
            ),
            "Deployment" => observe(
                caches,
                namespace,
                object,
                |w: &Deployment| Some(&w.spec.selector),
                WorkloadObservation::from_deployment,
            ),
            "DaemonSet" => observe(
                caches,
                namespace,
                object,
                |w: &DaemonSet| Some(&w.spec.selector),
                WorkloadObservation::from_daemon_set,
            ),
            _ => None,
        })
        .collect()
}

/// Parses a cached workload and observes it with the pods its selector picks.
fn observe<W>(
    caches: &ChildCaches,
    namespace: &str,
    object: kube::api::DynamicObject,
    selector: fn(&W) -> Option<&LabelSelector>,
    observation: fn(&W, &[Pod]) -> WorkloadObservation,
) -> Option<WorkloadObservation>
where
    W: Resource<DynamicType = ()> + serde::de::DeserializeOwned,
{
    let workload = object.try_parse::<W>().ok()?;
    let pods = match selector(&workload).and_then(|selector| selector.match_labels.as_ref()) {
        Some(labels) if !labels.is_empty() => caches.pods_matching(namespace, labels),
        _ => Vec::new(),
    };
    Some(observation(&workload, &pods))
}

/// What a cluster reconcile learned before the status step.
#[derive(Clone, Copy, Debug)]
pub struct ReconcileOutcome<'a> {
    /// Paused and Stopped.
    pub operation: &'a OperationState,
    /// The product version the spec asks for, when the spec was valid.
    pub desired_version: Option<&'a str>,
    /// Why the reconcile failed, if it did.
    pub failure: Option<&'a ReconcileError>,
}

/// The next status of a cluster: all six conditions, the observed generation
/// and the deployed product version.
pub fn next_cluster_status(
    stored: Option<&ClusterStatus>,
    generation: Option<i64>,
    workloads: &[WorkloadObservation],
    outcome: ReconcileOutcome<'_>,
    now: Time,
) -> ClusterStatus {
    // An unknown operator-command annotation is added by `cluster_conditions` itself.
    let failure = outcome.failure.map(ReconcileError::to_failure);
    let updates = cluster_conditions(&ClusterInputs {
        workloads,
        operation: outcome.operation,
        failure: failure.as_ref(),
    });
    let previous_version = stored.and_then(|status| status.deployed_product_version.as_deref());
    let deployed_version = match outcome.desired_version {
        Some(desired) if !outcome.operation.is_stopped() => {
            next_deployed_version(previous_version, desired, workloads)
        }
        _ => previous_version.map(str::to_owned),
    };
    ClusterStatus::next(stored, updates, now, generation, deployed_version)
}

/// An Event worth publishing because a condition changed its status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransitionEvent {
    /// Warning when the change is bad news.
    pub event_type: EventType,
    /// The new condition's reason.
    pub reason: String,
    /// "Available is now False: ..." and the condition's message.
    pub note: String,
}

/// Events for the conditions whose status changed between two statuses.
///
/// Upgradable follows the others and is left out to keep `kubectl describe`
/// readable.
pub fn transition_events(
    previous: &[ClusterCondition],
    next: &[ClusterCondition],
) -> Vec<TransitionEvent> {
    next.iter()
        .filter(|condition| condition.type_ != ConditionType::Upgradable)
        .filter_map(|condition| {
            let before = previous.iter().find(|old| old.type_ == condition.type_);
            let changed = before.is_none_or(|old| old.status != condition.status);
            // A first appearance in the quiet state is not news.
            let news = before.is_some() || !is_quiet(condition);
            (changed && news).then(|| TransitionEvent {
                event_type: if is_bad_news(before, condition) {
                    EventType::Warning
                } else {
                    EventType::Normal
                },
                reason: condition.reason.clone(),
                note: format!(
                    "{} is now {}: {}",
                    condition.type_, condition.status, condition.message
                ),
            })
        })
        .collect()
}

/// Losing availability and becoming degraded are warnings. A new cluster
/// that is not available yet is starting up, which is normal.
fn is_bad_news(before: Option<&ClusterCondition>, condition: &ClusterCondition) -> bool {
    match condition.type_.known() {
        Some(ConditionType::Available) => {
            before.is_some() && condition.status != ConditionStatus::True
        }
        Some(ConditionType::Degraded) => condition.status == ConditionStatus::True,
        _ => false,
    }
}

fn is_quiet(condition: &ClusterCondition) -> bool {
    condition.status == ConditionStatus::False
        && matches!(
            condition.type_.known(),
            Some(
                ConditionType::Degraded
                    | ConditionType::Paused
                    | ConditionType::Stopped
                    | ConditionType::Progressing
            )
        )
}

fn condition_value(status: ConditionStatus) -> i64 {
    match status {
        ConditionStatus::True => 1,
        ConditionStatus::False => 0,
        ConditionStatus::Unknown => -1,
    }
}

impl<X> Context<X> {
    /// Writes `computed` to the status subresource with server-side apply,
    /// but only when it differs from `stored`. Returns whether it wrote.
    pub async fn write_status<K, S>(
        &self,
        object: &K,
        stored: Option<&S>,
        computed: &S,
    ) -> Result<bool, ReconcileError>
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
        S: Serialize + PartialEq,
    {
        if !needs_write(stored, computed) {
            return Ok(false);
        }
        let api: Api<K> =
            Api::namespaced(self.client.clone(), &object.namespace().unwrap_or_default());
        let body = serde_json::json!({
            "apiVersion": K::api_version(&()),
            "kind": K::kind(&()),
            "status": computed,
        });
        api.patch_status(
            &object.name_any(),
            &PatchParams::apply(&self.field_manager).force(),
            &Patch::Apply(&body),
        )
        .await
        .map_err(|source| {
            ReconcileError::from_kube("StatusUpdateFailed", "writing the status", source)
        })?;
        Ok(true)
    }

    /// Publishes Events for condition transitions and updates the condition
    /// gauges.
    pub async fn report_conditions<K>(
        &self,
        object: &K,
        previous: &[ClusterCondition],
        next: &[ClusterCondition],
    ) where
        K: Resource<DynamicType = ()>,
    {
        for condition in next {
            self.metrics.set_condition(
                ConditionLabels {
                    controller: self.controller_name.clone(),
                    namespace: object.meta().namespace.clone().unwrap_or_default(),
                    name: object.meta().name.clone().unwrap_or_default(),
                    condition: condition.type_.to_string(),
                },
                condition_value(condition.status),
            );
        }
        for event in transition_events(previous, next) {
            self.publish_event(
                object,
                event.event_type,
                &event.reason,
                "StatusChange",
                event.note,
            )
            .await;
        }
    }

    /// Steps 4 and 5 for a cluster resource: apply what was built (unless
    /// paused), then compute and write the status. A failed build or apply
    /// still gets its status written, with Degraded saying why, and is then
    /// returned so the error policy backs off.
    pub async fn apply_and_report_cluster<K>(
        &self,
        cluster: &K,
        stored: Option<&ClusterStatus>,
        operation: &OperationState,
        built: Result<(DesiredObjects, String), ReconcileError>,
    ) -> Result<Action, ReconcileError>
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        let (desired_version, report, failure) = match built {
            Ok((_, version)) if operation.is_paused() => (Some(version), None, None),
            Ok((desired, version)) => match self.apply(cluster, desired).await {
                Ok(report) => {
                    if report.wrote_anything() {
                        tracing::info!(applied = ?report.applied, pruned = ?report.pruned, "applied changes");
                    }
                    (Some(version), Some(report), None)
                }
                Err(error) => (Some(version), None, Some(error)),
            },
            Err(error) => (None, None, Some(error)),
        };
        let owner_ref = cluster.controller_owner_ref(&()).ok_or_else(|| {
            ReconcileError::transient("OwnerNotPersisted", "the cluster has no name or uid yet")
        })?;
        let namespace = cluster.namespace().unwrap_or_default();
        let workloads = observe_workloads(&self.caches, &owner_ref, &namespace, report.as_ref());
        let status = next_cluster_status(
            stored,
            cluster.meta().generation,
            &workloads,
            ReconcileOutcome {
                operation,
                desired_version: desired_version.as_deref(),
                failure: failure.as_ref(),
            },
            Time(jiff::Timestamp::now()),
        );
        let previous_conditions = stored
            .map(|status| status.conditions.as_slice())
            .unwrap_or_default();
        if self.write_status(cluster, stored, &status).await? {
            self.report_conditions(cluster, previous_conditions, &status.conditions)
                .await;
        }
        match failure {
            Some(error) => Err(error),
            None => Ok(Action::requeue(RESYNC_PERIOD)),
        }
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn condition(type_: ConditionType, status: ConditionStatus) -> ClusterCondition {
        ClusterCondition {
            type_: type_.into(),
            status,
            reason: "AsExpected".into(),
            message: "msg".into(),
            last_transition_time: None,
            observed_generation: Some(1),
        }
    }

    #[rstest]
    #[case::available_appears_true(vec![], ConditionType::Available, ConditionStatus::True, Some(EventType::Normal))]
    #[case::available_appears_false_while_starting(vec![], ConditionType::Available, ConditionStatus::False, Some(EventType::Normal))]
    #[case::available_lost(
        vec![condition(ConditionType::Available, ConditionStatus::True)],
        ConditionType::Available, ConditionStatus::False, Some(EventType::Warning)
    )]
    #[case::available_unchanged_is_quiet(
        vec![condition(ConditionType::Available, ConditionStatus::True)],
        ConditionType::Available, ConditionStatus::True, None
    )]
    #[case::degraded_appears_false_is_quiet(vec![], ConditionType::Degraded, ConditionStatus::False, None)]
    #[case::degraded_becomes_true(
        vec![condition(ConditionType::Degraded, ConditionStatus::False)],
        ConditionType::Degraded, ConditionStatus::True, Some(EventType::Warning)
    )]
    #[case::degraded_recovers(
        vec![condition(ConditionType::Degraded, ConditionStatus::True)],
        ConditionType::Degraded, ConditionStatus::False, Some(EventType::Normal)
    )]
    #[case::paused_becomes_true(
        vec![condition(ConditionType::Paused, ConditionStatus::False)],
        ConditionType::Paused, ConditionStatus::True, Some(EventType::Normal)
    )]
    #[case::upgradable_never_announced(
        vec![condition(ConditionType::Upgradable, ConditionStatus::False)],
        ConditionType::Upgradable, ConditionStatus::True, None
    )]
    fn transitions(
        #[case] previous: Vec<ClusterCondition>,
        #[case] type_: ConditionType,
        #[case] status: ConditionStatus,
        #[case] expected: Option<EventType>,
    ) {
        let events = transition_events(&previous, &[condition(type_, status)]);
        assert_eq!(
            events.first().map(|event| event.event_type),
            expected,
            "{events:?}"
        );
        assert!(events.len() <= 1);
    }

    #[test]
    fn event_note_names_the_condition_and_status() {
        let events = transition_events(
            &[],
            &[condition(ConditionType::Available, ConditionStatus::True)],
        );
        assert_eq!(events[0].note, "Available is now True: msg");
    }
}
