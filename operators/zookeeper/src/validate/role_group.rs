//! Validation of the role groups: merged settings, resources, config files and the
//! ensemble's server ids.
//!
//! Two passes: the first checks each group on its own; the second renders every group's
//! `zoo.cfg` with the `server.N` lines of all groups, which is where overlapping `myid`
//! ranges are found.

use strata_model::identity::{ClusterIdentity, RoleIdentity};
use strata_model::logging::LoggerLevels;
use strata_model::merge::defaulted;
use strata_model::resources::{HeapRule, ValidatedPvc};
use strata_model::role::MergedRoleGroup;
use strata_operator::error::ReconcileError;

use crate::config::zoo_cfg::DATA_DIR;
use crate::config::{
    PodDns, RoleGroupServers, ServerIdError, TlsSettings, ZooCfg, ZooCfgError, ZooCfgInput,
};
use crate::crd::config::{PeerType, ZookeeperConfig, ZookeeperConfigOverrides};

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
    non_heap_reserve_mib: 0,
};

/// A role group, checked: the settings every product shares and [`ServerGroup`].
pub type ValidatedRoleGroup = strata_model::role_group::ValidatedRoleGroup<ServerGroup>;

/// What only ZooKeeper's role groups have.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ServerGroup {
    /// Server id of the group's first Pod.
    pub myid_offset: u32,
    /// Whether the group's servers are observers.
    pub observer: bool,
    /// The `data` volume.
    pub data: ValidatedPvc,
    /// The rendered `zoo.cfg`, with the servers of every role group.
    pub zoo_cfg: ZooCfg,
    /// What `logback.xml` is rendered from.
    pub logback: LoggerLevels,
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
    pub tls: Option<TlsSettings>,
    /// Whether the client Service is reachable from outside the cluster.
    pub exposed: bool,
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
    group: strata_model::role_group::ValidatedRoleGroup<()>,
    myid_offset: u32,
    observer: bool,
    timing: Timing,
    data: ValidatedPvc,
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
        .map(|checked| RoleGroupServers {
            role_group: checked.group.name.role_group().to_string(),
            replicas: u32::from(checked.group.replicas),
            myid_offset: checked.myid_offset,
            observer: checked.observer,
            pod_dns: PodDns {
                statefulset: checked.group.name.object_name().to_owned(),
                service: checked.group.name.object_name().to_owned(),
                namespace: context.identity.namespace.clone(),
                cluster_domain: context.cluster_domain.to_owned(),
            },
        })
        .collect();
    checked
        .into_iter()
        .map(|group| finish(group, &servers, context))
        .collect()
}

fn check<'a>(
    context: &Context<'_>,
    merged: &'a MergedRoleGroup<ZookeeperConfig, ZookeeperConfigOverrides>,
) -> Result<Checked<'a>, ReconcileError> {
    let group = strata_model::role_group::ValidatedRoleGroup::check(
        context.identity,
        context.role,
        "servers",
        merged,
        HEAP_RULE,
    )?;
    let problem = |reason: &str, message: String| {
        ReconcileError::invalid_spec(reason, format!("{}: {message}", group.field))
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
    let logback = LoggerLevels::from_overrides("logback.xml", &merged.config_overrides.logback_xml)
        .map_err(|error| problem("InvalidConfigOverride", error.to_string()))?;
    let data = config
        .resources
        .storage
        .data
        .validate("data")
        .map_err(|error| problem(error.reason(), error.to_string()))?;
    Ok(Checked {
        merged,
        myid_offset: defaulted("myidOffset", &config.myid_offset)?,
        observer: defaulted("peerType", &config.peer_type)? == PeerType::Observer,
        timing,
        data,
        logback,
        group,
    })
}

fn finish(
    checked: Checked<'_>,
    servers: &[RoleGroupServers],
    context: &Context<'_>,
) -> Result<ValidatedRoleGroup, ReconcileError> {
    let field = &checked.group.field;
    let mut input = ZooCfgInput::new(servers.to_vec());
    input.tick_time_ms = checked.timing.tick_time_ms;
    input.init_limit_ticks = checked.timing.init_limit_ticks;
    input.sync_limit_ticks = checked.timing.sync_limit_ticks;
    input.overrides = checked.merged.config_overrides.zoo_cfg.clone();
    input.observer = checked.observer;
    input.tls = context.tls;
    input.exposed = context.exposed;
    let zoo_cfg = ZooCfg::render(&input).map_err(|error| zoo_cfg_error(field, &error))?;
    for key in ["dataDir", "dataLogDir"] {
        if let Some(dir) = zoo_cfg.get(key)
            && ((dir != DATA_DIR && !dir.starts_with(&format!("{DATA_DIR}/")))
                || dir.split('/').any(|part| part == ".."))
        {
            return Err(ReconcileError::invalid_spec(
                "InvalidDataDir",
                format!(
                    "{field}: configOverrides sets {key}={dir}, but only {DATA_DIR} is a \
                     persistent, writable volume; use {DATA_DIR} or a directory below it",
                ),
            ));
        }
    }
    Ok(checked.group.with(ServerGroup {
        myid_offset: checked.myid_offset,
        observer: checked.observer,
        data: checked.data,
        zoo_cfg,
        logback: checked.logback,
        joining: None,
    }))
}

/// Maps `zoo.cfg` problems of the group at `field` to reasons; server id messages
/// already name the groups.
fn zoo_cfg_error(field: &str, error: &ZooCfgError) -> ReconcileError {
    let reason = match error {
        ZooCfgError::ServerIds(ServerIdError::Overlap { .. }) => "OverlappingServerIds",
        ZooCfgError::ServerIds(ServerIdError::OffsetZero { .. }) => "InvalidMyidOffset",
        ZooCfgError::ServerIds(ServerIdError::AboveLimit { .. }) => "ServerIdOutOfRange",
        ZooCfgError::Overrides(error) => {
            return ReconcileError::invalid_spec(error.reason(), format!("{field}: {error}"));
        }
        ZooCfgError::InvalidOverrideKey { .. } | ZooCfgError::Properties(_) => {
            return ReconcileError::invalid_spec(
                "InvalidConfigOverride",
                format!("{field}: zoo.cfg: {error}"),
            );
        }
    };
    ReconcileError::invalid_spec(reason, format!("spec.servers: {error}"))
}
