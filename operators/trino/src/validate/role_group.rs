//! One role group's settings checked and its files rendered: the heap and query
//! memory, the shutdown timing, the overrides and the keys the operator owns.

use std::collections::BTreeMap;

use strata_model::duration::parse_seconds;
use strata_model::identity::{ClusterIdentity, RoleIdentity};
use strata_model::merge::defaulted;
use strata_model::resources::HeapRule;
use strata_model::role::MergedRoleGroup;
use strata_model::role_group::role_group_field;
use strata_operator::error::ReconcileError;
use strata_status::{Reason, SpecWarning};

use super::memory::{NodeMemory, check_node_memory};
use super::{
    HEAP_PERCENT_RANGE, MIN_MEMORY_LIMIT_MIB, NON_HEAP_RESERVE_MIB, NodeGroup,
    SHUTDOWN_MARGIN_SECONDS, TrinoRole, ValidatedRoleGroup, direct_memory_mib, max_heap_mib,
};
use crate::build::container::POD_NAME_ENV;
use crate::config::catalog::CATALOG_VARIABLE_PREFIX;
use crate::config::data_size::{bytes, trino_data_size};
use crate::config::security::SecuritySettings;
use crate::config::server::{
    self, ACCESS_CONTROL_PROPERTIES, CONFIG_PROPERTIES, JVM_CONFIG, LOG_PROPERTIES,
    NODE_PROPERTIES, NodeSettings, RESERVED_CONFIG_PROPERTIES, RESERVED_JVM_OPTIONS,
    RESERVED_NODE_PROPERTIES, SHARED_SECRET_ENV,
};
use crate::crd::config::DEFAULT_SHUTDOWN_GRACE_PERIOD;
use crate::crd::{TrinoConfig, TrinoConfigOverrides};
use strata_model::files::overrides::{OverrideError, check};

/// Checks one merged role group of `role` and renders its files.
pub(super) fn validate_role_group(
    identity: &ClusterIdentity,
    role_identity: &RoleIdentity,
    role: TrinoRole,
    merged: &MergedRoleGroup<TrinoConfig, TrinoConfigOverrides>,
    discovery_uri: &str,
    environment: &str,
    security: &SecuritySettings,
) -> Result<ValidatedRoleGroup, ReconcileError> {
    let field = role_group_field(role.field(), &merged.name);
    let problem = |reason: &str, message: String| {
        ReconcileError::invalid_spec(reason, format!("{field}: {message}"))
    };
    let config = &merged.config;
    let heap_percent = defaulted("heapPercent", &config.heap_percent)?;
    if !HEAP_PERCENT_RANGE.contains(&heap_percent) {
        return Err(problem(
            "InvalidHeapPercent",
            format!(
                "heapPercent is {heap_percent}; it must be between {} and {}",
                HEAP_PERCENT_RANGE.start(),
                HEAP_PERCENT_RANGE.end()
            ),
        ));
    }
    let mut group = strata_model::role_group::ValidatedRoleGroup::check(
        identity,
        role_identity,
        role.field(),
        merged,
        HeapRule {
            heap_percent: u64::from(heap_percent),
            min_memory_mib: MIN_MEMORY_LIMIT_MIB,
            non_heap_reserve_mib: NON_HEAP_RESERVE_MIB,
        },
    )?;
    let limit_mib = u64::try_from(bytes(&group.resources.memory_limit).unwrap_or_default() >> 20)
        .unwrap_or(u64::MAX);
    // A large heapPercent near the reserve leaves the GC's share and the direct
    // memory floor too little: the heap then gives way.
    group.resources.heap_mib = group.resources.heap_mib.min(max_heap_mib(limit_mib));
    let heap_mib = group.resources.heap_mib;
    let memory_size =
        |field: &str, size: &k8s_openapi::apimachinery::pkg::api::resource::Quantity| {
            bytes(size)
                .and_then(|count| trino_data_size(size).map(|text| (count, text)))
                .map_err(|error| problem("InvalidQueryMemory", format!("{field}: {error}")))
        };
    let per_node = config
        .query_max_memory_per_node
        .as_ref()
        .map(|size| memory_size("queryMaxMemoryPerNode", size))
        .transpose()?;
    let query_max = match role {
        TrinoRole::Coordinator => config
            .query_max_memory
            .as_ref()
            .map(|size| memory_size("queryMaxMemory", size))
            .transpose()?,
        TrinoRole::Worker => None,
    };
    // A worker's pod outlives `gracefulShutdownTimeout`: it drains first.
    let grace = match role {
        TrinoRole::Coordinator => None,
        TrinoRole::Worker => {
            let value = defaulted("shutdownGracePeriod", &config.shutdown_grace_period)?;
            let grace = parse_seconds(&value).map_err(|error| {
                problem(
                    "InvalidShutdownGracePeriod",
                    format!("shutdownGracePeriod: {error}"),
                )
            })?;
            group.termination_grace_period_seconds =
                worker_termination_grace_period(grace, group.termination_grace_period_seconds);
            Some(grace)
        }
    };
    let overrides = &merged.config_overrides;
    check_overrides(overrides).map_err(|error| problem(error.reason(), error.to_string()))?;
    check_node_memory(
        NodeMemory {
            heap: u128::from(heap_mib) << 20,
            per_node: per_node.as_ref().map(|(count, _)| *count),
            query_max_memory: query_max.as_ref().map(|(count, _)| *count),
            coordinator: role == TrinoRole::Coordinator,
        },
        &overrides.config_properties,
    )
    .map_err(|(reason, message)| problem(reason, message))?;
    if let Some(variable) = merged
        .env_overrides
        .keys()
        .find(|name| reserved_variable(name))
    {
        return Err(problem(
            "ReservedEnvOverride",
            format!(
                "envOverrides: {variable} is set by the operator (the node id, the shared \
                 secret, a catalog value or a variable of its scripts); it is not \
                 overridable"
            ),
        ));
    }
    let mut warnings = Vec::new();
    let ignored = match role {
        TrinoRole::Coordinator => config
            .shutdown_grace_period
            .as_ref()
            .filter(|value| value.as_str() != DEFAULT_SHUTDOWN_GRACE_PERIOD)
            .map(|_| "shutdownGracePeriod (coordinators are not drained)"),
        TrinoRole::Worker => config
            .query_max_memory
            .as_ref()
            .map(|_| "queryMaxMemory (a coordinator setting)"),
    };
    if let Some(ignored) = ignored {
        warnings.push(SpecWarning {
            reason: Reason::new("IgnoredSetting").unwrap_or(Reason::AS_EXPECTED),
            message: format!("{field}: {ignored} has no effect and is not written"),
        });
    }
    let settings = NodeSettings {
        coordinator: role == TrinoRole::Coordinator,
        discovery_uri: discovery_uri.to_owned(),
        environment: environment.to_owned(),
        heap_mib,
        direct_memory_mib: direct_memory_mib(limit_mib, heap_mib),
        query_max_memory: query_max.map(|(_, text)| text),
        query_max_memory_per_node: per_node.map(|(_, text)| text),
        shutdown_grace_period_seconds: grace,
        security: security.clone(),
    };
    let mut files = BTreeMap::from([
        (
            CONFIG_PROPERTIES.to_owned(),
            server::config_properties(&settings, &overrides.config_properties),
        ),
        (
            NODE_PROPERTIES.to_owned(),
            server::node_properties(&settings, &overrides.node_properties),
        ),
        (
            JVM_CONFIG.to_owned(),
            server::jvm_config(&settings, &overrides.jvm_config),
        ),
        (
            LOG_PROPERTIES.to_owned(),
            server::log_properties(&overrides.log_properties),
        ),
        (
            ACCESS_CONTROL_PROPERTIES.to_owned(),
            server::access_control_properties(),
        ),
    ]);
    files.extend(server::authenticator_files(security));
    Ok(group.with(NodeGroup {
        graceful_shutdown: role == TrinoRole::Worker,
        files,
        warnings,
    }))
}

/// `terminationGracePeriodSeconds` of a worker: the preStop hook waits for
/// `shutdown.grace-period`, the running tasks (at most `gracefulShutdownTimeout`),
/// the grace period again and the JVM's exit, and the kubelet kills the pod only
/// after all of that: `2 × grace + timeout + margin`.
pub fn worker_termination_grace_period(grace_seconds: i64, timeout_seconds: i64) -> i64 {
    grace_seconds
        .saturating_mul(2)
        .saturating_add(timeout_seconds)
        .saturating_add(SHUTDOWN_MARGIN_SECONDS)
}

/// Refuses overrides with line breaks and overrides of keys the operator owns.
fn check_overrides(overrides: &TrinoConfigOverrides) -> Result<(), OverrideError> {
    check(
        CONFIG_PROPERTIES,
        &overrides.config_properties,
        &RESERVED_CONFIG_PROPERTIES,
    )?;
    check(
        NODE_PROPERTIES,
        &overrides.node_properties,
        &RESERVED_NODE_PROPERTIES,
    )?;
    check(LOG_PROPERTIES, &overrides.log_properties, &[])?;
    check(JVM_CONFIG, &overrides.jvm_config, &[])?;
    overrides
        .jvm_config
        .keys()
        .find_map(|option| reserved_jvm_option(option).map(|because| (option, because)))
        .map_or(Ok(()), |(option, because)| {
            Err(OverrideError::reserved(JVM_CONFIG, option, because))
        })
}

/// The prefix of the variables the operator's scripts read.
const OPERATOR_VARIABLE_PREFIX: &str = "STRATA_";

/// Whether the operator owns the environment variable `name`: the node id, the shared
/// secret, every catalog value and the scripts' variables.
fn reserved_variable(name: &str) -> bool {
    name == POD_NAME_ENV
        || name == SHARED_SECRET_ENV
        || name.starts_with(CATALOG_VARIABLE_PREFIX)
        || name.starts_with(OPERATOR_VARIABLE_PREFIX)
}

/// Why the operator owns a `jvm.config` option: a heap flag, or a system property
/// that would win over an owned key of `config.properties` or `node.properties`.
fn reserved_jvm_option(option: &str) -> Option<&'static str> {
    match option.strip_prefix("-D") {
        Some(rest) => {
            let property = rest.split('=').next().unwrap_or(rest);
            RESERVED_CONFIG_PROPERTIES
                .iter()
                .chain(&RESERVED_NODE_PROPERTIES)
                .find(|owned| owned.owns(property))
                .map(|owned| owned.because)
        }
        None => RESERVED_JVM_OPTIONS
            .iter()
            .any(|flag| option.starts_with(flag))
            .then_some("the heap follows resources.memory.limit and heapPercent"),
    }
}
