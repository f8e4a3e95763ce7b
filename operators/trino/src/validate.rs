//! Validation: a `TrinoCluster` and the `TrinoCatalog`s it selects to a
//! [`ValidatedCluster`], with every default applied, every rule checked and every
//! file rendered.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use strata_model::duration::parse_seconds;
use strata_model::identity::{
    ClusterIdentity, IdentityError, Product, RoleGroupIdentity, check_cluster_domain,
};
use strata_model::image::ResolvedImage;
use strata_model::labels::RecommendedLabels;
use strata_model::merge::defaulted;
use strata_model::names::{ClusterName, RoleGroupRef, RoleRef};
use strata_model::pdb::PdbConfig;
use strata_model::resources::{HeapRule, ValidatedResources};
use strata_model::role::{GenericRoleConfig, MergedRoleGroup, Role};
use strata_operator::error::ReconcileError;
use strata_status::{Reason, SpecWarning};

use crate::build::container::POD_NAME_ENV;
use crate::config::catalog::{CATALOG_VARIABLE_PREFIX, ValidatedCatalog};
use crate::config::data_size::{bytes, trino_data_size};
use crate::config::server::{
    self, ACCESS_CONTROL_PROPERTIES, ACCESS_CONTROL_RULES, CONFIG_PROPERTIES, HTTP_PORT,
    JVM_CONFIG, LOG_PROPERTIES, NODE_PROPERTIES, NodeSettings, RESERVED_CONFIG_PROPERTIES,
    RESERVED_JVM_OPTIONS, RESERVED_NODE_PROPERTIES, SHARED_SECRET_ENV,
};
use crate::crd::config::{
    DEFAULT_COORDINATOR_GRACEFUL_SHUTDOWN_TIMEOUT, DEFAULT_SHUTDOWN_GRACE_PERIOD,
    DEFAULT_WORKER_GRACEFUL_SHUTDOWN_TIMEOUT,
};
use crate::crd::{
    APP_NAME, COORDINATOR_ROLE, DEFAULT_PRODUCT_VERSION, OPERATOR_NAME, TrinoCatalog, TrinoCluster,
    TrinoConfig, TrinoConfigOverrides, UPSTREAM_IMAGE_REPOSITORY, WORKER_ROLE,
};
pub use strata_model::identity::DEFAULT_CLUSTER_DOMAIN;

/// Smallest memory limit accepted: Trino needs about 1 GiB of heap to start.
pub const MIN_MEMORY_LIMIT_MIB: u64 = 1280;
/// Share of the heap Trino keeps free for allocations it does not track
/// (`memory.heap-headroom-per-node`, 30% by default).
pub const HEAP_HEADROOM_PERCENT: u128 = 30;
/// Seconds added to a worker's drain time for the preStop request and the JVM's exit.
pub const SHUTDOWN_MARGIN_SECONDS: i64 = 15;
/// Accepted `heapPercent` range.
pub const HEAP_PERCENT_RANGE: std::ops::RangeInclusive<u8> = 50..=90;

/// The two roles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TrinoRole {
    /// The one coordinator.
    Coordinator,
    /// The workers.
    Worker,
}

impl TrinoRole {
    /// The role's name in object names and labels.
    pub fn name(self) -> &'static str {
        match self {
            Self::Coordinator => COORDINATOR_ROLE,
            Self::Worker => WORKER_ROLE,
        }
    }

    /// The role's field in the spec.
    pub fn field(self) -> &'static str {
        match self {
            Self::Coordinator => "coordinators",
            Self::Worker => "workers",
        }
    }
}

/// A `TrinoCluster` with every default applied and every rule checked.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ValidatedCluster {
    /// The cluster's name.
    pub name: ClusterName,
    /// Its namespace.
    pub namespace: String,
    /// The image.
    pub image: ResolvedImage,
    /// Labels of cluster-wide objects.
    pub cluster_labels: RecommendedLabels,
    /// The catalogs every node serves, sorted by name.
    pub catalogs: Vec<ValidatedCatalog>,
    /// Coordinators, then workers.
    pub roles: Vec<ValidatedRole>,
    /// What validation warns about.
    pub warnings: Vec<SpecWarning>,
}

/// One role, checked.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ValidatedRole {
    /// Which role.
    pub role: TrinoRole,
    /// `<cluster>-<role>`.
    pub name: RoleRef,
    /// Labels of role-wide objects.
    pub labels: RecommendedLabels,
    /// The PDB settings.
    pub pdb: PdbConfig,
    /// The role groups, sorted by name.
    pub groups: Vec<ValidatedRoleGroup>,
}

impl ValidatedRole {
    /// Replicas over all role groups.
    pub fn replicas(&self) -> u16 {
        self.groups.iter().map(|group| group.replicas).sum()
    }
}

/// One role group, checked, with its files rendered.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ValidatedRoleGroup {
    /// Names of its StatefulSet, ConfigMap and headless Service.
    pub name: RoleGroupRef,
    /// Labels of its objects and pods.
    pub labels: RecommendedLabels,
    /// Replicas.
    pub replicas: u16,
    /// CPU, memory and heap.
    pub resources: ValidatedResources,
    /// `terminationGracePeriodSeconds`.
    pub termination_grace_period_seconds: i64,
    /// Whether the pods drain through the preStop hook (workers).
    pub graceful_shutdown: bool,
    /// The files under `/etc/trino`, by file name.
    pub files: BTreeMap<String, String>,
    /// Environment variables for the Trino container; they win over the operator's.
    pub env_overrides: BTreeMap<String, String>,
    /// Pod template parts merged last.
    pub pod_overrides: PodTemplateSpec,
    /// What validation warns about in this role group.
    pub warnings: Vec<SpecWarning>,
}

impl ValidatedCluster {
    /// Validates `cluster` with the catalogs its selector picked.
    pub fn new(
        cluster: &TrinoCluster,
        catalogs: &[TrinoCatalog],
        cluster_domain: &str,
    ) -> Result<Self, ReconcileError> {
        let identity = ClusterIdentity::new(PRODUCT, &cluster.metadata, &cluster.spec.image)?;
        check_cluster_domain(cluster_domain)?;
        check_selector(cluster.spec.cluster_config.catalog_label_selector.as_ref())?;
        let catalogs = validate_catalogs(catalogs)?;
        let coordinator_service = coordinator_service_name(identity.name.as_str());
        let discovery_uri = format!(
            "http://{coordinator_service}.{}.svc.{cluster_domain}:{HTTP_PORT}",
            identity.namespace
        );
        let environment = identity.name.as_str().replace('-', "_");
        let mut roles = Vec::new();
        for (role, spec) in [
            (TrinoRole::Coordinator, &cluster.spec.coordinators),
            (TrinoRole::Worker, &cluster.spec.workers),
        ] {
            roles.push(validate_role(
                &identity,
                role,
                spec,
                &discovery_uri,
                &environment,
            )?);
        }
        let coordinators = roles[0].replicas();
        if coordinators != 1 {
            return Err(ReconcileError::invalid_spec(
                "InvalidCoordinatorReplicas",
                format!(
                    "spec.coordinators has {coordinators} replicas over all role groups; \
                     Trino runs exactly one coordinator (it has no coordinator high \
                     availability), so set one role group to replicas: 1"
                ),
            ));
        }
        let mut warnings: Vec<SpecWarning> = roles
            .iter()
            .flat_map(|role| &role.groups)
            .flat_map(|group| group.warnings.clone())
            .collect();
        if roles[1].replicas() == 0 {
            warnings.push(SpecWarning {
                reason: Reason::new("NoWorkers").unwrap_or(Reason::AS_EXPECTED),
                message: "spec.workers has 0 replicas: the coordinator does not run \
                          queries itself (node-scheduler.include-coordinator=false), so \
                          every query waits for a worker"
                    .to_owned(),
            });
        }
        let ClusterIdentity {
            name,
            namespace,
            image,
            labels: cluster_labels,
        } = identity;
        Ok(Self {
            name,
            namespace,
            image,
            cluster_labels,
            catalogs,
            roles,
            warnings,
        })
    }

    /// The role's model.
    pub fn role(&self, role: TrinoRole) -> Option<&ValidatedRole> {
        self.roles.iter().find(|validated| validated.role == role)
    }

    /// `<cluster>-coordinator`: the coordinator Service's name.
    pub fn coordinator_service(&self) -> String {
        coordinator_service_name(self.name.as_str())
    }

    /// The catalog names, sorted: `status.catalogs`.
    pub fn catalog_names(&self) -> Vec<String> {
        self.catalogs
            .iter()
            .map(|catalog| catalog.name.clone())
            .collect()
    }
}

/// Refuses a catalog selector the API server would refuse in a Deployment: an
/// unknown operator, `In`/`NotIn` without values, `Exists`/`DoesNotExist` with some.
/// Such a selector would match nothing and silently drop every catalog.
fn check_selector(
    selector: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
) -> Result<(), ReconcileError> {
    for expression in selector
        .and_then(|selector| selector.match_expressions.as_ref())
        .into_iter()
        .flatten()
    {
        let has_values = expression
            .values
            .as_ref()
            .is_some_and(|values| !values.is_empty());
        let valid = match expression.operator.as_str() {
            "In" | "NotIn" => has_values,
            "Exists" | "DoesNotExist" => !has_values,
            _ => false,
        };
        if !valid {
            return Err(ReconcileError::invalid_spec(
                "InvalidCatalogSelector",
                format!(
                    "clusterConfig.catalogLabelSelector: the expression on {:?} with operator \
                     {:?} is invalid: the operators are In and NotIn (with values) and Exists \
                     and DoesNotExist (without)",
                    expression.key, expression.operator
                ),
            ));
        }
    }
    Ok(())
}

/// `<cluster>-coordinator`.
pub fn coordinator_service_name(cluster: &str) -> String {
    format!("{cluster}-{COORDINATOR_ROLE}")
}

/// Checks each catalog and that no two share a name or a variable prefix.
fn validate_catalogs(catalogs: &[TrinoCatalog]) -> Result<Vec<ValidatedCatalog>, ReconcileError> {
    let mut validated: Vec<ValidatedCatalog> = Vec::new();
    for catalog in catalogs {
        let checked = ValidatedCatalog::new(catalog).map_err(|error| {
            ReconcileError::invalid_spec(
                "InvalidCatalog",
                format!(
                    "the TrinoCatalog {} is invalid ({}): {}",
                    kube::ResourceExt::name_any(catalog),
                    error.reason(),
                    error.message()
                ),
            )
        })?;
        let prefix = |name: &str| name.replace('-', "_");
        if let Some(other) = validated
            .iter()
            .find(|other| prefix(&other.name) == prefix(&checked.name))
        {
            return Err(ReconcileError::invalid_spec(
                "DuplicateCatalogName",
                if other.name == checked.name {
                    format!(
                        "the TrinoCatalogs {} and {} both name the catalog {}; a cluster \
                         serves each name once, so rename one (spec.catalogName) or change \
                         its labels",
                        other.object_name, checked.object_name, checked.name
                    )
                } else {
                    format!(
                        "the catalogs {} ({}) and {} ({}) differ only in '-' and '_', so \
                         their environment variables would collide; rename one",
                        other.name, other.object_name, checked.name, checked.object_name
                    )
                },
            ));
        }
        validated.push(checked);
    }
    let mut owners: BTreeMap<&str, &str> = BTreeMap::new();
    for catalog in &validated {
        for variable in &catalog.variables {
            if let Some(other) = owners.insert(&variable.variable, &catalog.object_name)
                && other != catalog.object_name
            {
                return Err(ReconcileError::invalid_spec(
                    "DuplicateCatalogName",
                    format!(
                        "the TrinoCatalogs {other} and {} would both set the environment \
                         variable {}; rename one catalog (spec.catalogName)",
                        catalog.object_name, variable.variable
                    ),
                ));
            }
        }
    }
    validated.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(validated)
}

fn validate_role(
    identity: &ClusterIdentity,
    role: TrinoRole,
    spec: &Role<TrinoConfig, GenericRoleConfig, TrinoConfigOverrides>,
    discovery_uri: &str,
    environment: &str,
) -> Result<ValidatedRole, ReconcileError> {
    let role_identity = identity.role(role.name())?;
    if spec.role_groups.is_empty() {
        return Err(IdentityError::NoRoleGroups {
            role: role.field().to_owned(),
        }
        .into());
    }
    let defaults = TrinoConfig::product_defaults(match role {
        TrinoRole::Coordinator => DEFAULT_COORDINATOR_GRACEFUL_SHUTDOWN_TIMEOUT,
        TrinoRole::Worker => DEFAULT_WORKER_GRACEFUL_SHUTDOWN_TIMEOUT,
    });
    let groups = spec
        .merged_role_groups(&defaults)
        .into_values()
        .map(|merged| {
            let RoleGroupIdentity { name, labels } =
                identity.role_group(&role_identity, &merged.name)?;
            validate_role_group(role, &merged, discovery_uri, environment).map(|parts| {
                ValidatedRoleGroup {
                    name,
                    labels,
                    replicas: merged.replicas,
                    resources: parts.resources,
                    termination_grace_period_seconds: parts.termination_grace_period_seconds,
                    graceful_shutdown: role == TrinoRole::Worker,
                    files: parts.files,
                    env_overrides: merged.env_overrides.clone(),
                    pod_overrides: merged.pod_overrides.clone(),
                    warnings: parts.warnings,
                }
            })
        })
        .collect::<Result<Vec<_>, ReconcileError>>()?;
    Ok(ValidatedRole {
        role,
        name: role_identity.name,
        labels: role_identity.labels,
        pdb: spec.role_config.pod_disruption_budget.clone(),
        groups,
    })
}

struct GroupParts {
    warnings: Vec<SpecWarning>,
    resources: ValidatedResources,
    termination_grace_period_seconds: i64,
    files: BTreeMap<String, String>,
}

fn validate_role_group(
    role: TrinoRole,
    merged: &MergedRoleGroup<TrinoConfig, TrinoConfigOverrides>,
    discovery_uri: &str,
    environment: &str,
) -> Result<GroupParts, ReconcileError> {
    let field = format!("{}.roleGroups.{}", role.field(), merged.name);
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
    let resources = config
        .resources
        .validate(HeapRule {
            heap_percent: u64::from(heap_percent),
            min_memory_mib: MIN_MEMORY_LIMIT_MIB,
        })
        .map_err(|error| problem(error.reason(), error.to_string()))?;
    let query_max_memory_per_node = config
        .query_max_memory_per_node
        .as_ref()
        .map(|size| check_per_node_memory(size, resources.heap_mib))
        .transpose()
        .map_err(|(reason, message)| problem(reason, message))?;
    let query_max_memory = match role {
        TrinoRole::Coordinator => config
            .query_max_memory
            .as_ref()
            .map(|size| {
                trino_data_size(size).map_err(|error| {
                    problem("InvalidQueryMemory", format!("queryMaxMemory: {error}"))
                })
            })
            .transpose()?,
        TrinoRole::Worker => None,
    };
    let seconds = |name: &'static str, value: &Option<String>| -> Result<i64, ReconcileError> {
        parse_seconds(&defaulted(name, value)?)
            .map_err(|error| problem("InvalidDuration", format!("{name}: {error}")))
    };
    let timeout = seconds("gracefulShutdownTimeout", &config.graceful_shutdown_timeout)?;
    let (grace, termination) = match role {
        TrinoRole::Coordinator => (None, timeout),
        TrinoRole::Worker => {
            let grace = seconds("shutdownGracePeriod", &config.shutdown_grace_period)?;
            (Some(grace), worker_termination_grace_period(grace, timeout))
        }
    };
    let overrides = &merged.config_overrides;
    check_overrides(overrides).map_err(|(reason, message)| problem(reason, message))?;
    if let Some(variable) = merged
        .env_overrides
        .keys()
        .find(|name| reserved_variable(name))
    {
        return Err(problem(
            "ReservedEnvOverride",
            format!(
                "envOverrides: {variable} is set by the operator (the node id, the shared \
                 secret or a catalog value); it is not overridable"
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
        heap_mib: resources.heap_mib,
        query_max_memory,
        query_max_memory_per_node,
        shutdown_grace_period_seconds: grace,
    };
    let files = BTreeMap::from([
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
        (
            ACCESS_CONTROL_RULES.to_owned(),
            server::access_control_rules(),
        ),
    ]);
    Ok(GroupParts {
        warnings,
        resources,
        termination_grace_period_seconds: termination,
        files,
    })
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

/// `queryMaxMemoryPerNode` as a Trino size, if it fits in the heap with Trino's
/// headroom; otherwise why not.
fn check_per_node_memory(
    size: &k8s_openapi::apimachinery::pkg::api::resource::Quantity,
    heap_mib: u64,
) -> Result<String, (&'static str, String)> {
    let invalid = |error: strata_model::quantity::QuantityError| {
        (
            "InvalidQueryMemory",
            format!("queryMaxMemoryPerNode: {error}"),
        )
    };
    let requested = bytes(size).map_err(invalid)?;
    let heap = u128::from(heap_mib) << 20;
    let allowed = heap * (100 - HEAP_HEADROOM_PERCENT) / 100;
    if requested > allowed {
        return Err((
            "QueryMemoryExceedsHeap",
            format!(
                "queryMaxMemoryPerNode {} is more than the heap allows: the heap is {heap_mib} \
                 MiB and Trino keeps {HEAP_HEADROOM_PERCENT}% of it as headroom, leaving {} MiB; \
                 lower queryMaxMemoryPerNode or raise resources.memory.limit or heapPercent",
                size.0,
                allowed >> 20
            ),
        ));
    }
    trino_data_size(size).map_err(invalid)
}

/// Refuses overrides with line breaks and overrides of keys the operator owns.
fn check_overrides(overrides: &TrinoConfigOverrides) -> Result<(), (&'static str, String)> {
    for (file, entries) in [
        (CONFIG_PROPERTIES, &overrides.config_properties),
        (NODE_PROPERTIES, &overrides.node_properties),
        (JVM_CONFIG, &overrides.jvm_config),
        (LOG_PROPERTIES, &overrides.log_properties),
    ] {
        for (key, value) in entries {
            if key.trim().is_empty() || [key, value].iter().any(|text| text.contains(['\n', '\r']))
            {
                return Err((
                    "InvalidConfigOverride",
                    format!(
                        "configOverrides.{file}: {key:?} must be a non-empty single-line key \
                         with a single-line value"
                    ),
                ));
            }
            if let Some(instead) = reserved(file, key) {
                return Err((
                    "ReservedConfigOverride",
                    format!(
                        "configOverrides.{file}: {key} is set by the operator{}; it is not \
                         overridable",
                        if instead.is_empty() {
                            String::new()
                        } else {
                            format!(" from {instead}")
                        }
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Whether the operator owns the environment variable `name`: the node id, the shared
/// secret and every catalog value.
fn reserved_variable(name: &str) -> bool {
    name == POD_NAME_ENV || name == SHARED_SECRET_ENV || name.starts_with(CATALOG_VARIABLE_PREFIX)
}

/// Where the spec sets `key` of `file` instead, when the operator owns it.
fn reserved(file: &str, key: &str) -> Option<&'static str> {
    match file {
        CONFIG_PROPERTIES => RESERVED_CONFIG_PROPERTIES
            .iter()
            .find(|(reserved, _)| *reserved == key)
            .map(|(_, instead)| *instead),
        NODE_PROPERTIES => RESERVED_NODE_PROPERTIES.contains(&key).then_some(""),
        JVM_CONFIG => {
            let property = key
                .strip_prefix("-D")
                .map(|rest| rest.split('=').next().unwrap_or(rest));
            match property {
                Some(property) => reserved(CONFIG_PROPERTIES, property)
                    .or_else(|| reserved(NODE_PROPERTIES, property)),
                None => RESERVED_JVM_OPTIONS
                    .iter()
                    .any(|option| key.starts_with(option))
                    .then_some("resources.memory.limit and heapPercent"),
            }
        }
        _ => None,
    }
}

const PRODUCT: Product = Product {
    kind: "TrinoCluster",
    app_name: APP_NAME,
    operator_name: OPERATOR_NAME,
    repository: UPSTREAM_IMAGE_REPOSITORY,
    default_version: DEFAULT_PRODUCT_VERSION,
};

#[cfg(test)]
pub(crate) mod tests;
