//! Step 5 of the pipeline: observe the workloads, compute the status, write
//! it only when it changed, and tell people about transitions.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::events::EventType;
use kube::{Resource, ResourceExt};
use serde::Serialize;
use strata_status::{
    ClusterCondition, ClusterInputs, ClusterStatus, ConditionStatus, ConditionType,
    ConditionUpdate, OperationState, ProgressStep, Reason, ResourceStatus, ServiceOutage,
    SpecWarning, WorkloadObservation, cluster_conditions, needs_write, next_deployed_version,
};

use crate::apply::ApplyReport;
use crate::cache::{ChildCaches, ChildKind};
use crate::controller::Context;
use crate::error::{ErrorKind, ReconcileError, StepError, describe_kube_error, kube_error_kind};
use crate::metrics::ConditionLabels;

/// Why the report step failed; each variant's name is the Degraded reason.
#[derive(Debug, thiserror::Error, strum::IntoStaticStr)]
pub enum ReportError {
    /// The object was not stored yet, so its workloads cannot be found.
    #[error("the cluster has no name or uid yet")]
    OwnerNotPersisted,
    /// The status subresource could not be written.
    #[error("writing the status failed: {}", describe_kube_error(source))]
    StatusUpdateFailed {
        /// The client error.
        source: kube::Error,
    },
}

impl StepError for ReportError {
    fn reason(&self) -> &'static str {
        self.into()
    }

    fn kind(&self) -> ErrorKind {
        match self {
            Self::OwnerNotPersisted => ErrorKind::Transient,
            Self::StatusUpdateFailed { source } => kube_error_kind(source),
        }
    }
}

/// How long a healthy object waits for its next periodic reconcile. Watches
/// trigger reconciles on every change; this only bounds how long a missed
/// event can go unnoticed, and costs nothing in steady state.
pub const RESYNC_PERIOD: Duration = Duration::from_secs(600);

/// The workloads `owner_ref` controls, each observed with the pods its
/// selector picks.
///
/// Workloads come from the watch caches, corrected by what this reconcile's
/// apply step just did (`applied`): objects it applied are observed as the
/// API server returned them, and objects it pruned are left out. Without
/// that, the first status of a new cluster would say it has no workloads,
/// because the caches see the new objects a moment later. Each object is
/// observed through its kind's [`ChildObject`](crate::child::ChildObject)
/// implementation, parsed as its own type.
pub fn observe_workloads(
    caches: &ChildCaches,
    owner_ref: &OwnerReference,
    namespace: &str,
    applied: Option<&ApplyReport>,
) -> Vec<WorkloadObservation> {
    let mut workloads: BTreeMap<(String, String), (ChildKind, DynamicObject)> = caches
        .controlled_by_of_kinds(owner_ref, namespace, ChildKind::is_workload)
        .into_iter()
        .map(|(kind, object)| {
            (
                (kind.resource.kind.clone(), object.name_any()),
                (kind, object.as_ref().clone()),
            )
        })
        .collect();
    if let Some(report) = applied {
        for (kind, response) in &report.responses {
            if kind.is_workload() {
                workloads.insert(
                    (kind.resource.kind.clone(), response.name_any()),
                    (kind.clone(), response.clone()),
                );
            }
        }
        workloads.retain(|(kind, name), _| !report.pruned.contains(&format!("{kind}/{name}")));
    }
    let pods = |selector: &BTreeMap<String, String>| caches.pods_matching(namespace, selector);
    workloads
        .values()
        .filter_map(|(kind, object)| kind.observe(object, &pods))
        .collect()
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
    /// The step of a change the operator drives itself, if one runs.
    pub progress: Option<&'a ProgressStep>,
    /// The validation warnings; `None` when validation did not get that far.
    pub warnings: Option<&'a [SpecWarning]>,
    /// What the product reports as down although its pods are Ready.
    pub outage: Option<&'a ServiceOutage>,
}

/// The next status of a cluster: all six conditions, the observed generation
/// and the deployed product version.
pub fn next_cluster_status<P: Clone + Default>(
    stored: Option<&ClusterStatus<P>>,
    generation: Option<i64>,
    workloads: &[WorkloadObservation],
    outcome: ReconcileOutcome<'_>,
    now: Time,
) -> ClusterStatus<P> {
    // An unknown operator-command annotation is added by `cluster_conditions` itself.
    let failure = outcome.failure.map(ReconcileError::to_failure);
    let updates = cluster_conditions(&ClusterInputs {
        workloads,
        operation: outcome.operation,
        failure: failure.as_ref(),
        progress: outcome.progress,
        warnings: outcome.warnings,
        outage: outcome.outage,
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

/// The next status of a sub-resource (a ZNode, a Trino catalog): Available when
/// `outcome` is the sentence saying what works, otherwise Available False and
/// Degraded True with the failure's reason and a message that says who acts.
pub fn next_resource_status(
    stored: Option<&ResourceStatus>,
    generation: Option<i64>,
    outcome: Result<&str, &ReconcileError>,
    now: Time,
) -> ResourceStatus {
    let updates = match outcome {
        Ok(available) => vec![
            ConditionUpdate::new(
                ConditionType::Available,
                ConditionStatus::True,
                Reason::AS_EXPECTED,
                available,
            ),
            ConditionUpdate::new(
                ConditionType::Degraded,
                ConditionStatus::False,
                Reason::AS_EXPECTED,
                "Nothing is wrong.",
            ),
        ],
        Err(failure) => {
            // The shared rule turns the message into a sentence before naming who
            // acts next, exactly as on clusters.
            let degraded = failure.to_failure().degraded_condition();
            vec![
                ConditionUpdate::new(
                    ConditionType::Available,
                    ConditionStatus::False,
                    degraded.reason.clone(),
                    degraded.message.clone(),
                ),
                degraded,
            ]
        }
    };
    ResourceStatus::next(stored, updates, now, generation)
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
        Some(ConditionType::Degraded | ConditionType::Warning) => {
            condition.status == ConditionStatus::True
        }
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
                    | ConditionType::Warning
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
        .map_err(|source| ReportError::StatusUpdateFailed { source })?;
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
    #[case::warning_appears_false_is_quiet(vec![], ConditionType::Warning, ConditionStatus::False, None)]
    #[case::warning_appears_true(vec![], ConditionType::Warning, ConditionStatus::True, Some(EventType::Warning))]
    #[case::warning_lifted(
        vec![condition(ConditionType::Warning, ConditionStatus::True)],
        ConditionType::Warning, ConditionStatus::False, Some(EventType::Normal)
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
