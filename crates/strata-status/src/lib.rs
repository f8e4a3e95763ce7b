//! ADR027 status conditions for Strata operators.
//!
//! Pure functions, no client: observed workloads and the requested
//! operations go in, conditions come out.
//!
//! - [`WorkloadObservation`] reads a StatefulSet, Deployment or DaemonSet and
//!   its pods; [`WorkloadObservation::assess`] applies the ADR027 table.
//! - [`combine`] merges workloads, each condition type by its own polarity.
//! - [`OperationState`] resolves Paused/Stopped from the spec and the
//!   `operator-command` annotation.
//! - [`cluster_conditions`] produces all six conditions at once.
//! - [`apply_updates`] / [`ClusterStatus::next`] add `lastTransitionTime`,
//!   and [`needs_write`] keeps steady state free of writes.
//! - [`next_deployed_version`] moves the deployed version only after a full
//!   rollout.
//!
//! ```
//! use std::collections::BTreeMap;
//!
//! use k8s_openapi::{
//!     api::apps::v1::{StatefulSet, StatefulSetSpec, StatefulSetStatus},
//!     apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time},
//!     jiff::Timestamp,
//! };
//! use strata_status::{
//!     ClusterInputs, ClusterStatus, ConditionStatus, ConditionType, OperationState,
//!     WorkloadObservation, cluster_conditions, needs_write,
//! };
//!
//! let stateful_set = StatefulSet {
//!     metadata: ObjectMeta { name: Some("zk-server-default".into()), generation: Some(1), ..Default::default() },
//!     spec: StatefulSetSpec { replicas: Some(3), ..Default::default() },
//!     status: Some(StatefulSetStatus {
//!         replicas: 3,
//!         available_replicas: Some(3),
//!         updated_replicas: Some(3),
//!         observed_generation: Some(1),
//!         ..Default::default()
//!     }),
//! };
//! let workloads = [WorkloadObservation::from_stateful_set(&stateful_set, &[])];
//! let operation = OperationState::resolve(false, false, &BTreeMap::new());
//! let updates = cluster_conditions(&ClusterInputs { workloads: &workloads, operation: &operation, failure: None, progress: None, warnings: None, outage: None });
//!
//! let first = <ClusterStatus>::next(None, updates.clone(), Time(Timestamp::from_second(1_700_000_000)?), Some(1), None);
//! let available = first.condition(ConditionType::Available).map(|c| c.status);
//! assert_eq!(available, Some(ConditionStatus::True));
//!
//! // A later reconcile with the same observations computes the same status: no write.
//! let later = <ClusterStatus>::next(Some(&first), updates, Time(Timestamp::from_second(1_700_000_600)?), Some(1), None);
//! assert!(!needs_write(Some(&first), &later));
//! # Ok::<(), k8s_openapi::jiff::Error>(())
//! ```

mod assess;
mod cluster;
mod combine;
mod condition;
mod error;
mod operation;
mod reason;
mod status;
mod transition;
mod upgradable;
mod version;
mod workload;

pub use assess::WorkloadAssessment;
pub use cluster::{
    ClusterInputs, ProgressStep, ServiceOutage, SpecWarning, cluster_conditions, warning_condition,
};
pub use combine::{ObservedConditions, combine, combine_conditions};
pub use condition::{
    Aggregation, ClusterCondition, ConditionStatus, ConditionType, ConditionUpdate,
    StoredConditionType,
};
pub use error::{FailureKind, ReconcileFailure};
pub use operation::{
    COMMAND_PAUSED, COMMAND_STOPPED, OPERATOR_COMMAND_ANNOTATION, OperationState, OperationTrigger,
};
pub use reason::{InvalidReason, MAX_REASON_LEN, Reason, is_valid_reason};
pub use status::{ClusterStatus, NoProductStatus, ResourceStatus, find_condition, needs_write};
pub use transition::apply_updates;
pub use upgradable::upgradable_condition;
pub use version::next_deployed_version;
pub use workload::{
    FAILING_WAITING_REASONS, FailingContainer, PodObservation, PodPhase, ReportedStop,
    VERSION_LABEL, WorkloadKind, WorkloadObservation,
};
