//! Validation of the role groups of each role: merged settings, resources, and the
//! files rendered with the cluster's topology.
//!
//! Two passes, because every file names every namenode and journalnode: the first
//! checks each group on its own ([`check_role`]); the second renders the files of each
//! group once the topology is known ([`finish_role`]).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use strata_model::duration::parse_seconds;
use strata_model::identity::{ClusterIdentity, RoleGroupIdentity, RoleIdentity};
use strata_model::labels::RecommendedLabels;
use strata_model::logging::LoggerLevels;
use strata_model::merge::defaulted;
use strata_model::names::RoleGroupRef;
use strata_model::pdb::PdbConfig;
use strata_model::resources::{HeapRule, ValidatedPvc, ValidatedResources};
use strata_operator::error::ReconcileError;

use super::ValidatedRole;
use crate::config::log4j::render_log4j_properties;
use crate::config::site::{ServerSite, server_site};
use crate::config::{SiteError, SiteFiles, Topology};
use crate::crd::{HdfsConfig, HdfsRole, HdfsRoleSpec};

/// Share of the memory limit given to the JVM heap; the rest covers metaspace, thread
/// stacks, direct buffers (datanodes stream blocks through them) and the JIT.
pub const HEAP_PERCENT_OF_MEMORY: u64 = 75;
/// Smallest memory limit accepted: below it a Hadoop daemon does not start.
pub const MIN_MEMORY_LIMIT_MIB: u64 = 256;
const HEAP_RULE: HeapRule = HeapRule {
    heap_percent: HEAP_PERCENT_OF_MEMORY,
    min_memory_mib: MIN_MEMORY_LIMIT_MIB,
};

/// One role group, checked, with its files rendered; only validation creates one.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ValidatedRoleGroup {
    /// Names of the StatefulSet, its ConfigMap and headless Service.
    pub name: RoleGroupRef,
    /// Labels of the group's objects and pods.
    pub labels: RecommendedLabels,
    /// Replicas as the spec asks.
    pub replicas: u16,
    /// CPU, memory and the heap derived from it.
    pub resources: ValidatedResources,
    /// The `data` volume.
    pub data: ValidatedPvc,
    /// `terminationGracePeriodSeconds` from `gracefulShutdownTimeout`.
    pub termination_grace_period_seconds: i64,
    /// `core-site.xml` and `hdfs-site.xml` with the overrides applied.
    pub site: SiteFiles,
    /// `log4j.properties`.
    pub log4j_properties: String,
    /// Environment variables for the daemon's container; they win over the operator's.
    pub env_overrides: BTreeMap<String, String>,
    /// Pod template parts merged over the generated template last.
    pub pod_overrides: PodTemplateSpec,
}

/// A role whose groups passed the first pass.
pub(super) struct CheckedRole {
    pub role: HdfsRole,
    identity: RoleIdentity,
    pdb: PdbConfig,
    pub groups: Vec<CheckedGroup>,
}

/// A group that passed the first pass and waits for the topology.
pub(super) struct CheckedGroup {
    pub name: RoleGroupRef,
    labels: RecommendedLabels,
    pub replicas: u16,
    resources: ValidatedResources,
    data: ValidatedPvc,
    termination_grace_period_seconds: i64,
    logging: LoggerLevels,
    core_overrides: BTreeMap<String, String>,
    hdfs_overrides: BTreeMap<String, String>,
    env_overrides: BTreeMap<String, String>,
    pod_overrides: PodTemplateSpec,
}

/// What the files of every group are rendered with.
#[derive(Clone, Copy, Debug)]
pub(super) struct SiteContext<'a> {
    pub topology: &'a Topology,
    pub dfs_replication: u16,
    pub zookeeper_quorum: &'a str,
}

/// First pass: merges and checks every role group of `role`.
pub(super) fn check_role(
    identity: &ClusterIdentity,
    role: HdfsRole,
    spec: &HdfsRoleSpec,
) -> Result<CheckedRole, ReconcileError> {
    let role_identity =
        identity.role_with_groups(role.into(), role.spec_field(), &spec.role_groups)?;
    let groups = spec
        .merged_role_groups(&HdfsConfig::product_defaults(role))
        .into_values()
        .map(|merged| {
            let RoleGroupIdentity { name, labels } =
                identity.role_group(&role_identity, &merged.name)?;
            let problem = |reason: &str, message: String| {
                ReconcileError::invalid_spec(
                    reason,
                    format!(
                        "{}.roleGroups.{}: {message}",
                        role.spec_field(),
                        merged.name
                    ),
                )
            };
            let config = &merged.config;
            let timeout = defaulted("gracefulShutdownTimeout", &config.graceful_shutdown_timeout)?;
            let termination_grace_period_seconds = parse_seconds(&timeout).map_err(|error| {
                problem(
                    "InvalidGracefulShutdownTimeout",
                    format!("gracefulShutdownTimeout: {error}"),
                )
            })?;
            let logging = LoggerLevels::from_overrides(
                "log4j.properties",
                &merged.config_overrides.log4j_properties,
            )
            .map_err(|error| problem("InvalidConfigOverride", error.to_string()))?;
            Ok(CheckedGroup {
                name,
                labels,
                replicas: merged.replicas,
                resources: config
                    .resources
                    .validate(HEAP_RULE)
                    .map_err(|error| problem(error.reason(), error.to_string()))?,
                data: config
                    .resources
                    .storage
                    .data
                    .validate("data")
                    .map_err(|error| problem(error.reason(), error.to_string()))?,
                termination_grace_period_seconds,
                logging,
                core_overrides: merged.config_overrides.core_site_xml.clone(),
                hdfs_overrides: merged.config_overrides.hdfs_site_xml.clone(),
                env_overrides: merged.env_overrides.clone(),
                pod_overrides: merged.pod_overrides.clone(),
            })
        })
        .collect::<Result<Vec<_>, ReconcileError>>()?;
    Ok(CheckedRole {
        role,
        identity: role_identity,
        pdb: spec.role_config.pod_disruption_budget.clone(),
        groups,
    })
}

/// Second pass: renders the files of every group of `checked`.
pub(super) fn finish_role(
    context: &SiteContext<'_>,
    checked: CheckedRole,
) -> Result<ValidatedRole, ReconcileError> {
    let role = checked.role;
    let groups = checked
        .groups
        .into_iter()
        .map(|group| {
            let problem = |reason: &str, message: String| {
                ReconcileError::invalid_spec(
                    reason,
                    format!(
                        "{}.roleGroups.{}: {message}",
                        role.spec_field(),
                        group.name.role_group()
                    ),
                )
            };
            let site = server_site(&ServerSite {
                topology: context.topology,
                role,
                dfs_replication: context.dfs_replication,
                zookeeper_quorum: context.zookeeper_quorum,
                core_overrides: &group.core_overrides,
                hdfs_overrides: &group.hdfs_overrides,
            })
            .map_err(|error: SiteError| problem(error.reason(), error.to_string()))?;
            let log4j_properties = render_log4j_properties(&group.logging).map_err(|error| {
                problem(
                    "InvalidConfigOverride",
                    format!("log4j.properties: {error}"),
                )
            })?;
            Ok(ValidatedRoleGroup {
                name: group.name,
                labels: group.labels,
                replicas: group.replicas,
                resources: group.resources,
                data: group.data,
                termination_grace_period_seconds: group.termination_grace_period_seconds,
                site,
                log4j_properties,
                env_overrides: group.env_overrides,
                pod_overrides: group.pod_overrides,
            })
        })
        .collect::<Result<Vec<_>, ReconcileError>>()?;
    Ok(ValidatedRole::new(
        role,
        checked.identity,
        checked.pdb,
        groups,
    ))
}
