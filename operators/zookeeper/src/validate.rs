//! Validation: turns a `ZookeeperCluster` into a [`ValidatedCluster`], the merged and
//! checked model every build function reads.
//!
//! Everything that can be wrong with a spec is found here, so the build step cannot fail
//! on user input: names that would exceed Kubernetes' limits, invalid images, quantities
//! and durations, config overrides, and overlapping server id ranges. Each problem becomes
//! [`ReconcileError::invalid_spec`] with a CamelCase reason and a message naming the field
//! or role group, never a panic.

mod role_group;

use std::collections::BTreeMap;

use kube::ResourceExt;
use strata_model::image::ResolvedImage;
use strata_model::labels::RecommendedLabels;
use strata_model::names::{ClusterName, NameError, RoleName, RoleRef};
use strata_model::pdb::PdbConfig;
use strata_operator::error::ReconcileError;

pub use self::role_group::{HEAP_PERCENT_OF_MEMORY, MIN_MEMORY_LIMIT_MIB, ValidatedRoleGroup};
use crate::crd::{
    APP_NAME, DEFAULT_PRODUCT_VERSION, OPERATOR_NAME, SERVER_ROLE, UPSTREAM_IMAGE_REPOSITORY,
    ZookeeperCluster, ZookeeperConfig,
};
pub use strata_model::duration::{DurationError, parse_seconds};
pub use strata_model::quantity::{QuantityError, canonical, parse_milli};

/// Kubernetes' default cluster DNS domain, used when the operator is not told otherwise.
pub const DEFAULT_CLUSTER_DOMAIN: &str = "cluster.local";

/// A `ZookeeperCluster` with every default applied and every rule checked.
///
/// Fields are public for reading; `#[non_exhaustive]` makes [`ValidatedCluster::new`] the
/// only way other crates obtain one, so holding a value proves the spec was validated.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ValidatedCluster {
    /// The cluster object's name.
    pub name: ClusterName,
    /// The namespace of the cluster and of every object built for it.
    pub namespace: String,
    /// Cluster DNS domain used in host names (`cluster.local` by default).
    pub cluster_domain: String,
    /// The image every server runs, with pull settings.
    pub image: ResolvedImage,
    /// Recommended labels of cluster-wide objects (client Service, discovery ConfigMap).
    pub cluster_labels: RecommendedLabels,
    /// The `server` role: `<cluster>-server` names its PodDisruptionBudget.
    pub role: RoleRef,
    /// Recommended labels of role-wide objects; their selector spans every server Pod.
    pub role_labels: RecommendedLabels,
    /// The role's PodDisruptionBudget settings.
    pub pdb: PdbConfig,
    /// The role groups, sorted by name.
    pub role_groups: Vec<ValidatedRoleGroup>,
}

impl ValidatedCluster {
    /// Validates `cluster` for the given cluster DNS domain.
    ///
    /// Pausing and stopping are the apply step's concern, and an unknown
    /// `operator-command` is reported by the status step, so none of them affects
    /// validation: a stopped cluster validates to the ensemble it will run again.
    pub fn new(cluster: &ZookeeperCluster, cluster_domain: &str) -> Result<Self, ReconcileError> {
        let name = ClusterName::new(&cluster.name_any()).map_err(name_error)?;
        let namespace = cluster.namespace().ok_or_else(|| {
            ReconcileError::invalid_spec(
                "MissingNamespace",
                format!("ZookeeperCluster {name} has no namespace"),
            )
        })?;
        check_cluster_domain(cluster_domain)?;
        let image = cluster
            .spec
            .image
            .resolve(UPSTREAM_IMAGE_REPOSITORY, DEFAULT_PRODUCT_VERSION)
            .map_err(|error| {
                ReconcileError::invalid_spec("InvalidImage", format!("spec.image: {error}"))
            })?;
        let label_error = |error: strata_model::labels::LabelError| {
            ReconcileError::invalid_spec("InvalidLabelValue", error.to_string())
        };
        let cluster_labels = RecommendedLabels::new(
            APP_NAME,
            name.as_str(),
            OPERATOR_NAME,
            &image.product_version,
        )
        .map_err(label_error)?;
        let role_labels = cluster_labels.for_role(SERVER_ROLE).map_err(label_error)?;
        let role_name = RoleName::new(SERVER_ROLE).map_err(name_error)?;
        let role = RoleRef::new(&name, &role_name).map_err(name_error)?;

        let servers = &cluster.spec.servers;
        if servers.role_groups.is_empty() {
            return Err(ReconcileError::invalid_spec(
                "NoRoleGroups",
                "spec.servers.roleGroups is empty; define at least one role group",
            ));
        }
        let merged: BTreeMap<_, _> =
            servers.merged_role_groups(&ZookeeperConfig::product_defaults());
        let context = role_group::Context {
            role: &role,
            namespace: &namespace,
            cluster_domain,
            cluster_labels: &cluster_labels,
        };
        let role_groups = role_group::validate_all(&context, merged.values())?;

        Ok(Self {
            name,
            namespace,
            cluster_domain: cluster_domain.to_owned(),
            image,
            cluster_labels,
            role,
            role_labels,
            pdb: servers.role_config.pod_disruption_budget.clone(),
            role_groups,
        })
    }

    /// `<cluster>.<namespace>.svc.<domain>:2181`: how clients reach the ensemble through
    /// the client Service.
    pub fn connection_hosts(&self) -> String {
        connection_hosts(self.name.as_str(), &self.namespace, &self.cluster_domain)
    }
}

/// The connection string of a cluster's client Service, for callers that only know the
/// cluster's name, such as the ZNode controller.
pub fn connection_hosts(cluster: &str, namespace: &str, cluster_domain: &str) -> String {
    format!(
        "{cluster}.{namespace}.svc.{cluster_domain}:{}",
        crate::config::zoo_cfg::CLIENT_PORT
    )
}

/// Maps a name error to a reason that says which kind of problem it is.
pub(crate) fn name_error(error: NameError) -> ReconcileError {
    let reason = match &error {
        NameError::TooLong { .. } => "NameTooLong",
        NameError::InvalidLabel { what, .. } if what.starts_with("role group") => {
            "InvalidRoleGroupName"
        }
        NameError::InvalidLabel { .. } => "InvalidName",
    };
    ReconcileError::invalid_spec(reason, error.to_string())
}

/// The cluster domain becomes part of every host name; reject what DNS cannot hold.
fn check_cluster_domain(domain: &str) -> Result<(), ReconcileError> {
    let label_ok = |label: &str| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    if domain.len() <= 253 && domain.split('.').all(label_ok) {
        Ok(())
    } else {
        Err(ReconcileError::invalid_spec(
            "InvalidClusterDomain",
            format!("cluster domain {domain:?} is not a valid DNS name"),
        ))
    }
}

#[cfg(test)]
pub(crate) mod tests;
