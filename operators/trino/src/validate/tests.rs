use pretty_assertions::assert_eq;
use rstest::rstest;
use serde_json::{Value, json};
use strata_operator::error::ReconcileError;

use super::*;
use crate::config::server::{CONFIG_PROPERTIES, JVM_CONFIG, LOG_PROPERTIES, NODE_PROPERTIES};

/// A cluster with one coordinator and two workers; `patch` replaces top-level spec keys.
pub(crate) fn cluster(patch: Value) -> TrinoCluster {
    let mut spec = json!({
        "clusterConfig": {"catalogLabelSelector": {"matchLabels": {"trino": "simple-trino"}}},
        "coordinators": {"roleGroups": {"default": {"replicas": 1}}},
        "workers": {"roleGroups": {"default": {"replicas": 2}}}
    });
    if let (Some(spec), Value::Object(patch)) = (spec.as_object_mut(), patch) {
        spec.extend(patch);
    }
    serde_json::from_value(json!({
        "apiVersion": "trino.strata.dev/v1alpha1",
        "kind": "TrinoCluster",
        "metadata": {"name": "simple-trino", "namespace": "default", "uid": "uid-1"},
        "spec": spec
    }))
    .unwrap_or_else(|error| unreachable!("the fixture is a valid TrinoCluster: {error}"))
}

/// A catalog named `name` with `spec`.
pub(crate) fn catalog(name: &str, spec: Value) -> TrinoCatalog {
    serde_json::from_value(json!({
        "apiVersion": "trino.strata.dev/v1alpha1",
        "kind": "TrinoCatalog",
        "metadata": {"name": name, "namespace": "default", "labels": {"trino": "simple-trino"}},
        "spec": spec
    }))
    .unwrap_or_else(|error| unreachable!("the fixture is a valid TrinoCatalog: {error}"))
}

pub(crate) fn validated(patch: Value) -> Result<ValidatedCluster, ReconcileError> {
    ValidatedCluster::new(&cluster(patch), &[], DEFAULT_CLUSTER_DOMAIN)
}

fn reason_of(result: Result<ValidatedCluster, ReconcileError>) -> String {
    match result {
        Ok(_) => "accepted".to_owned(),
        Err(error) => error.reason().to_owned(),
    }
}

fn group_file(cluster: &ValidatedCluster, role: TrinoRole, file: &str) -> String {
    cluster
        .role(role)
        .and_then(|role| role.groups.first())
        .and_then(|group| group.product.files.get(file))
        .cloned()
        .unwrap_or_default()
}

#[rstest]
#[case::one_coordinator(json!({"default": {"replicas": 1}}), "accepted")]
#[case::no_coordinator(json!({"default": {"replicas": 0}}), "InvalidCoordinatorReplicas")]
#[case::two_replicas(json!({"default": {"replicas": 2}}), "InvalidCoordinatorReplicas")]
#[case::two_role_groups(
    json!({"a": {"replicas": 1}, "b": {"replicas": 1}}),
    "InvalidCoordinatorReplicas"
)]
fn exactly_one_coordinator_runs(#[case] role_groups: Value, #[case] expected: &str) {
    assert_eq!(
        reason_of(validated(
            json!({"coordinators": {"roleGroups": role_groups}})
        )),
        expected
    );
}

/// The default memory limit (4Gi) at 80% gives a 3276 MiB heap; Trino keeps 30% of it
/// as headroom, so 2293 MiB are left for one query on one node.
#[rstest]
#[case::within_the_heap("2Gi", "accepted")]
#[case::just_below_the_limit("2293Mi", "accepted")]
#[case::just_above_the_limit("2294Mi", "QueryMemoryExceedsHeap")]
#[case::the_whole_heap("4Gi", "QueryMemoryExceedsHeap")]
#[case::not_a_quantity("lots", "InvalidQueryMemory")]
fn query_memory_per_node_must_fit_in_the_heap(#[case] size: &str, #[case] expected: &str) {
    let workers = json!({
        "config": {"queryMaxMemoryPerNode": size},
        "roleGroups": {"default": {"replicas": 2}}
    });
    assert_eq!(reason_of(validated(json!({"workers": workers}))), expected);
}

/// Issue 20, item 7: memory overrides that 483 refuses at start. With the default 4Gi
/// at 80 %, the heap is 3276 MiB and the default query memory per node 982 MiB.
#[rstest]
#[case::headroom_that_fits("memory.heap-headroom-per-node", "2000MB", "accepted")]
#[case::headroom_over_the_heap("memory.heap-headroom-per-node", "2500MB", "QueryMemoryExceedsHeap")]
#[case::headroom_not_a_size("memory.heap-headroom-per-node", "most", "InvalidConfigOverride")]
#[case::total_above_the_default_query_memory("query.max-total-memory", "40GB", "accepted")]
#[case::total_below_the_default_query_memory(
    "query.max-total-memory",
    "10GB",
    "InvalidQueryMemory"
)]
fn memory_overrides_483_refuses_are_refused_before_apply(
    #[case] key: &str,
    #[case] value: &str,
    #[case] expected: &str,
) {
    let coordinators = json!({
        "configOverrides": {"config.properties": {key: value}},
        "roleGroups": {"default": {"replicas": 1}}
    });
    assert_eq!(
        reason_of(validated(json!({"coordinators": coordinators}))),
        expected
    );
}

#[rstest]
#[case::a_timeout(json!({"gracefulShutdownTimeout": "soon"}), "InvalidGracefulShutdownTimeout")]
#[case::a_grace_period(json!({"shutdownGracePeriod": "soon"}), "InvalidShutdownGracePeriod")]
#[case::both_valid(json!({"shutdownGracePeriod": "1m", "gracefulShutdownTimeout": "10m"}), "accepted")]
fn each_shutdown_duration_has_its_own_reason(#[case] config: Value, #[case] expected: &str) {
    let workers = json!({"config": config, "roleGroups": {"default": {"replicas": 2}}});
    assert_eq!(reason_of(validated(json!({"workers": workers}))), expected);
}

#[rstest]
#[case::too_small(40, "InvalidHeapPercent")]
#[case::lowest(50, "accepted")]
#[case::highest(90, "accepted")]
#[case::too_large(95, "InvalidHeapPercent")]
fn heap_percent_is_bounded(#[case] percent: u8, #[case] expected: &str) {
    let workers = json!({
        "config": {"heapPercent": percent},
        "roleGroups": {"default": {"replicas": 2}}
    });
    assert_eq!(reason_of(validated(json!({"workers": workers}))), expected);
}

#[rstest]
#[case::coordinator_key("config.properties", "coordinator", "false", "ReservedConfigOverride")]
#[case::discovery(
    "config.properties",
    "discovery.uri",
    "http://x",
    "ReservedConfigOverride"
)]
#[case::typed_memory(
    "config.properties",
    "query.max-memory-per-node",
    "1GB",
    "ReservedConfigOverride"
)]
#[case::grace_period(
    "config.properties",
    "shutdown.grace-period",
    "1m",
    "ReservedConfigOverride"
)]
#[case::node_id("node.properties", "node.id", "x", "ReservedConfigOverride")]
#[case::heap("jvm.config", "-Xmx8g", "", "ReservedConfigOverride")]
#[case::heap_by_another_flag("jvm.config", "-XX:MaxHeapSize", "8g", "ReservedConfigOverride")]
#[case::reserved_property_as_system_property(
    "jvm.config",
    "-Ddiscovery.uri",
    "http://x",
    "ReservedConfigOverride"
)]
#[case::node_property_as_system_property("jvm.config", "-Dnode.id=x", "", "ReservedConfigOverride")]
#[case::ordinary_system_property("jvm.config", "-Dfoo", "bar", "accepted")]
#[case::line_break_in_value(
    "config.properties",
    "query.max-run-time",
    "1h\ncoordinator=false",
    "InvalidConfigOverride"
)]
#[case::line_break_in_key("log.properties", "io.trino\nx", "DEBUG", "InvalidConfigOverride")]
#[case::ordinary_key("config.properties", "query.max-run-time", "1h", "accepted")]
#[case::jvm_option("jvm.config", "-XX:+UseStringDeduplication", "", "accepted")]
#[case::logger("log.properties", "io.trino.server", "DEBUG", "accepted")]
fn overrides_are_checked(
    #[case] file: &str,
    #[case] key: &str,
    #[case] value: &str,
    #[case] expected: &str,
) {
    let workers = json!({
        "configOverrides": {file: {key: value}},
        "roleGroups": {"default": {"replicas": 2}}
    });
    assert_eq!(reason_of(validated(json!({"workers": workers}))), expected);
}

#[test]
fn an_override_wins_over_the_operators_value_and_is_written_after_it() -> Result<(), ReconcileError>
{
    let workers = json!({
        "configOverrides": {
            "config.properties": {"query.max-run-time": "1h"},
            "log.properties": {"io.trino": "WARN"},
            "jvm.config": {"-Dfoo": "bar", "-XX:+UseStringDeduplication": ""}
        },
        "roleGroups": {"default": {"replicas": 2}}
    });
    let cluster = validated(json!({"workers": workers}))?;
    assert!(
        group_file(&cluster, TrinoRole::Worker, CONFIG_PROPERTIES)
            .ends_with("query.max-run-time=1h\n")
    );
    assert_eq!(
        group_file(&cluster, TrinoRole::Worker, LOG_PROPERTIES),
        "io.trino=WARN\n"
    );
    let jvm = group_file(&cluster, TrinoRole::Worker, JVM_CONFIG);
    assert!(
        jvm.ends_with("-Dfoo=bar\n-XX:+UseStringDeduplication\n"),
        "{jvm}"
    );
    Ok(())
}

#[test]
fn coordinator_and_worker_files_differ_where_trino_needs_them_to() -> Result<(), ReconcileError> {
    let cluster = validated(json!({}))?;
    assert_eq!(
        group_file(&cluster, TrinoRole::Coordinator, CONFIG_PROPERTIES),
        "coordinator=true\n\
         discovery.uri=https://simple-trino-coordinator-default.default.svc.cluster.local:8443\n\
         internal-communication.shared-secret=${ENV:TRINO_INTERNAL_SHARED_SECRET}\n\
         access-control.config-files=/etc/trino/access-control.properties\n\
         http-server.http.enabled=false\n\
         http-server.https.enabled=true\n\
         http-server.https.port=8443\n\
         http-server.https.keystore.path=/strata/keystore/server.pem\n\
         internal-communication.https.required=true\n\
         internal-communication.https.truststore.path=/strata/tls/ca.crt\n\
         node-scheduler.include-coordinator=false\n\
         metrics.jmx-object-names=java.lang:type=Memory|java.lang:type=GarbageCollector,name=*\n"
    );
    assert_eq!(
        group_file(&cluster, TrinoRole::Worker, CONFIG_PROPERTIES),
        "coordinator=false\n\
         discovery.uri=https://simple-trino-coordinator-default.default.svc.cluster.local:8443\n\
         internal-communication.shared-secret=${ENV:TRINO_INTERNAL_SHARED_SECRET}\n\
         access-control.config-files=/etc/trino/access-control.properties\n\
         http-server.http.enabled=false\n\
         http-server.https.enabled=true\n\
         http-server.https.port=8443\n\
         http-server.https.keystore.path=/strata/keystore/server.pem\n\
         internal-communication.https.required=true\n\
         internal-communication.https.truststore.path=/strata/tls/ca.crt\n\
         shutdown.grace-period=30s\n\
         metrics.jmx-object-names=java.lang:type=Memory|java.lang:type=GarbageCollector,name=*\n"
    );
    for role in [TrinoRole::Coordinator, TrinoRole::Worker] {
        assert_eq!(
            group_file(&cluster, role, NODE_PROPERTIES),
            "node.environment=simple_trino\nnode.data-dir=/data/trino\n\
             node.internal-address-source=FQDN\n",
            "node.environment is the same on every node and matches [a-z0-9][_a-z0-9]*; \
             with TLS each node is known by the FQDN its certificate covers"
        );
        assert!(
            group_file(&cluster, role, JVM_CONFIG).starts_with("-server\n-Xmx3276m\n"),
            "the heap is 80% of the 4Gi limit"
        );
    }
    Ok(())
}

#[test]
fn query_memory_is_written_as_trino_sizes() -> Result<(), ReconcileError> {
    let coordinators = json!({
        "config": {"queryMaxMemory": "50Gi", "queryMaxMemoryPerNode": "1Gi"},
        "roleGroups": {"default": {"replicas": 1}}
    });
    let cluster = validated(json!({"coordinators": coordinators}))?;
    let config = group_file(&cluster, TrinoRole::Coordinator, CONFIG_PROPERTIES);
    assert!(config.contains("query.max-memory=50GB\n"), "{config}");
    assert!(
        config.contains("query.max-memory-per-node=1GB\n"),
        "{config}"
    );
    Ok(())
}

/// `terminationGracePeriodSeconds` of a worker: the preStop hook sends
/// `SHUTTING_DOWN`, Trino waits the grace period, drains its tasks (at most the
/// graceful shutdown timeout), waits the grace period again and exits; the kubelet
/// may kill the pod only after all of that, plus a margin for the request and the
/// JVM's exit.
#[rstest]
#[case::defaults(30, 3600, 3705)]
#[case::trinos_own_grace_period(120, 3600, 3885)]
#[case::short_queries(10, 60, 125)]
#[case::no_queries_to_wait_for(30, 1, 106)]
fn worker_termination_grace_covers_twice_the_grace_period_and_the_drain(
    #[case] grace: i64,
    #[case] timeout: i64,
    #[case] expected: i64,
) {
    let termination = worker_termination_grace_period(grace, timeout);
    assert_eq!(termination, expected);
    assert!(termination > 2 * grace + timeout);
}

#[rstest]
#[case::worker_defaults(TrinoRole::Worker, json!({}), 3705)]
#[case::worker_configured(
    TrinoRole::Worker,
    json!({"shutdownGracePeriod": "1m", "gracefulShutdownTimeout": "10m"}),
    765
)]
#[case::coordinator_defaults(TrinoRole::Coordinator, json!({}), 30)]
fn the_pods_grace_period_follows_the_role(
    #[case] role: TrinoRole,
    #[case] config: Value,
    #[case] expected: i64,
) -> Result<(), ReconcileError> {
    let replicas = if role == TrinoRole::Coordinator { 1 } else { 2 };
    let field = role.field();
    let cluster = validated(json!({
        field: {"config": config, "roleGroups": {"default": {"replicas": replicas}}}
    }))?;
    let group = &cluster
        .role(role)
        .map(|role| role.groups.clone())
        .unwrap_or_default()[0];
    assert_eq!(group.termination_grace_period_seconds, expected);
    assert_eq!(group.product.graceful_shutdown, role == TrinoRole::Worker);
    Ok(())
}

#[rstest]
#[case::node_id("POD_NAME")]
#[case::shared_secret("TRINO_INTERNAL_SHARED_SECRET")]
#[case::catalog_value("CATALOG_POSTGRES_PASSWORD")]
fn operator_variables_are_not_overridable(#[case] variable: &str) {
    let workers = json!({
        "envOverrides": {variable: "x"},
        "roleGroups": {"default": {"replicas": 2}}
    });
    assert_eq!(
        reason_of(validated(json!({"workers": workers}))),
        "ReservedEnvOverride"
    );
}

#[rstest]
#[case::query_memory_on_workers("workers", json!({"queryMaxMemory": "10Gi"}), 2)]
#[case::grace_period_on_coordinators("coordinators", json!({"shutdownGracePeriod": "1m"}), 1)]
fn settings_a_role_ignores_are_warned_about(
    #[case] field: &str,
    #[case] config: Value,
    #[case] replicas: u16,
) -> Result<(), ReconcileError> {
    let cluster = validated(json!({
        field: {"config": config, "roleGroups": {"default": {"replicas": replicas}}}
    }))?;
    let reasons: Vec<&str> = cluster
        .warnings
        .iter()
        .map(|warning| warning.reason.as_str())
        .collect();
    assert_eq!(reasons, ["IgnoredSetting"]);
    Ok(())
}

#[rstest]
#[case::unknown_operator(json!({"key": "trino", "operator": "in", "values": ["a"]}), "InvalidCatalogSelector")]
#[case::in_without_values(json!({"key": "trino", "operator": "In", "values": []}), "InvalidCatalogSelector")]
#[case::exists_with_values(json!({"key": "trino", "operator": "Exists", "values": ["a"]}), "InvalidCatalogSelector")]
#[case::valid_in(json!({"key": "trino", "operator": "In", "values": ["a"]}), "accepted")]
fn catalog_selectors_are_checked(#[case] expression: Value, #[case] expected: &str) {
    let patch =
        json!({"clusterConfig": {"catalogLabelSelector": {"matchExpressions": [expression]}}});
    assert_eq!(reason_of(validated(patch)), expected);
}

#[test]
fn no_workers_is_a_warning_not_an_error() -> Result<(), ReconcileError> {
    let cluster = validated(json!({"workers": {"roleGroups": {"default": {"replicas": 0}}}}))?;
    let reasons: Vec<&str> = cluster
        .warnings
        .iter()
        .map(|warning| warning.reason.as_str())
        .collect();
    assert_eq!(reasons, ["NoWorkers"]);
    Ok(())
}

#[rstest]
#[case::same_name(
    ("a", json!({"catalogName": "sales", "connector": {"tpch": {}}})),
    ("b", json!({"catalogName": "sales", "connector": {"memory": {}}})),
    "DuplicateCatalogName"
)]
#[case::names_whose_variables_collide(
    ("a", json!({"catalogName": "sales-eu", "connector": {"tpch": {}}})),
    ("b", json!({"catalogName": "sales_eu", "connector": {"tpch": {}}})),
    "DuplicateCatalogName"
)]
#[case::variables_collide_across_catalogs(
    ("a", json!({"catalogName": "sales", "connector": {"generic": {
        "connectorName": "mysql", "secretProperties": {"user.x": {"name": "s", "key": "k"}}
    }}})),
    ("b", json!({"catalogName": "sales_user", "connector": {"generic": {
        "connectorName": "mysql", "secretProperties": {"x": {"name": "s", "key": "k"}}
    }}})),
    "DuplicateCatalogName"
)]
#[case::invalid_catalog(
    ("a", json!({"connector": {}})),
    ("b", json!({"connector": {"tpch": {}}})),
    "InvalidCatalog"
)]
#[case::distinct_names(
    ("a", json!({"connector": {"tpch": {}}})),
    ("b", json!({"connector": {"tpcds": {}}})),
    "accepted"
)]
fn catalogs_are_checked_together(
    #[case] first: (&str, Value),
    #[case] second: (&str, Value),
    #[case] expected: &str,
) {
    let catalogs = [catalog(first.0, first.1), catalog(second.0, second.1)];
    assert_eq!(
        reason_of(ValidatedCluster::new(
            &cluster(json!({})),
            &catalogs,
            DEFAULT_CLUSTER_DOMAIN
        )),
        expected
    );
}

#[test]
fn catalogs_are_sorted_by_name() -> Result<(), ReconcileError> {
    let catalogs = [
        catalog("zeta", json!({"connector": {"tpch": {}}})),
        catalog("alpha", json!({"connector": {"tpcds": {}}})),
    ];
    let cluster = ValidatedCluster::new(&cluster(json!({})), &catalogs, DEFAULT_CLUSTER_DOMAIN)?;
    assert_eq!(cluster.catalog_names(), ["alpha", "zeta"]);
    Ok(())
}

fn iceberg_jdbc(url: &str, driver: Option<&str>) -> Value {
    let mut jdbc = json!({
        "connectionUrl": url, "credentialsSecret": "ice",
        "catalogName": "lake", "defaultWarehouseDir": "s3://lake/"
    });
    if let Some(driver) = driver {
        jdbc["driverClass"] = json!(driver);
    }
    json!({"connector": {"iceberg": {"jdbc": jdbc}}})
}

/// Trino 483's Iceberg plugin ships only PostgreSQL's driver: any other one makes every
/// pod exit at start on the stock image, so it is refused there, and left to the user
/// on a custom image that can carry it.
#[rstest]
#[case::postgresql_by_default(iceberg_jdbc("jdbc:postgresql://db/lake", None), None, "accepted")]
#[case::postgresql_named(
    iceberg_jdbc("jdbc:postgresql://db/lake", Some("org.postgresql.Driver")),
    None,
    "accepted"
)]
#[case::mysql_on_the_stock_image(
    iceberg_jdbc("jdbc:mysql://db/lake", Some("com.mysql.cj.jdbc.Driver")),
    None,
    "JdbcDriverNotInImage"
)]
#[case::mysql_by_an_override(
    {
        let mut spec = iceberg_jdbc("jdbc:postgresql://db/lake", None);
        spec["configOverrides"] = json!({"iceberg.jdbc-catalog.driver-class": "com.mysql.cj.jdbc.Driver"});
        spec
    },
    None,
    "JdbcDriverNotInImage"
)]
#[case::mysql_on_a_custom_image(
    iceberg_jdbc("jdbc:mysql://db/lake", Some("com.mysql.cj.jdbc.Driver")),
    Some("registry.example.com/trino-mysql:483"),
    "accepted"
)]
fn iceberg_jdbc_drivers_must_be_in_the_image(
    #[case] spec: Value,
    #[case] custom_image: Option<&str>,
    #[case] expected: &str,
) {
    let image = match custom_image {
        Some(custom) => json!({"image": {"custom": custom, "productVersion": "483"}}),
        None => json!({}),
    };
    assert_eq!(
        reason_of(ValidatedCluster::new(
            &cluster(image),
            &[catalog("lake", spec)],
            DEFAULT_CLUSTER_DOMAIN
        )),
        expected
    );
}

/// Workers find the coordinator through its role group's headless Service, which
/// resolves while the coordinator is not Ready, so a slow probe never expires them.
#[rstest]
#[case::the_one_group(json!({"default": {"replicas": 1}}), "simple-trino-coordinator-default")]
#[case::replicas_by_default(json!({"main": {}}), "simple-trino-coordinator-main")]
#[case::one_group_among_empty_ones(
    json!({"old": {"replicas": 0}, "new": {"replicas": 1}}),
    "simple-trino-coordinator-new"
)]
fn discovery_goes_to_the_coordinator_groups_headless_service(
    #[case] role_groups: Value,
    #[case] host: &str,
) -> Result<(), ReconcileError> {
    let cluster = validated(json!({"coordinators": {"roleGroups": role_groups}}))?;
    let config = group_file(&cluster, TrinoRole::Worker, CONFIG_PROPERTIES);
    let expected = format!("discovery.uri=https://{host}.default.svc.cluster.local:8443\n");
    assert!(config.contains(&expected), "{config}");
    Ok(())
}

#[rstest]
#[case::the_smallest_limit(1280, 768, 210)]
#[case::four_gibibytes_at_the_default_share(4096, 3276, 368)]
#[case::never_below_the_floor(1280, 1152, super::MIN_DIRECT_MEMORY_MIB)]
fn direct_memory_is_what_the_limit_leaves_after_heap_gc_and_the_fixed_non_heap(
    #[case] limit_mib: u64,
    #[case] heap_mib: u64,
    #[case] expected: u64,
) {
    assert_eq!(super::direct_memory_mib(limit_mib, heap_mib), expected);
}

#[rstest]
#[case::the_smallest_limit_keeps_its_reserve_cap(1280, 905)]
#[case::four_gibibytes(4096, 3562)]
fn the_heap_never_leaves_less_than_gc_fixed_and_the_direct_floor(
    #[case] limit_mib: u64,
    #[case] expected: u64,
) {
    let heap = super::max_heap_mib(limit_mib);
    assert_eq!(heap, expected);
    assert!(
        heap + heap * super::GC_PERCENT_OF_HEAP / 100
            + super::FIXED_NON_HEAP_MIB
            + super::direct_memory_mib(limit_mib, heap)
            <= limit_mib
    );
}

#[rstest]
#[case::inside_the_cluster(json!({}), &[])]
#[case::a_node_port_without_authentication(json!({"service": {"type": "NodePort"}}), &["TrinoUnauthenticated"])]
#[case::an_open_load_balancer_without_authentication(json!({"service": {"type": "LoadBalancer"}}), &["TrinoUnauthenticated"])]
#[case::a_load_balancer_for_trusted_networks(
    json!({"service": {"type": "LoadBalancer", "loadBalancerSourceRanges": ["10.0.0.0/8"]}}),
    &[]
)]
#[case::an_ingress_without_authentication(
    json!({"ingress": {"host": "trino.example.com", "tlsSecret": "trino-tls"}}),
    &["TrinoUnauthenticated"]
)]
#[case::an_authenticating_trino_behind_an_ingress_without_tls(
    json!({"ingress": {"host": "trino.example.com"}, "authentication": [{"password": {"secretName": "users"}}]}),
    &["IngressWithoutTls"]
)]
#[case::an_authenticating_trino_behind_an_ingress_with_tls(
    json!({"ingress": {"host": "trino.example.com", "tlsSecret": "trino-tls"}, "authentication": [{"password": {"secretName": "users"}}]}),
    &[]
)]
#[case::an_open_load_balancer_with_authentication(
    json!({"service": {"type": "LoadBalancer"}, "authentication": [{"password": {"secretName": "users"}}]}),
    &[]
)]
fn ways_in_from_outside_that_are_not_secured_are_warnings(
    #[case] cluster_config: Value,
    #[case] expected: &[&str],
) -> Result<(), ReconcileError> {
    let cluster = validated(json!({"clusterConfig": cluster_config}))?;
    let reasons: Vec<&str> = cluster
        .warnings
        .iter()
        .map(|warning| warning.reason.as_str())
        .collect();
    assert_eq!(reasons, expected);
    Ok(())
}

#[rstest]
#[case::the_default_lifetime_and_ten_workers("720h", 10, false)]
#[case::a_day_and_ten_workers_draining_an_hour("24h", 10, true)]
#[case::a_day_and_two_workers_draining_an_hour("24h", 2, false)]
#[case::the_user_secret_and_ten_workers("", 10, false)]
fn a_roll_that_outlasts_the_renewal_is_a_warning(
    #[case] lifetime: &str,
    #[case] workers: u16,
    #[case] warned: bool,
) {
    let tls = match lifetime {
        "" => json!({"secretName": "trino-tls"}),
        lifetime => json!({"certificateLifetime": lifetime}),
    };
    let cluster = validated(json!({
        "clusterConfig": {
            "catalogLabelSelector": {"matchLabels": {"trino": "simple-trino"}},
            "tls": tls
        },
        "workers": {"roleGroups": {"default": {"replicas": workers}}}
    }))
    .unwrap_or_else(|error| panic!("{error}"));
    let reasons: Vec<&str> = cluster
        .warnings
        .iter()
        .map(|warning| warning.reason.as_str())
        .collect();
    assert_eq!(
        reasons.contains(&strata_operator::tls::roll_budget::ROLL_OUTLASTS_RENEWAL),
        warned,
        "{reasons:?}"
    );
}
