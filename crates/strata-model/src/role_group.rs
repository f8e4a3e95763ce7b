//! The checked role group: the settings every product's role group has, checked once
//! here, and the product's own part next to them.
//!
//! Every operator turns a [`MergedRoleGroup`] into a StatefulSet with the same
//! handful of checked values (its names and labels, replicas, resources, the
//! termination grace period, env and pod overrides). They are checked by
//! [`ValidatedRoleGroup::check`], with the same reasons and messages in every operator;
//! the product adds what only it has with [`ValidatedRoleGroup::with`].

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PodSpec, PodTemplateSpec, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::build::{
    ContainerPort, PodUpdates, PrometheusScrape, StatefulSetParts, headless_service, object_meta,
    pod_service, role_group_metrics_service, stateful_set,
};
use crate::duration::{DurationError, parse_seconds};
use crate::identity::{ClusterIdentity, IdentityError, Replicas, RoleGroupIdentity, RoleIdentity};
use crate::labels::RecommendedLabels;
use crate::merge::{MissingDefault, defaulted};
use crate::names::RoleGroupRef;
use crate::resources::{HeapRule, ResourceError, Resources, ValidatedResources};
use crate::role::{EnvOverrides, MergedRoleGroup};

/// The settings of a product's role-group config that every product has, so that one
/// function checks them for all.
pub trait CommonSettings {
    /// The product's volumes under `resources.storage`.
    type Storage;
    /// `resources`: cpu and memory are checked here, storage by the product (only it
    /// knows its volumes).
    fn resources(&self) -> &Resources<Self::Storage>;
    /// `gracefulShutdownTimeout`, merged over the product default.
    fn graceful_shutdown_timeout(&self) -> &Option<String>;
}

/// Implements [`CommonSettings`] for a product config whose fields are named as in
/// every Strata CRD: `resources: Resources<Storage>` and
/// `graceful_shutdown_timeout: Option<String>`.
///
/// ```
/// use strata_model::resources::{NoStorage, Resources};
///
/// struct WebConfig { resources: Resources<NoStorage>, graceful_shutdown_timeout: Option<String> }
/// strata_model::common_settings!(WebConfig, NoStorage);
/// ```
#[macro_export]
macro_rules! common_settings {
    ($config:ty, $storage:ty) => {
        impl $crate::role_group::CommonSettings for $config {
            type Storage = $storage;

            fn resources(&self) -> &$crate::resources::Resources<$storage> {
                &self.resources
            }

            fn graceful_shutdown_timeout(&self) -> &Option<String> {
                &self.graceful_shutdown_timeout
            }
        }
    };
}

/// A role group, checked: what every product's StatefulSet is built from, and the
/// product's own checked part `P` (its rendered files, for one).
///
/// `#[non_exhaustive]` makes [`ValidatedRoleGroup::check`] the only way to obtain one
/// outside this crate. Its fields are public for reading; a product changes one only
/// to derive it further (a Trino worker's grace period adds its drain time).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ValidatedRoleGroup<P> {
    /// `<role>.roleGroups.<group>`: where the group is in the spec, the start of every
    /// message about it.
    pub field: String,
    /// Names of the StatefulSet, its ConfigMap and headless Service.
    pub name: RoleGroupRef,
    /// Labels of the group's objects and pods.
    pub labels: RecommendedLabels,
    /// Replicas as the spec asks; a stopped cluster keeps them, and the apply step
    /// scales its workloads to zero.
    pub replicas: u16,
    /// CPU, memory and the heap derived from it.
    pub resources: ValidatedResources,
    /// `terminationGracePeriodSeconds`: `gracefulShutdownTimeout`, plus whatever the
    /// product's pods need before it (a Trino worker drains first).
    pub termination_grace_period_seconds: i64,
    /// Environment variables for the product container; they win over the operator's.
    pub env_overrides: EnvOverrides,
    /// Pod template parts merged over the generated template last.
    pub pod_overrides: PodTemplateSpec,
    /// What only this product's role groups have.
    pub product: P,
}

/// Why a role group's common settings were refused. The variant is the condition
/// reason, except where a wrapped error names a finer one.
#[derive(Debug, thiserror::Error)]
pub enum CommonSettingsError {
    /// The group's name makes an invalid object name or label.
    #[error(transparent)]
    Identity(#[from] IdentityError),
    /// The product defaults leave a common setting empty: the operator's bug.
    #[error(transparent)]
    MissingDefault(#[from] MissingDefault),
    /// A cpu or memory setting is invalid.
    #[error("{field}: {source}")]
    Resources {
        /// The role group's field.
        field: String,
        /// What is wrong.
        source: ResourceError,
    },
    /// `gracefulShutdownTimeout` is not a positive duration.
    #[error("{field}: gracefulShutdownTimeout: {source}")]
    InvalidGracefulShutdownTimeout {
        /// The role group's field.
        field: String,
        /// What is wrong.
        source: DurationError,
    },
}

impl CommonSettingsError {
    /// The condition reason.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Identity(error) => error.reason(),
            Self::MissingDefault(_) => "MissingDefault",
            Self::Resources { source, .. } => source.reason(),
            Self::InvalidGracefulShutdownTimeout { .. } => "InvalidGracefulShutdownTimeout",
        }
    }
}

/// `<role>.roleGroups.<group>`, as every Strata operator names a role group in messages.
pub fn role_group_field(role_field: &str, group: &str) -> String {
    format!("{role_field}.roleGroups.{group}")
}

impl ValidatedRoleGroup<()> {
    /// Checks the settings every product shares of the merged group `merged` of the
    /// role `role` (spelled `role_field` in the spec), with the product's `heap` rule.
    pub fn check<C: CommonSettings, O>(
        identity: &ClusterIdentity,
        role: &RoleIdentity,
        role_field: &str,
        merged: &MergedRoleGroup<C, O>,
        heap: HeapRule,
    ) -> Result<Self, CommonSettingsError> {
        let RoleGroupIdentity { name, labels } = identity.role_group(role, &merged.name)?;
        let field = role_group_field(role_field, &merged.name);
        let config = &merged.config;
        let resources =
            config
                .resources()
                .validate(heap)
                .map_err(|source| CommonSettingsError::Resources {
                    field: field.clone(),
                    source,
                })?;
        let timeout = defaulted(
            "gracefulShutdownTimeout",
            config.graceful_shutdown_timeout(),
        )?;
        let termination_grace_period_seconds = parse_seconds(&timeout).map_err(|source| {
            CommonSettingsError::InvalidGracefulShutdownTimeout {
                field: field.clone(),
                source,
            }
        })?;
        Ok(Self {
            field,
            name,
            labels,
            replicas: merged.replicas,
            resources,
            termination_grace_period_seconds,
            env_overrides: merged.env_overrides.clone(),
            pod_overrides: merged.pod_overrides.clone(),
            product: (),
        })
    }
}

impl<P> ValidatedRoleGroup<P> {
    /// The same group with the product's part `product`: the last step of a product's
    /// role-group validation.
    pub fn with<Q>(self, product: Q) -> ValidatedRoleGroup<Q> {
        self.map(|_| product)
    }

    /// The same group with its product part turned into another, for a product that
    /// validates in passes (the first pass's part becomes the final one).
    pub fn map<Q>(self, into: impl FnOnce(P) -> Q) -> ValidatedRoleGroup<Q> {
        ValidatedRoleGroup {
            field: self.field,
            name: self.name,
            labels: self.labels,
            replicas: self.replicas,
            resources: self.resources,
            termination_grace_period_seconds: self.termination_grace_period_seconds,
            env_overrides: self.env_overrides,
            pod_overrides: self.pod_overrides,
            product: into(self.product),
        }
    }
}

/// What a product decides about a role group's StatefulSet; the group itself gives the
/// rest ([`ValidatedRoleGroup::stateful_set`]).
#[derive(Clone, Debug)]
pub struct Workload<'a> {
    /// Whether all pods start at once (`Parallel`), as members of a quorum must, which
    /// are ready only together; otherwise one after the other (`OrderedReady`).
    pub parallel: bool,
    /// Who restarts pods after a template change.
    pub pod_updates: PodUpdates,
    /// The hash of the files the pods mount.
    pub config_hash: &'a str,
    /// The product's pod; the group's termination grace period and the cluster's image
    /// pull Secrets are set on it.
    pub pod: PodSpec,
    /// Volume claim templates.
    pub claims: Vec<PersistentVolumeClaim>,
}

/// The objects every product builds for a role group in the same way.
impl<P> ValidatedRoleGroup<P> {
    /// `<cluster>-<role>-<group>` in `namespace` with the group's labels: the metadata
    /// of its ConfigMap.
    pub fn object_meta(&self, namespace: &str) -> ObjectMeta {
        object_meta(self.name.object_name(), namespace, self.labels.labels())
    }

    /// The StatefulSet's `serviceName`: stable DNS names for the group's pods, on
    /// `ports`.
    pub fn headless_service(&self, namespace: &str, ports: &[ContainerPort]) -> Service {
        headless_service(self.object_meta(namespace), self.labels.selector(), ports)
    }

    /// A Service per pod of the group (`<pod>`, on `ports`), for names that resolve
    /// while the pod is gone; see [`pod_service`].
    pub fn pod_services(&self, namespace: &str, ports: &[ContainerPort]) -> Vec<Service> {
        (0..self.replicas)
            .map(|ordinal| {
                let pod = self.name.pod_name(ordinal);
                pod_service(
                    object_meta(&pod, namespace, self.labels.labels()),
                    &pod,
                    ports,
                )
            })
            .collect()
    }

    /// `<cluster>-<role>-<group>-metrics`: where Prometheus scrapes the group's pods.
    pub fn metrics_service(&self, namespace: &str, scrape: PrometheusScrape) -> Service {
        role_group_metrics_service(self.name.object_name(), namespace, &self.labels, scrape)
    }

    /// The group's StatefulSet in `cluster`: named and labelled after the group, with
    /// its replicas, termination grace period and `podOverrides`, and what the product
    /// decided in `workload`.
    pub fn stateful_set(&self, cluster: &ClusterIdentity, workload: Workload<'_>) -> StatefulSet {
        let mut pod = workload.pod;
        pod.termination_grace_period_seconds = Some(self.termination_grace_period_seconds);
        pod.image_pull_secrets
            .clone_from(&cluster.image.pull_secrets);
        stateful_set(StatefulSetParts {
            name: self.name.object_name(),
            namespace: &cluster.namespace,
            labels: &self.labels,
            replicas: self.replicas,
            parallel: workload.parallel,
            pod_updates: workload.pod_updates,
            config_hash: workload.config_hash,
            pod,
            pod_overrides: &self.pod_overrides,
            claims: workload.claims,
        })
    }
}

impl<P> Replicas for ValidatedRoleGroup<P> {
    fn replicas(&self) -> u16 {
        self.replicas
    }
}

#[cfg(test)]
mod tests;
