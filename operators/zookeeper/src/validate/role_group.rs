//! Validation of the role groups: merged settings, resources, config files and the
//! ensemble's server ids.
//!
//! Two passes: the first checks each group on its own; the second renders every group's
//! `zoo.cfg` with the `server.N` lines of all groups, which is where overlapping `myid`
//! ranges are found.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use strata_model::identity::{ClusterIdentity, RoleGroupIdentity, RoleIdentity};
use strata_model::labels::RecommendedLabels;
use strata_model::logging::LoggerLevels;
use strata_model::merge::defaulted;
use strata_model::names::RoleGroupRef;
use strata_model::resources::{HeapRule, ValidatedPvc, ValidatedResources};
use strata_model::role::MergedRoleGroup;
use strata_operator::error::ReconcileError;

use crate::config::zoo_cfg::DATA_DIR;
use crate::config::{PodDns, RoleGroupServers, ServerIdError, ZooCfg, ZooCfgError, ZooCfgInput};
use crate::crd::config::{PeerType, ZookeeperConfig, ZookeeperConfigOverrides};
use strata_model::duration::parse_seconds;

/// Share of the memory limit given to the JVM heap. The remaining quarter covers
/// metaspace, thread stacks, NIO buffers and the JIT, which for ZooKeeper stay well below
/// 256Mi; a larger heap would risk the kernel's OOM killer, a smaller one wastes memory
/// ZooKeeper keeps its whole data tree in.
pub const HEAP_PERCENT_OF_MEMORY: u64 = 75;
/// Smallest memory limit accepted: below it the heap could not hold ZooKeeper itself.
pub const MIN_MEMORY_LIMIT_MIB: u64 = 128;
/// ZooKeeper's heap: [`HEAP_PERCENT_OF_MEMORY`] of at least [`MIN_MEMORY_LIMIT_MIB`].
const HEAP_RULE: HeapRule = HeapRule {
    heap_percent: HEAP_PERCENT_OF_MEMORY,
    min_memory_mib: MIN_MEMORY_LIMIT_MIB,
};

/// One role group, checked and with every layer merged; only validation creates one.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ValidatedRoleGroup {
    /// Names of the StatefulSet, its ConfigMap and headless Service.
    pub name: RoleGroupRef,
    /// Recommended labels of the group's objects and Pods.
    pub labels: RecommendedLabels,
    /// Replicas of the StatefulSet, all members of the ensemble. A stopped cluster keeps
    /// them in `zoo.cfg`; the apply step scales the StatefulSet to zero.
    pub replicas: u16,
    /// Server id of the group's first Pod.
    pub myid_offset: u32,
    /// Whether the group's servers are observers.
    pub observer: bool,
    /// CPU, memory and the heap derived from it.
    pub resources: ValidatedResources,
    /// The `data` volume.
    pub data: ValidatedPvc,
    /// `terminationGracePeriodSeconds` from `gracefulShutdownTimeout`.
    pub termination_grace_period_seconds: i64,
    /// The rendered `zoo.cfg`, with the servers of every role group.
    pub zoo_cfg: ZooCfg,
    /// What `logback.xml` is rendered from.
    pub logback: LoggerLevels,
    /// Environment variables for the ZooKeeper container; they win over the operator's.
    pub env_overrides: BTreeMap<String, String>,
    /// Pod template parts merged over the generated template last.
    pub pod_overrides: PodTemplateSpec,
    /// The server this group adds in the membership step in progress, recorded on the
    /// StatefulSet ([`crate::membership::JOINING_ANNOTATION`]).
    pub joining: Option<u32>,
}

/// What every role group is validated against.
#[derive(Debug)]
pub(super) struct Context<'a> {
    pub identity: &'a ClusterIdentity,
    pub role: &'a RoleIdentity,
    pub cluster_domain: &'a str,
}

/// `tickTime`, `initLimit` and `syncLimit` after merging over the product defaults.
#[derive(Clone, Copy, Debug)]
struct Timing {
    tick_time_ms: u32,
    init_limit_ticks: u32,
    sync_limit_ticks: u32,
}

/// A group that passed the first pass and waits for the ensemble.
struct Checked<'a> {
    merged: &'a MergedRoleGroup<ZookeeperConfig, ZookeeperConfigOverrides>,
    name: RoleGroupRef,
    labels: RecommendedLabels,
    myid_offset: u32,
    observer: bool,
    timing: Timing,
    resources: ValidatedResources,
    data: ValidatedPvc,
    termination_grace_period_seconds: i64,
    logback: LoggerLevels,
}

/// Validates every role group, each against the servers of all of them.
pub(super) fn validate_all<'a>(
    context: &Context<'_>,
    groups: impl Iterator<Item = &'a MergedRoleGroup<ZookeeperConfig, ZookeeperConfigOverrides>>,
) -> Result<Vec<ValidatedRoleGroup>, ReconcileError> {
    let checked: Vec<Checked<'a>> = groups
        .map(|group| check(context, group))
        .collect::<Result<_, _>>()?;
    if !checked.is_empty() && checked.iter().all(|group| group.observer) {
        return Err(ReconcileError::invalid_spec(
            "NoParticipants",
            "every role group has peerType observer, but an ensemble needs voting servers; \
             make at least one group a participant",
        ));
    }
    let servers: Vec<RoleGroupServers> = checked
        .iter()
        .map(|group| RoleGroupServers {
            role_group: group.name.role_group().to_string(),
            replicas: u32::from(group.merged.replicas),
            myid_offset: group.myid_offset,
            observer: group.observer,
            pod_dns: PodDns {
                statefulset: group.name.object_name().to_owned(),
                service: group.name.object_name().to_owned(),
                namespace: context.identity.namespace.clone(),
                cluster_domain: context.cluster_domain.to_owned(),
            },
        })
        .collect();
    checked
        .into_iter()
        .map(|group| finish(group, &servers))
        .collect()
}

fn check<'a>(
    context: &Context<'_>,
    merged: &'a MergedRoleGroup<ZookeeperConfig, ZookeeperConfigOverrides>,
) -> Result<Checked<'a>, ReconcileError> {
    let RoleGroupIdentity { name, labels } =
        context.identity.role_group(context.role, &merged.name)?;
    let problem = |reason: &str, message: String| {
        ReconcileError::invalid_spec(reason, format!("{}: {message}", group_field(&merged.name)))
    };
    let config = &merged.config;
    let timing = Timing {
        tick_time_ms: defaulted("tickTime", &config.tick_time)?,
        init_limit_ticks: defaulted("initLimit", &config.init_limit)?,
        sync_limit_ticks: defaulted("syncLimit", &config.sync_limit)?,
    };
    for (field, value) in [
        ("tickTime", timing.tick_time_ms),
        ("initLimit", timing.init_limit_ticks),
        ("syncLimit", timing.sync_limit_ticks),
    ] {
        if value == 0 {
            return Err(problem(
                "InvalidTimingSetting",
                format!("{field} must be at least 1"),
            ));
        }
    }
    let timeout = defaulted("gracefulShutdownTimeout", &config.graceful_shutdown_timeout)?;
    let termination_grace_period_seconds = parse_seconds(&timeout).map_err(|error| {
        problem(
            "InvalidGracefulShutdownTimeout",
            format!("gracefulShutdownTimeout: {error}"),
        )
    })?;
    let logback = LoggerLevels::from_overrides("logback.xml", &merged.config_overrides.logback_xml)
        .map_err(|error| problem("InvalidConfigOverride", error.to_string()))?;
    Ok(Checked {
        merged,
        name,
        labels,
        myid_offset: defaulted("myidOffset", &config.myid_offset)?,
        observer: defaulted("peerType", &config.peer_type)? == PeerType::Observer,
        timing,
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
        logback,
    })
}

fn finish(
    group: Checked<'_>,
    servers: &[RoleGroupServers],
) -> Result<ValidatedRoleGroup, ReconcileError> {
    let mut input = ZooCfgInput::new(servers.to_vec());
    input.tick_time_ms = group.timing.tick_time_ms;
    input.init_limit_ticks = group.timing.init_limit_ticks;
    input.sync_limit_ticks = group.timing.sync_limit_ticks;
    input.overrides = group.merged.config_overrides.zoo_cfg.clone();
    input.observer = group.observer;
    let zoo_cfg =
        ZooCfg::render(&input).map_err(|error| zoo_cfg_error(&group.merged.name, &error))?;
    for key in ["dataDir", "dataLogDir"] {
        if let Some(dir) = zoo_cfg.get(key)
            && dir != DATA_DIR
            && !dir.starts_with(&format!("{DATA_DIR}/"))
        {
            return Err(ReconcileError::invalid_spec(
                "InvalidDataDir",
                format!(
                    "{}: configOverrides sets {key}={dir}, but only {DATA_DIR} is a persistent, \
                     writable volume; use {DATA_DIR} or a directory below it",
                    group_field(&group.merged.name)
                ),
            ));
        }
    }
    Ok(ValidatedRoleGroup {
        name: group.name,
        labels: group.labels,
        replicas: group.merged.replicas,
        myid_offset: group.myid_offset,
        observer: group.observer,
        resources: group.resources,
        data: group.data,
        termination_grace_period_seconds: group.termination_grace_period_seconds,
        zoo_cfg,
        logback: group.logback,
        env_overrides: group.merged.env_overrides.clone(),
        pod_overrides: group.merged.pod_overrides.clone(),
        joining: None,
    })
}

/// Where a role group is in the spec, as every Strata operator names it in messages.
fn group_field(role_group: &str) -> String {
    format!("servers.roleGroups.{role_group}")
}

/// Maps `zoo.cfg` problems to reasons; server id messages already name the groups.
fn zoo_cfg_error(role_group: &str, error: &ZooCfgError) -> ReconcileError {
    let reason = match error {
        ZooCfgError::ServerIds(ServerIdError::Overlap { .. }) => "OverlappingServerIds",
        ZooCfgError::ServerIds(ServerIdError::OffsetZero { .. }) => "InvalidMyidOffset",
        ZooCfgError::ServerIds(ServerIdError::AboveLimit { .. }) => "ServerIdOutOfRange",
        ZooCfgError::Overrides(error) => {
            return ReconcileError::invalid_spec(
                error.reason(),
                format!("{}: {error}", group_field(role_group)),
            );
        }
        ZooCfgError::InvalidOverrideKey { .. } | ZooCfgError::Properties(_) => {
            return ReconcileError::invalid_spec(
                "InvalidConfigOverride",
                format!("{}: zoo.cfg: {error}", group_field(role_group)),
            );
        }
    };
    ReconcileError::invalid_spec(reason, format!("spec.servers: {error}"))
}
