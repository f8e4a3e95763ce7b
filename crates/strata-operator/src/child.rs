//! What the runtime knows about each kind of object an operator creates, as types.
//!
//! Every desired object and every watched child kind is a [`ChildObject`]. The trait
//! carries the per-kind facts that the apply and status steps need: the order in which
//! kinds are applied, whether a kind may ever be pruned, how a workload is stopped, and
//! how a workload is observed with its pods. Because the facts come from the type, no
//! step has to recover a kind from a JSON `kind` string, and a new workload kind is
//! stopped and observed by implementing one trait rather than by adding string cases in
//! several places.

use std::collections::BTreeMap;
use std::fmt::Debug;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    ConfigMap, PersistentVolumeClaim, Pod, PodTemplateSpec, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::Resource;
use kube::api::DynamicObject;
use serde::Serialize;
use serde::de::DeserializeOwned;
use strata_status::WorkloadObservation;

/// Apply order: what others refer to goes first, so a StatefulSet never starts pods
/// that mount a ConfigMap which does not exist yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ApplyRank {
    /// Identities, Secrets and ConfigMaps that pods mount or use.
    Referenced,
    /// Services, whose DNS names pods resolve at start.
    Network,
    /// Workloads, which start pods.
    Workload,
    /// Everything else (PodDisruptionBudgets, RBAC bindings).
    Other,
}

/// Looks up the pods a workload's selector picks (from the watch cache).
pub type PodLookup<'a> = &'a dyn Fn(&BTreeMap<String, String>) -> Vec<Pod>;

/// A namespaced Kubernetes kind an operator may create, watch and prune.
pub trait ChildObject:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Serialize
    + DeserializeOwned
    + Clone
    + Debug
    + Send
    + Sync
    + 'static
{
    /// When objects of this kind are applied, relative to other kinds.
    const RANK: ApplyRank = ApplyRank::Other;

    /// Whether an owned object of this kind that is no longer desired is deleted.
    /// False only where deleting would delete user data.
    const PRUNABLE: bool = true;

    /// Whether the watch cache holds only the metadata of this kind. True for
    /// Secrets, so that no Secret value ever reaches the operator's memory.
    const METADATA_ONLY: bool = false;

    /// Where the kind's CRD comes from, when another project installs it (the
    /// Prometheus Operator's ServiceMonitor, the Gateway API's HTTPRoute) and a cluster
    /// may not have it. Such a kind is watched and applied only when the API server
    /// serves it as the controller starts; otherwise objects of it are left out and the
    /// cluster gets a Warning that says what to install ([`crate::optional_kinds`]),
    /// since a watch on a kind that is not served would keep the caches from ever
    /// syncing.
    const OPTIONAL: Option<OptionalCrd> = None;

    /// Fields of `self` (desired) that differ from `existing` (as stored) but that the
    /// API server refuses to change, each as a sentence naming the field, its old and
    /// its new value. Checked before anything is applied, so a change that cannot
    /// succeed is reported as the user's to resolve instead of failing with a 422.
    fn immutable_changes(&self, _existing: &Self) -> Vec<String> {
        Vec::new()
    }

    /// Scales the object to nothing for a stopped cluster; objects that run no pods
    /// stay as they are.
    fn stop(&mut self) {}

    /// The object's health and rollout as the status step sees it, with its pods; `None`
    /// for kinds that run no pods.
    fn observe(&self, _pods: PodLookup<'_>) -> Option<WorkloadObservation> {
        None
    }

    /// The template a change of which rolls the object's pods; `None` for kinds that
    /// run no pods, and for Jobs, whose template the API server does not let change.
    fn pod_template_mut(&mut self) -> Option<&mut PodTemplateSpec> {
        None
    }
}

macro_rules! plain_child {
    ($rank:expr => $($kind:ty),+ $(,)?) => {
        $(impl ChildObject for $kind {
            const RANK: ApplyRank = $rank;
        })+
    };
}

plain_child!(ApplyRank::Referenced => ConfigMap, ServiceAccount);

/// Secrets are cached as metadata only, and are best created once
/// ([`crate::apply::DesiredObjects::push_create_once`]).
impl ChildObject for Secret {
    const RANK: ApplyRank = ApplyRank::Referenced;
    const METADATA_ONLY: bool = true;
}
plain_child!(ApplyRank::Network => Service, Ingress);
plain_child!(ApplyRank::Other => PodDisruptionBudget, Role, RoleBinding);

/// Another project's CRD that an optional kind comes from, and the spec field that asks
/// for objects of the kind: what the Warning of a cluster that does not serve the kind
/// tells the user to install, or else to remove.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct OptionalCrd {
    /// What to install, as a sentence continues "Install ...".
    pub install: &'static str,
    /// The field of a cluster's spec that asks for objects of the kind.
    pub asked_for_in: &'static str,
}

/// The Prometheus Operator's CRDs, for ServiceMonitor and PrometheusRule.
pub const PROMETHEUS_OPERATOR_CRDS: OptionalCrd = OptionalCrd {
    install: "the Prometheus Operator's CRDs",
    asked_for_in: "clusterConfig.monitoring",
};

/// The Gateway API's CRDs v1.4 or later, for BackendTLSPolicy v1.
pub const GATEWAY_API_V1_4_CRDS: OptionalCrd = OptionalCrd {
    install: "the Gateway API's CRDs v1.4 or later (standard channel)",
    asked_for_in: "clusterConfig.httpRoute",
};

/// The Gateway API's CRDs (its standard channel), for HTTPRoute. A Gateway and a
/// controller that implements it are needed too for the route to carry traffic, but
/// not for the operator to apply it.
pub const GATEWAY_API_CRDS: OptionalCrd = OptionalCrd {
    install: "the Gateway API's CRDs (standard channel)",
    asked_for_in: "clusterConfig.httpRoute",
};

/// The Prometheus Operator's kinds: asked for in `clusterConfig.monitoring`, and
/// applied only where the cluster serves them.
impl ChildObject for strata_model::monitoring::ServiceMonitor {
    const OPTIONAL: Option<OptionalCrd> = Some(PROMETHEUS_OPERATOR_CRDS);
}
impl ChildObject for strata_model::monitoring::PrometheusRule {
    const OPTIONAL: Option<OptionalCrd> = Some(PROMETHEUS_OPERATOR_CRDS);

    /// A stopped cluster keeps its alerts but the one on having no pod at all.
    fn stop(&mut self) {
        self.without_targets_group();
    }
}

/// The Gateway API's HTTPRoute: asked for in `clusterConfig.httpRoute`, applied only
/// where the cluster serves it, and with the Services it routes to, as an Ingress is.
impl ChildObject for strata_model::http_route::HttpRoute {
    const RANK: ApplyRank = ApplyRank::Network;
    const OPTIONAL: Option<OptionalCrd> = Some(GATEWAY_API_CRDS);
}

/// The Gateway API's BackendTLSPolicy: how a Gateway checks a product that serves
/// HTTPS behind an HTTPRoute, applied with it. Its v1 came with the Gateway API v1.4,
/// later than HTTPRoute's, so a cluster may serve one and not the other.
impl ChildObject for strata_model::http_route::BackendTlsPolicy {
    const RANK: ApplyRank = ApplyRank::Network;
    const OPTIONAL: Option<OptionalCrd> = Some(GATEWAY_API_V1_4_CRDS);
}

impl ChildObject for PersistentVolumeClaim {
    const RANK: ApplyRank = ApplyRank::Referenced;
    /// A claim holds the product's data: the operator never deletes one.
    const PRUNABLE: bool = false;
}

/// The pods picked by a workload's `matchLabels`; a selector without labels picks none
/// rather than every pod of the namespace.
fn selected_pods(selector: &LabelSelector, pods: PodLookup<'_>) -> Vec<Pod> {
    match selector.match_labels.as_ref() {
        Some(labels) if !labels.is_empty() => pods(labels),
        _ => Vec::new(),
    }
}

impl ChildObject for StatefulSet {
    const RANK: ApplyRank = ApplyRank::Workload;

    fn pod_template_mut(&mut self) -> Option<&mut PodTemplateSpec> {
        Some(&mut self.spec.template)
    }

    /// Kubernetes allows changing only replicas, the template, the update strategy,
    /// `minReadySeconds`, `ordinals` and the claim retention policy of a
    /// StatefulSet. The builders never vary the selector, so the claim templates
    /// (size, class, access modes) and `serviceName` are what users can move.
    fn immutable_changes(&self, existing: &Self) -> Vec<String> {
        let mut changes = Vec::new();
        let claims = |sts: &StatefulSet| -> BTreeMap<String, (String, String, String)> {
            sts.spec
                .volume_claim_templates
                .iter()
                .flatten()
                .map(|claim| {
                    let spec = claim.spec.clone().unwrap_or_default();
                    let size = spec
                        .resources
                        .and_then(|resources| resources.requests)
                        .and_then(|requests| requests.get("storage").map(|q| q.0.clone()))
                        .unwrap_or_default();
                    let class = spec
                        .storage_class_name
                        .unwrap_or_else(|| "(the default class)".to_owned());
                    let modes = spec.access_modes.unwrap_or_default().join(",");
                    (
                        claim.metadata.name.clone().unwrap_or_default(),
                        (size, class, modes),
                    )
                })
                .collect()
        };
        let (wanted, stored) = (claims(self), claims(existing));
        for (name, (size, class, modes)) in &wanted {
            match stored.get(name) {
                None => changes.push(format!("a new volume claim template {name:?} is added")),
                Some((old_size, old_class, old_modes)) => {
                    for (what, old, new) in [
                        ("size", old_size, size),
                        ("storage class", old_class, class),
                        ("access modes", old_modes, modes),
                    ] {
                        if old != new {
                            changes.push(format!(
                                "the {what} of volume claim template {name:?} changes from {old} to {new}"
                            ));
                        }
                    }
                }
            }
        }
        changes.extend(
            stored
                .keys()
                .filter(|name| !wanted.contains_key(*name))
                .map(|name| format!("the volume claim template {name:?} is removed")),
        );
        if self.spec.service_name != existing.spec.service_name {
            changes.push(format!(
                "serviceName changes from {:?} to {:?}",
                existing.spec.service_name.as_deref().unwrap_or_default(),
                self.spec.service_name.as_deref().unwrap_or_default()
            ));
        }
        changes
    }

    fn stop(&mut self) {
        self.spec.replicas = Some(0);
    }

    fn observe(&self, pods: PodLookup<'_>) -> Option<WorkloadObservation> {
        let pods = selected_pods(&self.spec.selector, pods);
        Some(WorkloadObservation::from_stateful_set(self, &pods))
    }
}

impl ChildObject for Deployment {
    const RANK: ApplyRank = ApplyRank::Workload;

    fn pod_template_mut(&mut self) -> Option<&mut PodTemplateSpec> {
        Some(&mut self.spec.template)
    }

    fn stop(&mut self) {
        self.spec.replicas = Some(0);
    }

    fn observe(&self, pods: PodLookup<'_>) -> Option<WorkloadObservation> {
        let pods = selected_pods(&self.spec.selector, pods);
        Some(WorkloadObservation::from_deployment(self, &pods))
    }
}

/// Node label no node carries: a DaemonSet has no replica count, so a stopped one is
/// told to run on no node at all.
pub const STOPPED_NODE_SELECTOR: (&str, &str) = ("strata.dev/stopped", "true");

impl ChildObject for DaemonSet {
    const RANK: ApplyRank = ApplyRank::Workload;

    fn pod_template_mut(&mut self) -> Option<&mut PodTemplateSpec> {
        Some(&mut self.spec.template)
    }

    fn stop(&mut self) {
        if let Some(pod_spec) = self.spec.template.spec.as_mut() {
            let (key, value) = STOPPED_NODE_SELECTOR;
            pod_spec
                .node_selector
                .get_or_insert_with(BTreeMap::new)
                .insert(key.to_owned(), value.to_owned());
        }
    }

    fn observe(&self, pods: PodLookup<'_>) -> Option<WorkloadObservation> {
        let pods = selected_pods(&self.spec.selector, pods);
        Some(WorkloadObservation::from_daemon_set(self, &pods))
    }
}

/// Jobs run to completion; a stopped cluster's Job is suspended.
impl ChildObject for Job {
    const RANK: ApplyRank = ApplyRank::Workload;

    fn stop(&mut self) {
        self.spec.get_or_insert_with(Default::default).suspend = Some(true);
    }
}

/// Observes a cached or applied object of kind `K`; a copy that does not parse as `K`
/// (which the API server would not return) observes as nothing.
pub(crate) fn observe_dynamic<K: ChildObject>(
    object: &DynamicObject,
    pods: PodLookup<'_>,
) -> Option<WorkloadObservation> {
    let typed: K = crate::cache::parse(object).ok()?;
    typed.observe(pods)
}

/// The immutable changes between a desired object of kind `K` (as applied) and
/// its stored copy; none when either does not parse as `K`.
pub(crate) fn immutable_changes_dynamic<K: ChildObject>(
    desired: &serde_json::Value,
    existing: &DynamicObject,
) -> Vec<String> {
    let Ok(desired) = serde_json::from_value::<K>(desired.clone()) else {
        return Vec::new();
    };
    let Ok(existing) = crate::cache::parse::<K>(existing) else {
        return Vec::new();
    };
    desired.immutable_changes(&existing)
}

/// Whether `K` runs pods, decided once per kind from its `observe` on an empty object.
pub(crate) fn is_workload<K: ChildObject + Default>() -> bool {
    K::default().observe(&|_| Vec::new()).is_some()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::{DaemonSetSpec, DeploymentSpec, StatefulSetSpec};
    use k8s_openapi::api::core::v1::{PodSpec, PodTemplateSpec};
    use rstest::rstest;

    use super::*;

    fn stopped<K: ChildObject>(mut object: K) -> K {
        object.stop();
        object
    }

    #[test]
    fn stopping_scales_stateful_sets_and_deployments_to_zero() {
        let stateful_set = stopped(StatefulSet {
            spec: StatefulSetSpec {
                replicas: Some(3),
                ..StatefulSetSpec::default()
            },
            ..StatefulSet::default()
        });
        assert_eq!(stateful_set.spec.replicas, Some(0));
        let deployment = stopped(Deployment {
            spec: DeploymentSpec {
                replicas: Some(2),
                ..DeploymentSpec::default()
            },
            ..Deployment::default()
        });
        assert_eq!(deployment.spec.replicas, Some(0));
    }

    #[test]
    fn stopping_a_daemon_set_selects_no_node() {
        let daemon_set = stopped(DaemonSet {
            spec: DaemonSetSpec {
                template: PodTemplateSpec {
                    spec: Some(PodSpec::default()),
                    ..PodTemplateSpec::default()
                },
                ..DaemonSetSpec::default()
            },
            ..DaemonSet::default()
        });
        let selector = daemon_set
            .spec
            .template
            .spec
            .and_then(|spec| spec.node_selector)
            .unwrap_or_default();
        assert_eq!(
            selector.get(STOPPED_NODE_SELECTOR.0).map(String::as_str),
            Some(STOPPED_NODE_SELECTOR.1)
        );
    }

    #[test]
    fn stopping_leaves_config_untouched() {
        let config_map = ConfigMap {
            data: Some(BTreeMap::from([("a".to_owned(), "b".to_owned())])),
            ..ConfigMap::default()
        };
        assert_eq!(stopped(config_map.clone()), config_map);
    }

    #[rstest]
    #[case::stateful_set(is_workload::<StatefulSet>(), true)]
    #[case::deployment(is_workload::<Deployment>(), true)]
    #[case::daemon_set(is_workload::<DaemonSet>(), true)]
    #[case::config_map(is_workload::<ConfigMap>(), false)]
    #[case::service(is_workload::<Service>(), false)]
    #[case::pdb(is_workload::<PodDisruptionBudget>(), false)]
    fn workloads_are_the_kinds_with_pods(#[case] actual: bool, #[case] expected: bool) {
        assert_eq!(actual, expected);
    }

    #[rstest]
    #[case::config_map_before_services(ConfigMap::RANK, Service::RANK)]
    #[case::services_before_workloads(Service::RANK, StatefulSet::RANK)]
    #[case::workloads_before_budgets(StatefulSet::RANK, PodDisruptionBudget::RANK)]
    fn apply_order(#[case] first: ApplyRank, #[case] later: ApplyRank) {
        assert!(first < later);
    }

    fn with_claim(size: &str, class: Option<&str>) -> StatefulSet {
        use k8s_openapi::api::core::v1::{
            PersistentVolumeClaim, PersistentVolumeClaimSpec, VolumeResourceRequirements,
        };
        use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
        StatefulSet {
            spec: StatefulSetSpec {
                service_name: Some("web".to_owned()),
                volume_claim_templates: Some(vec![PersistentVolumeClaim {
                    metadata: kube::api::ObjectMeta {
                        name: Some("data".to_owned()),
                        ..Default::default()
                    },
                    spec: Some(PersistentVolumeClaimSpec {
                        storage_class_name: class.map(str::to_owned),
                        resources: Some(VolumeResourceRequirements {
                            requests: Some(BTreeMap::from([(
                                "storage".to_owned(),
                                Quantity(size.to_owned()),
                            )])),
                            limits: None,
                        }),
                        ..Default::default()
                    }),
                    status: None,
                }]),
                ..StatefulSetSpec::default()
            },
            ..StatefulSet::default()
        }
    }

    #[rstest]
    #[case::nothing_changes(with_claim("1Gi", None), with_claim("1Gi", None), vec![])]
    #[case::replicas_may_change(
        StatefulSet { spec: StatefulSetSpec { replicas: Some(5), ..with_claim("1Gi", None).spec }, ..StatefulSet::default() },
        with_claim("1Gi", None),
        vec![]
    )]
    #[case::capacity_grows(
        with_claim("2Gi", None),
        with_claim("1Gi", None),
        vec!["the size of volume claim template \"data\" changes from 1Gi to 2Gi".to_owned()]
    )]
    #[case::storage_class_changes(
        with_claim("1Gi", Some("fast")),
        with_claim("1Gi", None),
        vec!["the storage class of volume claim template \"data\" changes from (the default class) to fast".to_owned()]
    )]
    fn stateful_set_immutable_changes(
        #[case] desired: StatefulSet,
        #[case] existing: StatefulSet,
        #[case] expected: Vec<String>,
    ) {
        assert_eq!(desired.immutable_changes(&existing), expected);
    }

    #[test]
    fn claims_are_never_pruned() {
        const { assert!(!PersistentVolumeClaim::PRUNABLE) };
        const { assert!(ConfigMap::PRUNABLE) };
    }
}
