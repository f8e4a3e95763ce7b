//! Validation of the role groups of each role: merged settings, resources, and the
//! files rendered with the cluster's topology.
//!
//! Two passes, because every file names every namenode and journalnode: the first
//! checks each group on its own ([`check_role`]); the second renders the files of each
//! group once the topology is known ([`finish_role`]).

use std::collections::BTreeMap;

use strata_model::identity::{ClusterIdentity, RoleIdentity};
use strata_model::logging::LoggerLevels;
use strata_model::pdb::PdbConfig;
use strata_model::resources::{HeapRule, ValidatedPvc};
use strata_operator::error::ReconcileError;

use super::ValidatedRole;
use crate::config::log4j::render_log4j_properties;
use crate::config::site::{ServerSite, server_site};
use crate::config::zookeeper_tls::ZookeeperConnection;
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
    non_heap_reserve_mib: 0,
};

/// A role group, checked: the settings every product shares and [`DaemonGroup`].
pub type ValidatedRoleGroup = strata_model::role_group::ValidatedRoleGroup<DaemonGroup>;

/// What only HDFS role groups have: the daemon's volume and files.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct DaemonGroup {
    /// The `data` volume.
    pub data: ValidatedPvc,
    /// `core-site.xml` and `hdfs-site.xml` with the overrides applied.
    pub site: SiteFiles,
    /// `log4j.properties`.
    pub log4j_properties: String,
}

/// A role whose groups passed the first pass.
pub(super) struct CheckedRole {
    pub role: HdfsRole,
    identity: RoleIdentity,
    pdb: PdbConfig,
    pub groups: Vec<strata_model::role_group::ValidatedRoleGroup<FirstPass>>,
}

/// What a group's first pass found; the files wait for the topology.
pub(super) struct FirstPass {
    data: ValidatedPvc,
    logging: LoggerLevels,
    core_overrides: BTreeMap<String, String>,
    hdfs_overrides: BTreeMap<String, String>,
}

/// What the files of every group are rendered with.
#[derive(Clone, Copy, Debug)]
pub(super) struct SiteContext<'a> {
    pub topology: &'a Topology,
    pub dfs_replication: u16,
    pub zookeeper: &'a ZookeeperConnection,
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
            let group = strata_model::role_group::ValidatedRoleGroup::check(
                identity,
                &role_identity,
                role.spec_field(),
                &merged,
                HEAP_RULE,
            )?;
            let problem = |reason: &str, message: String| {
                ReconcileError::invalid_spec(reason, format!("{}: {message}", group.field))
            };
            let logging = LoggerLevels::from_overrides(
                "log4j.properties",
                &merged.config_overrides.log4j_properties,
            )
            .map_err(|error| problem("InvalidConfigOverride", error.to_string()))?;
            let data = merged
                .config
                .resources
                .storage
                .data
                .validate("data")
                .map_err(|error| problem(error.reason(), error.to_string()))?;
            Ok(group.with(FirstPass {
                data,
                logging,
                core_overrides: merged.config_overrides.core_site_xml.clone(),
                hdfs_overrides: merged.config_overrides.hdfs_site_xml.clone(),
            }))
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
                ReconcileError::invalid_spec(reason, format!("{}: {message}", group.field))
            };
            let first = &group.product;
            let site = server_site(&ServerSite {
                topology: context.topology,
                role,
                dfs_replication: context.dfs_replication,
                zookeeper: context.zookeeper,
                core_overrides: &first.core_overrides,
                hdfs_overrides: &first.hdfs_overrides,
            })
            .map_err(|error: SiteError| problem(error.reason(), error.to_string()))?;
            let log4j_properties = render_log4j_properties(&first.logging).map_err(|error| {
                problem(
                    "InvalidConfigOverride",
                    format!("log4j.properties: {error}"),
                )
            })?;
            Ok(group.map(|first| DaemonGroup {
                data: first.data,
                site,
                log4j_properties,
            }))
        })
        .collect::<Result<Vec<_>, ReconcileError>>()?;
    Ok(ValidatedRole::new(
        role,
        checked.identity,
        checked.pdb,
        groups,
    ))
}
