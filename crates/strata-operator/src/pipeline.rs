//! The typed values handed between the five steps of a cluster reconcile, and
//! the two runtime steps every operator shares: apply and report.
//!
//! ```text
//! dereference ─▶ validate ─▶ build ──Prepared──▶ apply ──Applied──▶ report
//!      └───────────┴──────────┴───────Failed──────┴────────────────────┘
//! ```
//!
//! The first three steps are the operator's own and pure where they can be. A
//! failure in any step becomes [`Failed`], which the report step still turns
//! into a status (Degraded with the failure's reason) before the error goes to
//! the error policy: a cluster is never left with a status that hides why it is
//! not progressing.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::core::object::HasStatus;
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use strata_status::{ClusterStatus, OperationState};

use crate::apply::{ApplyReport, DesiredObjects};
use crate::controller::Context;
use crate::error::ReconcileError;
use crate::status::{
    RESYNC_PERIOD, ReconcileOutcome, ReportError, next_cluster_status, observe_workloads,
};

/// The build step's result: every object the cluster should have, and the
/// product version they run.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// The desired objects, still typed, so the apply step can stop workloads.
    pub objects: DesiredObjects,
    /// The product version the pods will run, for `deployedProductVersion`.
    pub product_version: String,
}

/// The apply step's result.
#[derive(Clone, Debug)]
pub struct Applied {
    /// The product version of what was applied.
    pub product_version: String,
    /// What was sent and pruned; `None` while the cluster is paused, when
    /// nothing is applied.
    pub report: Option<ApplyReport>,
}

/// A failed step, with what was known when it failed.
#[derive(Debug)]
pub struct Failed {
    /// Why the step failed.
    pub error: ReconcileError,
    /// The product version the spec asks for, when validation got that far.
    pub product_version: Option<String>,
}

impl From<ReconcileError> for Failed {
    fn from(error: ReconcileError) -> Self {
        Self {
            error,
            product_version: None,
        }
    }
}

impl<X> Context<X> {
    /// Step 4: applies what was built and prunes what is no longer desired.
    ///
    /// Pausing and stopping are handled here, the same for every operator:
    /// a paused cluster gets nothing applied; a stopped one gets every
    /// workload scaled to nothing ([`crate::child::ChildObject::stop`]) while
    /// its config, Services and volumes stay.
    pub async fn apply_prepared<K>(
        &self,
        cluster: &K,
        operation: &OperationState,
        prepared: Prepared,
    ) -> Result<Applied, Failed>
    where
        K: Resource<DynamicType = ()>,
    {
        let Prepared {
            objects,
            product_version,
        } = prepared;
        if operation.is_paused() {
            return Ok(Applied {
                product_version,
                report: None,
            });
        }
        match self.apply(cluster, objects, operation.is_stopped()).await {
            Ok(report) => {
                if report.wrote_anything() {
                    tracing::info!(applied = ?report.applied, pruned = ?report.pruned, "applied changes");
                }
                Ok(Applied {
                    product_version,
                    report: Some(report),
                })
            }
            Err(error) => Err(Failed {
                error,
                product_version: Some(product_version),
            }),
        }
    }

    /// Step 5: computes the status from the workloads and the outcome of the
    /// other steps, writes it when it changed, and publishes Events for
    /// condition transitions. A failure of an earlier step is reported as
    /// Degraded and then returned, so the error policy backs off.
    pub async fn report<K>(
        &self,
        cluster: &K,
        operation: &OperationState,
        outcome: Result<Applied, Failed>,
    ) -> Result<Action, ReconcileError>
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + HasStatus<Status = ClusterStatus>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        let (product_version, report, failure) = match outcome {
            Ok(Applied {
                product_version,
                report,
            }) => (Some(product_version), report, None),
            Err(Failed {
                error,
                product_version,
            }) => (product_version, None, Some(error)),
        };
        let owner_ref = cluster
            .controller_owner_ref(&())
            .ok_or(ReportError::OwnerNotPersisted)?;
        let namespace = cluster.namespace().unwrap_or_default();
        let workloads = observe_workloads(&self.caches, &owner_ref, &namespace, report.as_ref());
        let stored = cluster.status();
        let status = next_cluster_status(
            stored,
            cluster.meta().generation,
            &workloads,
            ReconcileOutcome {
                operation,
                desired_version: product_version.as_deref(),
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
