//! The kinds an operator owns, with what the runtime knows about each.

use kube::api::{ApiResource, DynamicObject};
use strata_status::WorkloadObservation;

use crate::child::{
    ApplyRank, ChildObject, OptionalCrd, PodLookup, immutable_changes_dynamic, is_workload,
    observe_dynamic,
};

/// A kind the operator creates and therefore watches, applies and may prune.
///
/// The same list drives the controller's watches, the apply step and the Helm
/// chart's RBAC rules, so they cannot drift apart.
#[derive(Clone)]
pub struct ChildKind {
    /// Group, version, kind and plural of the kind.
    pub resource: ApiResource,
    rank: ApplyRank,
    prunable: bool,
    metadata_only: bool,
    optional: Option<OptionalCrd>,
    observe: Option<ObserveFn>,
    immutable_changes: ImmutableFn,
}

/// Lists the changes of a desired object that its stored copy cannot take.
type ImmutableFn = fn(&serde_json::Value, &DynamicObject) -> Vec<String>;

/// Observes one object of a workload kind, parsed as its own type.
type ObserveFn = fn(&DynamicObject, PodLookup<'_>) -> Option<WorkloadObservation>;

impl PartialEq for ChildKind {
    fn eq(&self, other: &Self) -> bool {
        self.resource == other.resource
    }
}

impl Eq for ChildKind {}

impl std::fmt::Debug for ChildKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildKind")
            .field("kind", &self.resource.kind)
            .field("rank", &self.rank)
            .field("workload", &self.observe.is_some())
            .finish_non_exhaustive()
    }
}

impl ChildKind {
    /// The kind `K`, with the facts its [`ChildObject`] implementation states.
    pub fn of<K: ChildObject + Default>() -> Self {
        Self {
            resource: ApiResource::erase::<K>(&()),
            rank: K::RANK,
            prunable: K::PRUNABLE,
            metadata_only: K::METADATA_ONLY,
            optional: K::OPTIONAL,
            immutable_changes: immutable_changes_dynamic::<K>,
            observe: is_workload::<K>().then_some(observe_dynamic::<K> as ObserveFn),
        }
    }

    /// What a cluster of role groups creates: per group its ConfigMap, Services and
    /// StatefulSet, per role its PodDisruptionBudget, and the ServiceMonitor and
    /// PrometheusRule it may ask for (optional kinds). A product that creates more
    /// adds its kinds to these.
    pub fn role_group_cluster_kinds() -> Vec<Self> {
        vec![
            Self::of::<k8s_openapi::api::core::v1::ConfigMap>(),
            Self::of::<k8s_openapi::api::core::v1::Service>(),
            Self::of::<k8s_openapi::api::apps::v1::StatefulSet>(),
            Self::of::<k8s_openapi::api::policy::v1::PodDisruptionBudget>(),
            Self::of::<strata_model::monitoring::ServiceMonitor>(),
            Self::of::<strata_model::monitoring::PrometheusRule>(),
        ]
    }

    /// Whether owned objects of this kind are deleted when no longer desired.
    /// PersistentVolumeClaims never are: they hold the product's data.
    pub fn prunable(&self) -> bool {
        self.prunable
    }

    /// When objects of this kind are applied, relative to other kinds.
    pub fn rank(&self) -> ApplyRank {
        self.rank
    }

    /// Whether only the metadata of this kind is cached (Secrets): the apply
    /// step then compares metadata alone, with the content hash annotation
    /// standing in for the content.
    pub fn metadata_only(&self) -> bool {
        self.metadata_only
    }

    /// What in `desired` (an object of this kind as it would be applied) the stored
    /// `existing` copy cannot take.
    pub fn immutable_changes(
        &self,
        desired: &serde_json::Value,
        existing: &DynamicObject,
    ) -> Vec<String> {
        (self.immutable_changes)(desired, existing)
    }

    /// Whether the kind's CRD is another project's, which a cluster may not have
    /// ([`crate::child::ChildObject::OPTIONAL`]).
    pub fn optional(&self) -> bool {
        self.optional.is_some()
    }

    /// The other project's CRD the kind comes from, and the spec field that asks for
    /// it; `None` for a kind every cluster serves.
    pub fn optional_crd(&self) -> Option<OptionalCrd> {
        self.optional
    }

    /// Whether objects of this kind run pods and count for the status.
    pub fn is_workload(&self) -> bool {
        self.observe.is_some()
    }

    /// The status step's view of `object`, an object of this kind; `None` for kinds
    /// that run no pods.
    pub fn observe(
        &self,
        object: &DynamicObject,
        pods: PodLookup<'_>,
    ) -> Option<WorkloadObservation> {
        self.observe.and_then(|observe| observe(object, pods))
    }

    pub(super) fn key(&self) -> String {
        format!("{}/{}", self.resource.api_version, self.resource.kind)
    }
}
