//! Validation of the role groups: merged settings, resources, config files and the
//! ensemble's server ids.
//!
//! Two passes: the first checks each group on its own; the second renders every group's
//! `zoo.cfg` with the `server.N` lines of all groups, which is where overlapping `myid`
//! ranges are found.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use strata_model::labels::RecommendedLabels;
use strata_model::names::{RoleGroupName, RoleGroupRef, RoleRef};
use strata_model::role::MergedRoleGroup;
use strata_operator::error::ReconcileError;

use super::duration::parse_seconds;
use super::name_error;
use crate::config::zoo_cfg::DATA_DIR;
use crate::config::{
    LogLevel, LogbackInput, PodDns, RoleGroupServers, ServerIdError, ZooCfg, ZooCfgError,
    ZooCfgInput,
};
use crate::crd::SERVER_ROLE;
use crate::crd::config::{
    DEFAULT_CPU_MAX, DEFAULT_CPU_MIN, DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT, DEFAULT_INIT_LIMIT,
    DEFAULT_MEMORY_LIMIT, DEFAULT_MYID_OFFSET, DEFAULT_STORAGE_CAPACITY, DEFAULT_SYNC_LIMIT,
    DEFAULT_TICK_TIME_MS, ZookeeperConfig,
};
use strata_model::quantity::{canonical, parse_milli};

/// Share of the memory limit given to the JVM heap. The remaining quarter covers
/// metaspace, thread stacks, NIO buffers and the JIT, which for ZooKeeper stay well below
/// 256Mi; a larger heap would risk the kernel's OOM killer, a smaller one wastes memory
/// ZooKeeper keeps its whole data tree in.
pub const HEAP_PERCENT_OF_MEMORY: u64 = 75;
/// Smallest memory limit accepted: below it the heap could not hold ZooKeeper itself.
pub const MIN_MEMORY_LIMIT_MIB: u64 = 128;
/// Config files users may override through `configOverrides`.
const CONFIG_FILES: [&str; 2] = ["logback.xml", "zoo.cfg"];
/// Key of `configOverrides."logback.xml"` that sets the root logger's level.
const ROOT_LOGGER_KEY: &str = "ROOT";
const MIB: u64 = 1024 * 1024;

/// Resources of one server, checked and with defaults applied.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerResources {
    /// CPU request.
    pub cpu_min: Quantity,
    /// CPU limit.
    pub cpu_max: Quantity,
    /// Memory request and limit.
    pub memory_limit: Quantity,
    /// JVM heap in MiB: [`HEAP_PERCENT_OF_MEMORY`] of the memory limit.
    pub heap_mib: u64,
    /// Size of the data volume.
    pub storage_capacity: Quantity,
    /// StorageClass of the data volume, if set.
    pub storage_class: Option<String>,
}

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
    /// CPU, memory and storage.
    pub resources: ServerResources,
    /// `terminationGracePeriodSeconds` from `gracefulShutdownTimeout`.
    pub termination_grace_period_seconds: i64,
    /// The rendered `zoo.cfg`, with the servers of every role group.
    pub zoo_cfg: ZooCfg,
    /// What `logback.xml` is rendered from.
    pub logback: LogbackInput,
    /// Environment variables for the ZooKeeper container; they win over the operator's.
    pub env_overrides: BTreeMap<String, String>,
    /// Pod template parts merged over the generated template last.
    pub pod_overrides: PodTemplateSpec,
}

/// What every role group is validated against.
#[derive(Debug)]
pub(super) struct Context<'a> {
    pub role: &'a RoleRef,
    pub namespace: &'a str,
    pub cluster_domain: &'a str,
    pub cluster_labels: &'a RecommendedLabels,
}

/// A group that passed the first pass and waits for the ensemble.
struct Checked<'a> {
    merged: &'a MergedRoleGroup<ZookeeperConfig>,
    name: RoleGroupRef,
    labels: RecommendedLabels,
    myid_offset: u32,
    resources: ServerResources,
    termination_grace_period_seconds: i64,
    logback: LogbackInput,
}

/// Validates every role group, each against the servers of all of them.
pub(super) fn validate_all<'a>(
    context: &Context<'_>,
    groups: impl Iterator<Item = &'a MergedRoleGroup<ZookeeperConfig>>,
) -> Result<Vec<ValidatedRoleGroup>, ReconcileError> {
    let checked: Vec<Checked<'a>> = groups
        .map(|group| check(context, group))
        .collect::<Result<_, _>>()?;
    let servers: Vec<RoleGroupServers> = checked
        .iter()
        .map(|group| RoleGroupServers {
            role_group: group.name.role_group().to_string(),
            replicas: u32::from(group.merged.replicas),
            myid_offset: group.myid_offset,
            pod_dns: PodDns {
                statefulset: group.name.object_name().to_owned(),
                service: group.name.object_name().to_owned(),
                namespace: context.namespace.to_owned(),
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
    merged: &'a MergedRoleGroup<ZookeeperConfig>,
) -> Result<Checked<'a>, ReconcileError> {
    let group_name = RoleGroupName::new(&merged.name).map_err(name_error)?;
    let name = context.role.role_group(&group_name).map_err(name_error)?;
    let labels = context
        .cluster_labels
        .for_role_group(SERVER_ROLE, group_name.as_str())
        .map_err(|error| ReconcileError::invalid_spec("InvalidLabelValue", error.to_string()))?;
    let problem = |reason: &str, message: String| {
        ReconcileError::invalid_spec(reason, format!("role group {:?}: {message}", merged.name))
    };
    let config = &merged.config;
    for (field, value) in [
        ("tickTime", config.tick_time.unwrap_or(DEFAULT_TICK_TIME_MS)),
        ("initLimit", config.init_limit.unwrap_or(DEFAULT_INIT_LIMIT)),
        ("syncLimit", config.sync_limit.unwrap_or(DEFAULT_SYNC_LIMIT)),
    ] {
        if value == 0 {
            return Err(problem(
                "InvalidTimingSetting",
                format!("{field} must be at least 1"),
            ));
        }
    }
    let timeout = config
        .graceful_shutdown_timeout
        .as_deref()
        .unwrap_or(DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT);
    let termination_grace_period_seconds = parse_seconds(timeout).map_err(|error| {
        problem(
            "InvalidGracefulShutdownTimeout",
            format!("gracefulShutdownTimeout: {error}"),
        )
    })?;
    for file in merged.config_overrides.keys() {
        if !CONFIG_FILES.contains(&file.as_str()) {
            return Err(problem(
                "UnsupportedConfigFile",
                format!(
                    "configOverrides has {file:?}; only {} can be overridden",
                    CONFIG_FILES.join(" and ")
                ),
            ));
        }
    }
    let logback = logback_input(merged.config_overrides.get("logback.xml"))
        .map_err(|message| problem("InvalidConfigOverride", message))?;
    Ok(Checked {
        merged,
        name,
        labels,
        myid_offset: config.myid_offset.unwrap_or(DEFAULT_MYID_OFFSET),
        resources: resources(config).map_err(|(reason, message)| problem(reason, message))?,
        termination_grace_period_seconds,
        logback,
    })
}

fn finish(
    group: Checked<'_>,
    servers: &[RoleGroupServers],
) -> Result<ValidatedRoleGroup, ReconcileError> {
    let config = &group.merged.config;
    let mut input = ZooCfgInput::new(servers.to_vec());
    input.tick_time_ms = config.tick_time.unwrap_or(DEFAULT_TICK_TIME_MS);
    input.init_limit_ticks = config.init_limit.unwrap_or(DEFAULT_INIT_LIMIT);
    input.sync_limit_ticks = config.sync_limit.unwrap_or(DEFAULT_SYNC_LIMIT);
    input.overrides = group
        .merged
        .config_overrides
        .get("zoo.cfg")
        .cloned()
        .unwrap_or_default();
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
                    "role group {:?}: configOverrides sets {key}={dir}, but only {DATA_DIR} is a \
                     persistent, writable volume; use {DATA_DIR} or a directory below it",
                    group.merged.name
                ),
            ));
        }
    }
    Ok(ValidatedRoleGroup {
        name: group.name,
        labels: group.labels,
        replicas: group.merged.replicas,
        myid_offset: group.myid_offset,
        resources: group.resources,
        termination_grace_period_seconds: group.termination_grace_period_seconds,
        zoo_cfg,
        logback: group.logback,
        env_overrides: group.merged.env_overrides.clone(),
        pod_overrides: group.merged.pod_overrides.clone(),
    })
}

/// Maps `zoo.cfg` problems to reasons; server id messages already name the groups.
fn zoo_cfg_error(role_group: &str, error: &ZooCfgError) -> ReconcileError {
    let reason = match error {
        ZooCfgError::ServerIds(ServerIdError::Overlap { .. }) => "OverlappingServerIds",
        ZooCfgError::ServerIds(ServerIdError::OffsetZero { .. }) => "InvalidMyidOffset",
        ZooCfgError::ServerIds(ServerIdError::AboveLimit { .. }) => "ServerIdOutOfRange",
        ZooCfgError::InvalidOverrideKey { .. } | ZooCfgError::InvalidOverrideValue { .. } => {
            return ReconcileError::invalid_spec(
                "InvalidConfigOverride",
                format!("role group {role_group:?}: zoo.cfg: {error}"),
            );
        }
    };
    ReconcileError::invalid_spec(reason, format!("spec.servers: {error}"))
}

fn resources(config: &ZookeeperConfig) -> Result<ServerResources, (&'static str, String)> {
    let resources = &config.resources;
    let or_default = |value: &Option<Quantity>, default: &str| {
        value
            .clone()
            .unwrap_or_else(|| Quantity(default.to_owned()))
    };
    let parse = |field: &str, quantity: &Quantity| {
        parse_milli(&quantity.0)
            .map_err(|error| ("InvalidQuantity", format!("resources.{field}: {error}")))
    };
    let cpu_min = or_default(&resources.cpu.min, DEFAULT_CPU_MIN);
    let cpu_max = or_default(&resources.cpu.max, DEFAULT_CPU_MAX);
    if parse("cpu.min", &cpu_min)? > parse("cpu.max", &cpu_max)? {
        return Err((
            "InvalidCpuRange",
            format!(
                "resources.cpu.min ({}) exceeds resources.cpu.max ({})",
                cpu_min.0, cpu_max.0
            ),
        ));
    }
    let memory_limit = or_default(&resources.memory.limit, DEFAULT_MEMORY_LIMIT);
    let memory_bytes = parse("memory.limit", &memory_limit)? / 1000;
    if memory_bytes < u128::from(MIN_MEMORY_LIMIT_MIB * MIB) {
        return Err((
            "MemoryLimitTooLow",
            format!(
                "resources.memory.limit ({}) is below the minimum of {MIN_MEMORY_LIMIT_MIB}Mi",
                memory_limit.0
            ),
        ));
    }
    let storage_capacity = or_default(&resources.storage.data.capacity, DEFAULT_STORAGE_CAPACITY);
    if parse("storage.data.capacity", &storage_capacity)? < 1000 {
        return Err((
            "InvalidStorageCapacity",
            format!(
                "resources.storage.data.capacity ({}) must be larger than zero",
                storage_capacity.0
            ),
        ));
    }
    // The API server stores quantities in canonical form; applying any other
    // spelling would rewrite the StatefulSet on every reconcile.
    let in_canonical_form = |field: &str, quantity: Quantity| {
        canonical(&quantity.0)
            .map(Quantity)
            .map_err(|error| ("InvalidQuantity", format!("resources.{field}: {error}")))
    };
    Ok(ServerResources {
        cpu_min: in_canonical_form("cpu.min", cpu_min)?,
        cpu_max: in_canonical_form("cpu.max", cpu_max)?,
        memory_limit: in_canonical_form("memory.limit", memory_limit)?,
        heap_mib: u64::try_from(
            memory_bytes * u128::from(HEAP_PERCENT_OF_MEMORY) / 100 / u128::from(MIB),
        )
        .unwrap_or(u64::MAX),
        storage_capacity: in_canonical_form("storage.data.capacity", storage_capacity)?,
        storage_class: resources.storage.data.storage_class.clone(),
    })
}

/// `configOverrides."logback.xml"`: logger name to level, `ROOT` for the root logger.
fn logback_input(overrides: Option<&BTreeMap<String, String>>) -> Result<LogbackInput, String> {
    let mut input = LogbackInput::default();
    for (logger, level) in overrides.into_iter().flatten() {
        let level = parse_level(level).ok_or_else(|| {
            format!(
                "logback.xml: logger {logger:?} has level {level:?}; use one of TRACE, DEBUG, \
                 INFO, WARN, ERROR or OFF"
            )
        })?;
        if logger == ROOT_LOGGER_KEY {
            input.root_level = level;
        } else {
            input.loggers.insert(logger.clone(), level);
        }
    }
    Ok(input)
}

fn parse_level(level: &str) -> Option<LogLevel> {
    match level.trim().to_ascii_uppercase().as_str() {
        "TRACE" => Some(LogLevel::Trace),
        "DEBUG" => Some(LogLevel::Debug),
        "INFO" => Some(LogLevel::Info),
        "WARN" => Some(LogLevel::Warn),
        "ERROR" => Some(LogLevel::Error),
        "OFF" => Some(LogLevel::Off),
        _ => None,
    }
}
