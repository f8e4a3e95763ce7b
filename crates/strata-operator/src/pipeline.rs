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

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DeleteParams, Preconditions};
use kube::core::object::HasStatus;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Resource, ResourceExt};
use strata_status::{
    ClusterStatus, NoProductStatus, OperationState, ProgressStep, ServiceOutage, SpecWarning,
};

use crate::apply::{ApplyReport, DesiredObjects};
use crate::controller::Context;
use crate::error::{ErrorKind, ReconcileError, StepError, describe_kube_error, kube_error_kind};
use crate::roll::stateless::PodRef;
use crate::status::{
    RESYNC_PERIOD, ReconcileOutcome, ReportError, next_cluster_status, observe_workloads,
};

/// A cluster kind with `spec.clusterOperation`, so that its controller (which hands
/// the operation to the apply and report steps) and `render` read it the same way.
pub trait Operated: Resource + Sized {
    /// The cluster's `spec.clusterOperation`.
    fn cluster_operation(&self) -> &strata_model::cluster_operation::ClusterOperation;

    /// The effective operation: the spec switches with the `operator-command`
    /// annotation (`ClusterOperation::state`).
    fn operation_state(&self) -> OperationState {
        self.cluster_operation().state(self.annotations())
    }
}

/// The grace period of a restart together: the `preStop` drain gets a second, then
/// SIGTERM, then SIGKILL after the kubelet's minimum of two more seconds. The pods'
/// work is lost anyway, and a drain would only delay their return.
pub const RESTART_TOGETHER_GRACE_SECONDS: u32 = 1;

/// The build step's result: every object the cluster should have, the
/// product version they run, and the step of a change the operator drives
/// itself (see [`crate::roll`]).
#[derive(Clone, Debug)]
pub struct Prepared {
    /// The desired objects, still typed, so the apply step can stop workloads.
    pub objects: DesiredObjects,
    /// The product version the pods will run, for `deployedProductVersion`.
    pub product_version: String,
    /// The step in progress, for the Progressing condition.
    pub progress: Option<ProgressStep>,
    /// Pods to delete once the objects are applied, so their StatefulSet
    /// (strategy `OnDelete`) recreates them from the latest template.
    pub restarts: Vec<PodRef>,
    /// Pods to delete at once, without their drain (`preStop` gets no time), because
    /// their work is lost anyway ([`crate::roll::stateless`]).
    pub restarts_together: Vec<PodRef>,
    /// What validation warned about, for the Warning condition.
    pub warnings: Vec<SpecWarning>,
    /// When the step waits for the product itself rather than for a Kubernetes
    /// object (an HDFS decommission: no watch event says the blocks are copied),
    /// how soon to reconcile again.
    pub recheck_after: Option<Duration>,
    /// What the product reports as down although its pods are Ready, found in
    /// the build step by asking the product (no active HDFS namenode).
    pub outage: Option<ServiceOutage>,
    /// What the certificate step issues in this reconcile, and why. It is announced
    /// (a log line and a `CertificateIssued` Event) only once applied: while the
    /// cluster is paused nothing is written, and a Warning says what waits instead.
    pub certificates_issued: Vec<String>,
}

impl Prepared {
    /// Objects and version, with no driven step and no warning.
    pub fn new(objects: DesiredObjects, product_version: impl Into<String>) -> Self {
        Self {
            objects,
            product_version: product_version.into(),
            progress: None,
            restarts: Vec::new(),
            restarts_together: Vec::new(),
            warnings: Vec::new(),
            recheck_after: None,
            outage: None,
            certificates_issued: Vec::new(),
        }
    }
}

impl Prepared {
    /// Rolls the pods when a referenced object they read changes: `versions` maps each
    /// such object (`Secret/<name>`) to its version ([`crate::reference::References::version`]),
    /// and their hash goes on every workload's pod template
    /// ([`strata_model::build::REFERENCES_HASH_ANNOTATION`]). Nothing is added without
    /// references, so a cluster that reads none keeps its template.
    pub fn rolling_on(mut self, versions: &BTreeMap<String, String>) -> Self {
        if !versions.is_empty() {
            self.objects.annotate_pod_templates(
                strata_model::build::REFERENCES_HASH_ANNOTATION,
                &strata_model::build::config_hash(versions),
            );
        }
        self
    }
}

/// The apply step's result.
#[derive(Clone, Debug)]
pub struct Applied {
    /// The product version of what was applied.
    pub product_version: String,
    /// What was sent and pruned; `None` while the cluster is paused, when
    /// nothing is applied.
    pub report: Option<ApplyReport>,
    /// The driven step, carried to the status.
    pub progress: Option<ProgressStep>,
    /// The validation warnings, carried to the status.
    pub warnings: Vec<SpecWarning>,
    /// How soon to reconcile again, when sooner than the resync.
    pub recheck_after: Option<Duration>,
    /// The product's own outage report, carried to the status.
    pub outage: Option<ServiceOutage>,
}

/// Why a driven restart failed; the variant's name is the Degraded reason.
#[derive(Debug, thiserror::Error, strum::IntoStaticStr)]
pub enum RestartError {
    /// The pod could not be deleted.
    #[error("restarting pod {pod} failed: {}", describe_kube_error(source))]
    PodRestartFailed {
        /// The pod.
        pod: String,
        /// The client error.
        source: kube::Error,
    },
}

impl StepError for RestartError {
    fn reason(&self) -> &'static str {
        self.into()
    }

    fn kind(&self) -> ErrorKind {
        match self {
            Self::PodRestartFailed { source, .. } => kube_error_kind(source),
        }
    }
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
            mut objects,
            product_version,
            progress,
            restarts,
            restarts_together,
            mut warnings,
            recheck_after,
            outage,
            certificates_issued,
        } = prepared;
        let left_out = objects.remove_kinds(&self.unserved_kinds);
        if !left_out.is_empty() {
            warnings.push(crate::optional_kinds::not_served_warning(
                &left_out,
                &self.unserved_kinds,
            ));
        }
        if operation.is_paused() {
            warnings.extend(crate::tls::renewal_paused_warning(&certificates_issued));
            return Ok(Applied {
                product_version,
                report: None,
                progress: None,
                warnings,
                recheck_after: None,
                outage,
            });
        }
        match self.apply(cluster, objects, operation.is_stopped()).await {
            Ok(report) => {
                if report.wrote_anything() {
                    tracing::info!(applied = ?report.applied, pruned = ?report.pruned, "applied changes");
                }
                crate::tls::announce_issued(self, cluster, &certificates_issued).await;
                if !operation.is_stopped() {
                    let restarted = async {
                        self.restart_pods(cluster, &restarts, progress.as_ref())
                            .await?;
                        self.restart_together(cluster, &restarts_together).await?;
                        self.replace_stuck_pods(cluster, &report).await
                    };
                    restarted.await.map_err(|error| Failed {
                        error,
                        product_version: Some(product_version.clone()),
                    })?;
                }
                Ok(Applied {
                    product_version,
                    report: Some(report),
                    progress,
                    warnings,
                    recheck_after: recheck_after.filter(|_| !operation.is_stopped()),
                    outage,
                })
            }
            Err(error) => Err(Failed {
                error,
                product_version: Some(product_version),
            }),
        }
    }

    /// Deletes each pod of `pods` in the cluster's namespace, so that its
    /// StatefulSet recreates it from the latest template, and says so in an
    /// Event and the log.
    async fn restart_pods<K>(
        &self,
        cluster: &K,
        pods: &[PodRef],
        progress: Option<&ProgressStep>,
    ) -> Result<(), ReconcileError>
    where
        K: Resource<DynamicType = ()>,
    {
        for pod in pods {
            let note = progress.map_or_else(
                || format!("Restarting pod {} to run the latest template.", pod.name),
                |step| step.message.clone(),
            );
            self.delete_pod(cluster, pod, None, "RestartingPod", note)
                .await?;
        }
        Ok(())
    }

    /// Deletes every pod of `pods` at once with a grace period of
    /// [`RESTART_TOGETHER_GRACE_SECONDS`]: their `preStop` drain gets no time, since
    /// their work is lost anyway.
    async fn restart_together<K>(&self, cluster: &K, pods: &[PodRef]) -> Result<(), ReconcileError>
    where
        K: Resource<DynamicType = ()>,
    {
        for pod in pods {
            let note = format!(
                "Restarting pod {} at once, without a drain: a setting changed that ends its \
                 work anyway, and every pod that runs the old one restarts with it.",
                pod.name
            );
            self.delete_pod(
                cluster,
                pod,
                Some(RESTART_TOGETHER_GRACE_SECONDS),
                "RestartingPodTogether",
                note,
            )
            .await?;
        }
        Ok(())
    }

    /// Deletes the cluster's pods that the StatefulSet controller would never
    /// replace ([`crate::roll::stuck_on_old_revision`]): not Ready, on an older
    /// revision, in a StatefulSet it rolls itself. So a cluster recovers when the
    /// user fixes a spec that broke its pods, as it would after any other fix.
    /// A StatefulSet this reconcile has just written is skipped: its cached copy may
    /// still name the revision before the write.
    async fn replace_stuck_pods<K>(
        &self,
        cluster: &K,
        applied: &ApplyReport,
    ) -> Result<(), ReconcileError>
    where
        K: Resource<DynamicType = ()>,
    {
        let Some(owner) = cluster.controller_owner_ref(&()) else {
            return Ok(());
        };
        let namespace = cluster.meta().namespace.clone().unwrap_or_default();
        let sets: Vec<_> = crate::roll::stateful_sets_with_pods(&self.caches, &owner, &namespace)
            .into_iter()
            .filter(|set| {
                !applied
                    .applied
                    .contains(&format!("StatefulSet/{}", set.name()))
            })
            .collect();
        for pod in crate::roll::stuck_on_old_revision(&sets) {
            let note = format!(
                "Replacing pod {pod}: it is failing on an older revision, and the StatefulSet \
                 controller waits for it forever; it is recreated from the latest template."
            );
            self.delete_pod(
                cluster,
                &PodRef::named(pod),
                None,
                "ReplacingStuckPod",
                note,
            )
            .await?;
        }
        Ok(())
    }

    /// Deletes `pod` in the cluster's namespace (within `grace` seconds when given, else
    /// the pod's own grace period; only the pod of that uid when it is known) and says
    /// why, in the log and in an Event with `reason`. A pod that is gone already, or
    /// replaced, is fine.
    async fn delete_pod<K>(
        &self,
        cluster: &K,
        pod: &PodRef,
        grace: Option<u32>,
        reason: &str,
        note: String,
    ) -> Result<(), ReconcileError>
    where
        K: Resource<DynamicType = ()>,
    {
        let namespace = cluster.meta().namespace.clone().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &namespace);
        tracing::info!(pod = pod.name, "{note}");
        let params = DeleteParams {
            grace_period_seconds: grace,
            preconditions: pod.uid.as_ref().map(|uid| Preconditions {
                uid: Some(uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(&pod.name, &params).await {
            Ok(_) => {}
            // Already gone: the cache had not seen the previous delete yet.
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(()),
            // Replaced: the pod of that name is a newer one.
            Err(kube::Error::Api(status)) if status.code == 409 && pod.uid.is_some() => {
                return Ok(());
            }
            Err(source) => {
                return Err(RestartError::PodRestartFailed {
                    pod: pod.name.clone(),
                    source,
                }
                .into());
            }
        }
        self.publish_event(cluster, EventType::Normal, reason, "Restart", note)
            .await;
        Ok(())
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
        self.report_with(cluster, operation, outcome, NoProductStatus {})
            .await
    }

    /// [`report`](Self::report) for a product whose status adds fields of its
    /// own (`product`), such as the HDFS cluster ID.
    pub async fn report_with<K, P>(
        &self,
        cluster: &K,
        operation: &OperationState,
        outcome: Result<Applied, Failed>,
        product: P,
    ) -> Result<Action, ReconcileError>
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + HasStatus<Status = ClusterStatus<P>>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
        P: Clone + Default + PartialEq + serde::Serialize,
    {
        let (applied, failure, failed_version) = match outcome {
            Ok(applied) => (Some(applied), None, None),
            Err(Failed {
                error,
                product_version,
            }) => (None, Some(error), product_version),
        };
        let product_version = applied
            .as_ref()
            .map(|applied| applied.product_version.clone())
            .or(failed_version);
        let report = applied.as_ref().and_then(|applied| applied.report.as_ref());
        let progress = applied
            .as_ref()
            .and_then(|applied| applied.progress.as_ref());
        let warnings = applied.as_ref().map(|applied| applied.warnings.as_slice());
        let recheck_after = applied.as_ref().and_then(|applied| applied.recheck_after);
        let outage = applied.as_ref().and_then(|applied| applied.outage.as_ref());
        let owner_ref = cluster
            .controller_owner_ref(&())
            .ok_or(ReportError::OwnerNotPersisted)?;
        let namespace = cluster.namespace().unwrap_or_default();
        let workloads = observe_workloads(&self.caches, &owner_ref, &namespace, report);
        let stored = cluster.status();
        let mut status = next_cluster_status(
            stored,
            cluster.meta().generation,
            &workloads,
            ReconcileOutcome {
                operation,
                desired_version: product_version.as_deref(),
                failure: failure.as_ref(),
                progress,
                warnings,
                outage,
            },
            Time(jiff::Timestamp::now()),
        );
        status.product = product;
        let previous_conditions = stored
            .map(|status| status.conditions.as_slice())
            .unwrap_or_default();
        if self.write_status(cluster, stored, &status).await? {
            self.report_conditions(cluster, previous_conditions, &status.conditions)
                .await;
        }
        match failure {
            Some(error) => Err(error),
            None => Ok(Action::requeue(
                recheck_after.map_or(RESYNC_PERIOD, |recheck| recheck.min(RESYNC_PERIOD)),
            )),
        }
    }
}
