//! Validation: a `TrinoCluster` and the `TrinoCatalog`s it selects to a
//! [`ValidatedCluster`], with every default applied, every rule checked and every
//! file rendered.

use std::collections::BTreeMap;

use strata_model::exposure::{INVALID_SERVICE_EXPOSURE, ServiceExposure};
use strata_model::identity::{ClusterIdentity, Product, check_cluster_domain};
use strata_model::role::{GenericRoleConfig, Role};
use strata_operator::error::ReconcileError;
use strata_operator::tls::CertificateSource;
use strata_operator::tls::roll_budget::{RollCost, roll_budget_warning};
use strata_status::{Reason, SpecWarning};

use crate::config::catalog::{
    ICEBERG_BUNDLED_JDBC_DRIVER, ICEBERG_JDBC_DRIVER_PROPERTY, ValidatedCatalog,
};
use crate::crd::config::{
    DEFAULT_COORDINATOR_GRACEFUL_SHUTDOWN_TIMEOUT, DEFAULT_WORKER_GRACEFUL_SHUTDOWN_TIMEOUT,
};
use crate::crd::{
    APP_NAME, COORDINATOR_ROLE, DEFAULT_PRODUCT_VERSION, OPERATOR_NAME, TrinoCatalog, TrinoCluster,
    TrinoConfig, TrinoConfigOverrides, UPSTREAM_IMAGE_REPOSITORY, WORKER_ROLE,
};
pub use strata_model::identity::DEFAULT_CLUSTER_DOMAIN;

use self::role_group::validate_role_group;
pub use self::role_group::worker_termination_grace_period;
pub use self::security::ValidatedSecurity;
use crate::config::security::SecuritySettings;

mod memory;
mod role_group;
mod security;

/// Smallest memory limit accepted: with [`NON_HEAP_RESERVE_MIB`] left outside it, a
/// 768 MiB heap, enough for the `tpch` load of the real-server test.
pub const MIN_MEMORY_LIMIT_MIB: u64 = 1280;
/// What a Trino 483 JVM holds outside its heap, measured (issue 20, item 10) with
/// Native Memory Tracking on a worker after six concurrent `tpch.sf1` joins and
/// aggregations with a 1024 MiB heap: 280 MiB (metaspace and class space 114, GC 58,
/// code cache 40, threads 22, arenas 17, symbols 14, the rest 15), for a peak resident
/// set of 1310 MiB in a 1280 MiB limit, which a container would be OOM-killed for.
/// The heap therefore leaves at least this much: the measured [`FIXED_NON_HEAP_MIB`]
/// with room for the code cache to grow, and direct buffers. 448 MiB (an 832 MiB heap
/// at 1280 MiB) once peaked at 1153 MiB under the same load, 90 % of the limit: the
/// non-heap part had grown to 321 MiB, so 64 MiB more stay outside the heap.
pub const NON_HEAP_RESERVE_MIB: u64 = 512;
/// The part of the measured non-heap memory that does not grow with the heap.
pub const FIXED_NON_HEAP_MIB: u64 = 256;
/// The garbage collector's share of the heap, measured (58 MiB for 1024 MiB).
pub const GC_PERCENT_OF_HEAP: u64 = 6;
/// The least `-XX:MaxDirectMemorySize`, whatever is left.
pub const MIN_DIRECT_MEMORY_MIB: u64 = 64;

/// The largest heap whose garbage collector's share, the fixed non-heap memory and
/// the least direct memory still fit in `limit_mib`: above it (a `heapPercent` of 90
/// on 4Gi) the heap gives way, so that the parts never add up past the limit.
pub fn max_heap_mib(limit_mib: u64) -> u64 {
    limit_mib
        .saturating_sub(FIXED_NON_HEAP_MIB)
        .saturating_sub(MIN_DIRECT_MEMORY_MIB)
        * 100
        / (100 + GC_PERCENT_OF_HEAP)
}

/// `-XX:MaxDirectMemorySize` for a node: what the limit leaves after the heap, its
/// garbage collector's share and the fixed non-heap memory, at least
/// [`MIN_DIRECT_MEMORY_MIB`]. Without it the JVM allows as much direct memory as the
/// heap, which no container limit holds.
pub fn direct_memory_mib(limit_mib: u64, heap_mib: u64) -> u64 {
    limit_mib
        .saturating_sub(heap_mib)
        .saturating_sub(heap_mib * GC_PERCENT_OF_HEAP / 100)
        .saturating_sub(FIXED_NON_HEAP_MIB)
        .max(MIN_DIRECT_MEMORY_MIB)
}
/// Share of the heap Trino keeps free for allocations it does not track
/// (`memory.heap-headroom-per-node`, 30% by default).
pub const HEAP_HEADROOM_PERCENT: u128 = 30;
/// Seconds added to a worker's drain time for the preStop request (10 s at most), the
/// hook's polling, and the JVM's exit: after the second grace period, Trino stops its
/// lifecycle for up to 30 s before `System.exit` (`NodeStateManager` of 483).
pub const SHUTDOWN_MARGIN_SECONDS: i64 = 45;
/// Accepted `heapPercent` range.
pub const HEAP_PERCENT_RANGE: std::ops::RangeInclusive<u8> = 50..=90;

/// What a Trino pod's turn in a certificate roll costs besides its termination: the
/// scheduling, the JVM's start and the readiness probe of a Trino 483 node, 30 to 60 s
/// on a production machine. A worker's termination grace period holds its drain.
const ROLL_COST: RollCost = RollCost {
    start: std::time::Duration::from_secs(60),
    advice: "gracefulShutdownTimeout shorter (a worker's termination grace period holds \
             its drain of up to that long)",
};

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
    /// Who the cluster is: its name, its namespace (every built object's), the
    /// image every pod runs and the labels of cluster-wide objects.
    pub identity: ClusterIdentity,
    /// The catalogs every node serves, sorted by name.
    pub catalogs: Vec<ValidatedCatalog>,
    /// Coordinators, then workers.
    pub roles: Vec<ValidatedRole>,
    /// What validation warns about.
    pub warnings: Vec<SpecWarning>,
    /// TLS, authentication and authorization.
    pub security: ValidatedSecurity,
    /// The cluster's DNS domain, for the names certificates cover.
    pub cluster_domain: String,
    /// How the coordinator Service is exposed.
    pub service: ServiceExposure,
    /// The Ingress to the coordinator, if asked for.
    pub ingress: Option<strata_model::ingress::IngressExposure>,
    /// The HTTPRoute to the coordinator, if asked for.
    pub http_route: Option<strata_model::http_route::HttpRouteExposure>,
    /// The Prometheus Operator objects the cluster asks for.
    pub monitoring: strata_model::monitoring::Monitoring,
    /// The coordinator Service's external address, once a load balancer gave it one:
    /// set by the controller from the stored Service, so the certificates cover it.
    pub external_names: Vec<String>,
}

/// One role, checked.
pub type ValidatedRole = strata_model::identity::ValidatedRole<TrinoRole, ValidatedRoleGroup>;

/// A role group, checked: the settings every product shares and [`NodeGroup`].
pub type ValidatedRoleGroup = strata_model::role_group::ValidatedRoleGroup<NodeGroup>;

/// What only Trino's role groups have: the drain, the files and the warnings.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct NodeGroup {
    /// Whether the pods drain through the preStop hook (workers).
    pub graceful_shutdown: bool,
    /// The files under `/etc/trino`, by file name.
    pub files: BTreeMap<String, String>,
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
        if cluster.spec.image.custom.is_none() {
            check_stock_image_drivers(&catalogs)?;
        }
        let security = ValidatedSecurity::new(&cluster.spec.cluster_config)?;
        let service = cluster.spec.cluster_config.service.clone();
        service
            .check("spec.clusterConfig.service")
            .map_err(|message| ReconcileError::invalid_spec(INVALID_SERVICE_EXPOSURE, message))?;
        let ingress = cluster.spec.cluster_config.ingress.clone();
        let http_route = cluster.spec.cluster_config.http_route.clone();
        strata_operator::web_exposure::check(ingress.as_ref(), http_route.as_ref())?;
        let monitoring = cluster.spec.cluster_config.monitoring.clone();
        monitoring
            .check("spec.clusterConfig.monitoring")
            .map_err(|message| {
                ReconcileError::invalid_spec(strata_model::monitoring::INVALID_MONITORING, message)
            })?;
        let settings = security.settings();
        let discovery_uri = format!(
            "{}://{}.{}.svc.{cluster_domain}:{}",
            settings.scheme(),
            discovery_host(identity.name.as_str(), &cluster.spec.coordinators),
            identity.namespace,
            settings.port()
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
                &settings,
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
            .flat_map(|group| group.product.warnings.clone())
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
        if let Some(CertificateSource::Operator { lifetime }) = &security.tls {
            let groups: Vec<(u16, i64)> = roles
                .iter()
                .flat_map(|role| &role.groups)
                .map(|group| (group.replicas, group.termination_grace_period_seconds))
                .collect();
            warnings.extend(roll_budget_warning(*lifetime, &groups, ROLL_COST));
        }
        warnings.extend(security.plaintext_warning());
        warnings.extend(exposure_warnings(
            &security,
            &service,
            ingress.as_ref(),
            http_route.is_some(),
        ));
        Ok(Self {
            identity,
            catalogs,
            roles,
            warnings,
            security,
            cluster_domain: cluster_domain.to_owned(),
            service,
            ingress,
            http_route,
            monitoring,
            external_names: Vec::new(),
        })
    }

    /// The role's model.
    pub fn role(&self, role: TrinoRole) -> Option<&ValidatedRole> {
        self.roles.iter().find(|validated| validated.role == role)
    }

    /// `<cluster>-coordinator`: the coordinator Service's name.
    pub fn coordinator_service(&self) -> String {
        coordinator_service_name(self.identity.name.as_str())
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

/// The Service name `discovery.uri` goes through: the headless Service of the one
/// coordinator role group with replicas, which resolves to the coordinator pod whether
/// it is Ready or not. Through the readiness-gated client Service, a coordinator
/// failing its probe for 30 s (a long GC pause) would let every worker's announcement
/// expire (`AnnounceNodeInventory` of 483), and the coordinator would fail their
/// queries. While the spec does not name exactly one such group (which validation
/// refuses next), the client Service.
fn discovery_host(
    cluster: &str,
    coordinators: &Role<TrinoConfig, GenericRoleConfig, TrinoConfigOverrides>,
) -> String {
    let service = coordinator_service_name(cluster);
    let mut running = coordinators.role_groups.iter().filter(|(_, group)| {
        group
            .replicas
            .unwrap_or(strata_model::role::DEFAULT_REPLICAS)
            > 0
    });
    match (running.next(), running.next()) {
        (Some((name, _)), None) => format!("{service}-{name}"),
        _ => service,
    }
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

/// Refuses an Iceberg JDBC catalog whose driver the stock image does not ship: every
/// pod would exit at start with the driver's class not found. A custom image may carry
/// any driver, so the check applies only to the stock one.
fn check_stock_image_drivers(catalogs: &[ValidatedCatalog]) -> Result<(), ReconcileError> {
    for catalog in catalogs {
        if let Some(driver) = catalog.property(ICEBERG_JDBC_DRIVER_PROPERTY)
            && driver != ICEBERG_BUNDLED_JDBC_DRIVER
        {
            return Err(ReconcileError::invalid_spec(
                "JdbcDriverNotInImage",
                format!(
                    "the TrinoCatalog {} uses the JDBC driver {driver}, which the stock \
                     Trino image does not ship: its Iceberg plugin has only \
                     {ICEBERG_BUNDLED_JDBC_DRIVER}, so every pod would fail to start. Use \
                     PostgreSQL for the Iceberg catalog, or set spec.image.custom to an \
                     image that adds the driver to /usr/lib/trino/plugin/iceberg",
                    catalog.object_name
                ),
            ));
        }
    }
    Ok(())
}

fn validate_role(
    identity: &ClusterIdentity,
    role: TrinoRole,
    spec: &Role<TrinoConfig, GenericRoleConfig, TrinoConfigOverrides>,
    discovery_uri: &str,
    environment: &str,
    security: &SecuritySettings,
) -> Result<ValidatedRole, ReconcileError> {
    let role_identity = identity.role_with_groups(role.name(), role.field(), &spec.role_groups)?;
    let defaults = TrinoConfig::product_defaults(match role {
        TrinoRole::Coordinator => DEFAULT_COORDINATOR_GRACEFUL_SHUTDOWN_TIMEOUT,
        TrinoRole::Worker => DEFAULT_WORKER_GRACEFUL_SHUTDOWN_TIMEOUT,
    });
    let groups = spec
        .merged_role_groups(&defaults)
        .into_values()
        .map(|merged| {
            validate_role_group(
                identity,
                &role_identity,
                role,
                &merged,
                discovery_uri,
                environment,
                security,
            )
        })
        .collect::<Result<Vec<_>, ReconcileError>>()?;
    Ok(ValidatedRole::new(
        role,
        role_identity,
        spec.role_config.pod_disruption_budget.clone(),
        groups,
    ))
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

/// What the ways into the coordinator from outside the cluster cost, when they are
/// not secured (security review, findings 18 and 21):
/// - `TrinoUnauthenticated`: a node port, a load balancer without source ranges, an
///   Ingress or an HTTPRoute with no `authentication`: Trino then takes the user
///   name a client sends as given, so everyone there runs queries as anyone, and the
///   default rules let every user use every catalog;
/// - `IngressWithoutTls`: an Ingress without `tlsSecret` in front of an
///   authenticating Trino: passwords and bearer tokens cross the leg to the Ingress
///   controller in clear. (A Gateway's listener is the Gateway's; the operator cannot
///   see whether it serves HTTPS.)
fn exposure_warnings(
    security: &ValidatedSecurity,
    service: &ServiceExposure,
    ingress: Option<&strata_model::ingress::IngressExposure>,
    http_route: bool,
) -> Vec<SpecWarning> {
    let authenticated = !security.user_authenticators.is_empty() || security.oauth2.is_some();
    let mut ways_in = Vec::new();
    if let Some(open_to) = service.open_to() {
        ways_in.push(format!("a {} Service open to {open_to}", service.type_));
    }
    if ingress.is_some() {
        ways_in.push("an Ingress".to_owned());
    }
    if http_route {
        ways_in.push("an HTTPRoute".to_owned());
    }
    let mut warnings = Vec::new();
    if !authenticated && !ways_in.is_empty() {
        warnings.push(SpecWarning {
            reason: strata_status::reason!("TrinoUnauthenticated"),
            message: format!(
                "the coordinator is reachable from outside the cluster through {}, and \
                 clusterConfig.authentication is empty: Trino takes the user name a client \
                 sends as given, so anyone there runs queries as any user. Add a password, \
                 LDAP or OAuth2 authentication, or keep the coordinator inside the cluster",
                ways_in.join(" and ")
            ),
        });
    }
    if authenticated && ingress.is_some_and(|ingress| ingress.tls_secret.is_none()) {
        warnings.push(SpecWarning {
            reason: strata_status::reason!("IngressWithoutTls"),
            message: "clusterConfig.ingress has no tlsSecret, and the cluster authenticates \
                      its users: passwords and bearer tokens cross the leg to the Ingress \
                      controller in clear. Name a Secret with the host's certificate in \
                      tlsSecret"
                .to_owned(),
        });
    }
    warnings
}
