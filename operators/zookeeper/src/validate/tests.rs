//! Validation rules, one named case per rule, plus the fixtures the build and render
//! tests share.

use pretty_assertions::assert_eq;
use rstest::rstest;
use serde_json::{Value, json};
use strata_operator::error::ReconcileError;

use super::*;

/// A `ZookeeperCluster` named `simple-zk` in namespace `data` with the given spec.
pub(crate) fn cluster(spec: Value) -> Result<ZookeeperCluster, serde_json::Error> {
    serde_json::from_value(json!({
        "apiVersion": "zookeeper.strata.dev/v1alpha1",
        "kind": "ZookeeperCluster",
        "metadata": {"name": "simple-zk", "namespace": "data"},
        "spec": spec
    }))
}

/// The spec of three servers in one role group `default`.
pub(crate) fn three_servers() -> Value {
    json!({"servers": {"roleGroups": {"default": {"replicas": 3}}}})
}

/// Validates a running cluster in `cluster.local`.
pub(crate) fn validated(spec: Value) -> Result<ValidatedCluster, Box<dyn std::error::Error>> {
    Ok(ValidatedCluster::new(
        &cluster(spec)?,
        DEFAULT_CLUSTER_DOMAIN,
    )?)
}

/// The reason and message of a validation failure, or `None` if the spec is valid.
fn failure(spec: Value) -> Result<Option<(String, String)>, serde_json::Error> {
    let result = ValidatedCluster::new(&cluster(spec)?, DEFAULT_CLUSTER_DOMAIN);
    Ok(result
        .err()
        .map(|error: ReconcileError| (error.reason().to_owned(), error.message().to_owned())))
}

fn group_config(config: Value) -> Value {
    json!({"servers": {"roleGroups": {"default": {"replicas": 3, "config": config}}}})
}

#[rstest]
#[case::no_role_groups(json!({"servers": {"roleGroups": {}}}), "NoRoleGroups", "spec.servers.roleGroups is empty")]
#[case::role_group_name_with_capitals(
    json!({"servers": {"roleGroups": {"Default": {}}}}),
    "InvalidRoleGroupName",
    "role group name \"Default\" is invalid"
)]
#[case::role_group_name_too_long(
    json!({"servers": {"roleGroups": {"a-very-long-role-group-name-for-zookeeper-x": {}}}}),
    "NameTooLong",
    "name \"simple-zk-server-a-very-long-role-group-name-for-zookeeper-x\" is 60 characters; StatefulSet names may have at most 52"
)]
#[case::invalid_product_version(
    json!({"image": {"productVersion": "3.9 5"}, "servers": {"roleGroups": {"default": {}}}}),
    "InvalidImage",
    "spec.image: productVersion \"3.9 5\" is not a valid image tag"
)]
#[case::unparseable_cpu(group_config(json!({"resources": {"cpu": {"max": "lots"}}})), "InvalidQuantity", "servers.roleGroups.default: resources.cpu.max: quantity \"lots\" is invalid")]
#[case::cpu_min_above_max(group_config(json!({"resources": {"cpu": {"min": "2", "max": "500m"}}})), "InvalidCpuRange", "resources.cpu.min (2) exceeds resources.cpu.max (500m)")]
#[case::memory_too_low(group_config(json!({"resources": {"memory": {"limit": "100Mi"}}})), "MemoryLimitTooLow", "resources.memory.limit (100Mi) is below the minimum of 128Mi")]
#[case::zero_storage(group_config(json!({"resources": {"storage": {"data": {"capacity": "0"}}}})), "InvalidStorageCapacity", "must be larger than zero")]
#[case::zero_tick_time(group_config(json!({"tickTime": 0})), "InvalidTimingSetting", "tickTime must be at least 1")]
#[case::bad_shutdown_timeout(group_config(json!({"gracefulShutdownTimeout": "soon"})), "InvalidGracefulShutdownTimeout", "gracefulShutdownTimeout: duration \"soon\" is invalid")]
#[case::myid_offset_zero(group_config(json!({"myidOffset": 0})), "InvalidMyidOffset", "role group \"default\" has myidOffset 0")]
#[case::ids_above_255(group_config(json!({"myidOffset": 254})), "ServerIdOutOfRange", "would use server ids up to 256")]
#[case::bad_log_level(
    json!({"servers": {"configOverrides": {"logback.xml": {"ROOT": "LOUD"}}, "roleGroups": {"default": {}}}}),
    "InvalidConfigOverride",
    "logback.xml: logger \"ROOT\" has level \"LOUD\""
)]
#[case::zoo_cfg_key_injection(
    json!({"servers": {"roleGroups": {"default": {"configOverrides": {"zoo.cfg": {"a=b": "c"}}}}}}),
    "InvalidConfigOverride",
    "servers.roleGroups.default: zoo.cfg: config override key \"a=b\" is invalid"
)]
#[case::zoo_cfg_owned_port(
    json!({"servers": {"configOverrides": {"zoo.cfg": {"clientPort": "2182"}}, "roleGroups": {"default": {}}}}),
    "ReservedConfigOverride",
    "servers.roleGroups.default: configOverrides.zoo.cfg: clientPort is set by the operator"
)]
#[case::zoo_cfg_server_line(
    json!({"servers": {"roleGroups": {"default": {"configOverrides": {"zoo.cfg": {"server.7": "x:2888:3888"}}}}}}),
    "ReservedConfigOverride",
    "server.7 is set by the operator"
)]
#[case::certificate_lifetime_too_short(
    json!({"clusterConfig": {"tls": {"certificateLifetime": "1m"}}, "servers": {"roleGroups": {"default": {}}}}),
    "InvalidCertificateLifetime",
    "\"1m\" is shorter than 5m"
)]
#[case::certificate_lifetime_unreadable(
    json!({"clusterConfig": {"tls": {"certificateLifetime": "a month"}}, "servers": {"roleGroups": {"default": {}}}}),
    "InvalidCertificateLifetime",
    "clusterConfig.tls.certificateLifetime"
)]
#[case::zoo_cfg_tls_key(
    json!({"clusterConfig": {"tls": {"enabled": true, "secretName": "s"}}, "servers": {"configOverrides": {"zoo.cfg": {"ssl.clientAuth": "want"}}, "roleGroups": {"default": {}}}}),
    "ReservedConfigOverride",
    "ssl.clientAuth is set by the operator"
)]
#[case::zoo_cfg_quorum_tls(
    json!({"clusterConfig": {"tls": {"enabled": true, "secretName": "s"}}, "servers": {"configOverrides": {"zoo.cfg": {"sslQuorum": "false"}}, "roleGroups": {"default": {}}}}),
    "ReservedConfigOverride",
    "sslQuorum is set by the operator"
)]
#[case::zoo_cfg_connection_factory_with_tls(
    json!({"clusterConfig": {"tls": {"enabled": true, "secretName": "s"}}, "servers": {"configOverrides": {"zoo.cfg": {"serverCnxnFactory": "org.apache.zookeeper.server.NIOServerCnxnFactory"}}, "roleGroups": {"default": {}}}}),
    "ReservedConfigOverride",
    "serverCnxnFactory is set by the operator"
)]
#[case::tls_with_an_empty_secret_name(
    json!({"clusterConfig": {"tls": {"enabled": true, "secretName": ""}}, "servers": {"roleGroups": {"default": {}}}}),
    "TlsSecretMissing",
    "clusterConfig.tls.secretName is empty"
)]
#[case::data_dir_climbing_out_of_the_volume(
    json!({"servers": {"configOverrides": {"zoo.cfg": {"dataDir": "/data/../tmp/x"}}, "roleGroups": {"default": {}}}}),
    "InvalidDataDir",
    "configOverrides sets dataDir=/data/../tmp/x"
)]
#[case::zoo_cfg_metrics_provider(
    json!({"servers": {"configOverrides": {"zoo.cfg": {"metricsProvider.className": "org.example.Metrics"}}, "roleGroups": {"default": {}}}}),
    "ReservedConfigOverride",
    "metricsProvider.className is set by the operator"
)]
#[case::zoo_cfg_peer_type(
    json!({"servers": {"configOverrides": {"zoo.cfg": {"peerType": "observer"}}, "roleGroups": {"default": {}}}}),
    "ReservedConfigOverride",
    "peerType is set by the operator"
)]
#[case::zoo_cfg_dynamic_config_file(
    json!({"servers": {"configOverrides": {"zoo.cfg": {"dynamicConfigFile": "/data/zoo.cfg.dynamic"}}, "roleGroups": {"default": {}}}}),
    "ReservedConfigOverride",
    "dynamicConfigFile is set by the operator"
)]
#[case::zoo_cfg_reconfig(
    json!({"servers": {"configOverrides": {"zoo.cfg": {"reconfigEnabled": "true"}}, "roleGroups": {"default": {}}}}),
    "ReservedConfigOverride",
    "reconfigEnabled is set by the operator"
)]
#[case::zoo_cfg_standalone(
    json!({"servers": {"configOverrides": {"zoo.cfg": {"standaloneEnabled": "false"}}, "roleGroups": {"default": {}}}}),
    "ReservedConfigOverride",
    "standaloneEnabled is set by the operator"
)]
#[case::data_dir_outside_the_volume(
    json!({"servers": {"configOverrides": {"zoo.cfg": {"dataDir": "/var/lib/zookeeper"}}, "roleGroups": {"default": {}}}}),
    "InvalidDataDir",
    "configOverrides sets dataDir=/var/lib/zookeeper"
)]
fn invalid_specs_are_rejected_with_a_reason(
    #[case] spec: Value,
    #[case] reason: &str,
    #[case] message_part: &str,
) -> Result<(), serde_json::Error> {
    let failure = failure(spec)?;
    assert_eq!(
        failure.as_ref().map(|(r, _)| r.as_str()),
        Some(reason),
        "{failure:?}"
    );
    let message = failure.map(|(_, message)| message).unwrap_or_default();
    assert!(message.contains(message_part), "{message}");
    Ok(())
}

/// `configOverrides` is typed by file: a file ZooKeeper does not have is not a
/// validation finding but a resource the schema refuses (the API server with strict
/// field validation, `render`), and one the operator cannot read if it gets in anyway
/// (the controller then reports it as `InvalidObject`).
#[rstest]
#[case::role_level(json!({"servers": {"configOverrides": {"log4j.properties": {}}, "roleGroups": {"default": {}}}}))]
#[case::group_level(json!({"servers": {"roleGroups": {"default": {"configOverrides": {"log4j.properties": {}}}}}}))]
fn an_unknown_config_file_is_refused_by_the_types(#[case] spec: Value) {
    let error = cluster(spec).err().map(|error| error.to_string());
    let message = error.unwrap_or_default();
    assert!(message.contains("log4j.properties"), "{message}");
    assert!(
        message.contains("zoo.cfg") && message.contains("logback.xml"),
        "the message names the files that can be overridden: {message}"
    );
}

#[test]
fn an_ensemble_of_observers_only_is_refused() -> Result<(), serde_json::Error> {
    let spec = json!({"servers": {"roleGroups": {
        "readers": {"replicas": 2, "config": {"peerType": "observer"}}
    }}});
    let (reason, _) = failure(spec)?.unwrap_or_default();
    assert_eq!(reason, "NoParticipants");
    Ok(())
}

#[test]
fn observers_are_marked_in_every_server_line_and_in_their_own_file()
-> Result<(), Box<dyn std::error::Error>> {
    let spec = json!({"servers": {"roleGroups": {
        "voters": {"replicas": 3},
        "readers": {"replicas": 1, "config": {"peerType": "observer", "myidOffset": 10}}
    }}});
    let validated = ValidatedCluster::new(&cluster(spec)?, "cluster.local")?;
    for group in &validated.servers.groups {
        let text = group.product.zoo_cfg.to_properties();
        assert!(
            text.contains("server.10=simple-zk-server-readers-0.simple-zk-server-readers.data.svc.cluster.local:2888:3888:observer\n"),
            "{text}"
        );
        assert!(text.contains("server.1=simple-zk-server-voters-0.simple-zk-server-voters.data.svc.cluster.local:2888:3888\n"), "{text}");
        assert_eq!(
            group.product.zoo_cfg.get("peerType") == Some("observer"),
            group.product.observer
        );
    }
    Ok(())
}

#[test]
fn overlapping_ranges_name_both_groups_and_the_shared_ids() -> Result<(), serde_json::Error> {
    let spec = json!({"servers": {"roleGroups": {
        "primary": {"replicas": 3, "config": {"myidOffset": 1}},
        "secondary": {"replicas": 2, "config": {"myidOffset": 3}}
    }}});
    let (reason, message) = failure(spec)?.unwrap_or_default();
    assert_eq!(reason, "OverlappingServerIds");
    assert!(
        message.contains("\"primary\" and \"secondary\""),
        "{message}"
    );
    assert!(message.contains("server ids 3;"), "{message}");
    Ok(())
}

#[rstest]
#[case::cluster_name_too_long_for_the_statefulset(&"z".repeat(45), "NameTooLong")]
#[case::cluster_name_too_long_for_a_label(&"z".repeat(64), "InvalidName")]
#[case::cluster_name_with_underscore("simple_zk", "InvalidName")]
fn invalid_cluster_names_are_rejected(
    #[case] name: &str,
    #[case] reason: &str,
) -> Result<(), serde_json::Error> {
    let mut cluster = cluster(three_servers())?;
    cluster.metadata.name = Some(name.to_owned());
    let error = ValidatedCluster::new(&cluster, DEFAULT_CLUSTER_DOMAIN)
        .err()
        .map(|error| error.reason().to_owned());
    assert_eq!(error.as_deref(), Some(reason));
    Ok(())
}

#[rstest]
#[case::missing_namespace(None, DEFAULT_CLUSTER_DOMAIN, "MissingNamespace")]
#[case::domain_with_capitals(Some("data"), "Cluster.Local", "InvalidClusterDomain")]
#[case::domain_with_empty_label(Some("data"), "cluster..local", "InvalidClusterDomain")]
fn environment_problems_are_rejected(
    #[case] namespace: Option<&str>,
    #[case] domain: &str,
    #[case] reason: &str,
) -> Result<(), serde_json::Error> {
    let mut cluster = cluster(three_servers())?;
    cluster.metadata.namespace = namespace.map(str::to_owned);
    let error = ValidatedCluster::new(&cluster, domain)
        .err()
        .map(|error| error.reason().to_owned());
    assert_eq!(error.as_deref(), Some(reason));
    Ok(())
}

#[rstest]
#[case::default_one_gibibyte(None, 768)]
#[case::two_gibibytes(Some("2Gi"), 1536)]
#[case::half_a_gibibyte(Some("512Mi"), 384)]
#[case::fractional(Some("1.5Gi"), 1152)]
#[case::decimal_gigabyte(Some("1G"), 715)]
#[case::minimum(Some("128Mi"), 96)]
fn heap_is_three_quarters_of_the_memory_limit(
    #[case] limit: Option<&str>,
    #[case] heap_mib: u64,
) -> Result<(), Box<dyn std::error::Error>> {
    let config = limit.map_or(
        json!({}),
        |limit| json!({"resources": {"memory": {"limit": limit}}}),
    );
    let cluster = validated(group_config(config))?;
    let heaps: Vec<u64> = cluster
        .servers
        .groups
        .iter()
        .map(|g| g.resources.heap_mib)
        .collect();
    assert_eq!(heaps, [heap_mib]);
    Ok(())
}

#[test]
fn defaults_are_applied() -> Result<(), Box<dyn std::error::Error>> {
    let cluster = validated(three_servers())?;
    assert_eq!(
        cluster.identity.image.image,
        "docker.io/library/zookeeper:3.9.5"
    );
    let group = cluster.servers.groups.first().ok_or("no role group")?;
    assert_eq!(group.product.myid_offset, 1);
    assert_eq!(group.termination_grace_period_seconds, 120);
    assert_eq!(
        [
            group.resources.cpu_min.0.as_str(),
            &group.resources.cpu_max.0,
            &group.resources.memory_limit.0,
            &group.product.data.capacity.0
        ],
        ["250m", "1", "1Gi", "1Gi"]
    );
    assert_eq!(
        [
            group.product.zoo_cfg.get("tickTime"),
            group.product.zoo_cfg.get("initLimit"),
            group.product.zoo_cfg.get("syncLimit")
        ],
        [Some("2000"), Some("10"), Some("5")]
    );
    Ok(())
}

#[test]
fn quantities_are_applied_in_the_form_the_api_server_stores()
-> Result<(), Box<dyn std::error::Error>> {
    let cluster = validated(group_config(json!({"resources": {
        "cpu": {"min": "0.5", "max": "2000m"},
        "memory": {"limit": "2048Mi"},
        "storage": {"data": {"capacity": "10240Mi"}}
    }})))?;
    let group = cluster.servers.groups.first().ok_or("no role group")?;
    assert_eq!(
        [
            group.resources.cpu_min.0.as_str(),
            &group.resources.cpu_max.0,
            &group.resources.memory_limit.0,
            &group.product.data.capacity.0
        ],
        ["500m", "2", "2Gi", "10Gi"],
        "any other spelling would be re-applied on every reconcile"
    );
    Ok(())
}

#[test]
fn role_group_settings_win_over_role_settings() -> Result<(), Box<dyn std::error::Error>> {
    let cluster = validated(json!({"servers": {
        "config": {"tickTime": 3000, "gracefulShutdownTimeout": "30s"},
        "configOverrides": {"zoo.cfg": {"maxClientCnxns": "10", "globalOutstandingLimit": "500"},
                            "logback.xml": {"ROOT": "warn", "org.apache.zookeeper": "DEBUG"}},
        "roleGroups": {"default": {
            "config": {"tickTime": 4000},
            "configOverrides": {"zoo.cfg": {"maxClientCnxns": "20"}}
        }}
    }}))?;
    let group = cluster.servers.groups.first().ok_or("no role group")?;
    assert_eq!(group.product.zoo_cfg.get("tickTime"), Some("4000"));
    assert_eq!(group.product.zoo_cfg.get("maxClientCnxns"), Some("20"));
    assert_eq!(
        group.product.zoo_cfg.get("globalOutstandingLimit"),
        Some("500")
    );
    assert_eq!(group.termination_grace_period_seconds, 30);
    assert_eq!(
        group.product.logback.root,
        strata_model::logging::LogLevel::Warn
    );
    assert_eq!(
        group.product.logback.loggers.get("org.apache.zookeeper"),
        Some(&strata_model::logging::LogLevel::Debug)
    );
    Ok(())
}

/// The reconcile skips the second validation when no change runs, which is only right
/// if both give the same model.
#[test]
fn the_settled_membership_validates_to_the_spec() -> Result<(), Box<dyn std::error::Error>> {
    let spec = cluster(json!({"servers": {"roleGroups": {
        "primary": {"replicas": 3},
        "secondary": {"replicas": 2, "config": {"myidOffset": 10}}
    }}}))?;
    let desired = ValidatedCluster::new(&spec, DEFAULT_CLUSTER_DOMAIN)?;
    let settled = crate::membership::settled(&desired.membership());
    assert_eq!(
        ValidatedCluster::for_membership(&spec, DEFAULT_CLUSTER_DOMAIN, &settled)?,
        desired
    );
    Ok(())
}

#[rstest]
#[case::on_by_default_with_the_operators_certificates(
    json!({}),
    Some(CertificateSource::Operator { lifetime: DEFAULT_CERTIFICATE_LIFETIME }),
    false
)]
#[case::a_shorter_lifetime(
    json!({"certificateLifetime": "10m"}),
    Some(CertificateSource::Operator { lifetime: std::time::Duration::from_secs(600) }),
    false
)]
#[case::the_users_secret(
    json!({"secretName": "zk-cert"}),
    Some(CertificateSource::User { secret_name: "zk-cert".to_owned() }),
    false
)]
#[case::off_with_a_warning(json!({"enabled": false}), None, true)]
fn tls_is_on_unless_turned_off(
    #[case] tls: Value,
    #[case] certificates: Option<CertificateSource>,
    #[case] warned: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let spec = json!({"clusterConfig": {"tls": tls}, "servers": {"roleGroups": {"default": {}}}});
    let validated = ValidatedCluster::new(&cluster(spec)?, "cluster.local")?;
    assert_eq!(
        validated.tls.as_ref().map(|tls| tls.certificates.clone()),
        certificates
    );
    let warning = plaintext_warning(&validated);
    assert_eq!(warning.is_some(), warned, "{warning:?}");
    if let Some(warning) = warning {
        assert_eq!(warning.reason.as_str(), "TlsDisabled");
    }
    Ok(())
}

#[rstest]
#[case::inside_the_cluster(json!({}), json!({}), None)]
#[case::a_node_port_without_client_certificates(json!({"type": "NodePort"}), json!({}), Some("ZookeeperOpen"))]
#[case::an_open_load_balancer(json!({"type": "LoadBalancer"}), json!({}), Some("ZookeeperOpen"))]
#[case::an_open_load_balancer_in_plaintext(json!({"type": "LoadBalancer"}), json!({"enabled": false}), Some("ZookeeperOpen"))]
#[case::a_load_balancer_for_trusted_networks(json!({"type": "LoadBalancer", "loadBalancerSourceRanges": ["10.0.0.0/8"]}), json!({}), None)]
#[case::a_node_port_with_client_certificates(json!({"type": "NodePort"}), json!({"clientAuthentication": "Required"}), None)]
fn exposure_without_client_certificates_is_a_warning(
    #[case] service: Value,
    #[case] tls: Value,
    #[case] reason: Option<&str>,
) -> Result<(), Box<dyn std::error::Error>> {
    let spec = json!({
        "clusterConfig": {"service": service, "tls": tls},
        "servers": {"roleGroups": {"default": {}}}
    });
    let validated = ValidatedCluster::new(&cluster(spec)?, "cluster.local")?;
    let warning = exposure_warning(&validated);
    assert_eq!(
        warning.as_ref().map(|warning| warning.reason.as_str()),
        reason,
        "{warning:?}"
    );
    Ok(())
}

#[rstest]
#[case::inside_the_cluster(json!({}), json!({}), "conf,isro,mntr,ruok,srvr")]
#[case::a_node_port(json!({"type": "NodePort"}), json!({}), "isro,ruok,srvr")]
#[case::a_load_balancer_for_trusted_networks(
    json!({"type": "LoadBalancer", "loadBalancerSourceRanges": ["10.0.0.0/8"]}),
    json!({}),
    "isro,ruok,srvr"
)]
#[case::the_users_own_list(
    json!({"type": "LoadBalancer"}),
    json!({"4lw.commands.whitelist": "mntr,ruok,srvr"}),
    "mntr,ruok,srvr"
)]
fn an_exposed_ensemble_tells_strangers_nothing_of_its_layout(
    #[case] service: Value,
    #[case] overrides: Value,
    #[case] whitelist: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let spec = json!({
        "clusterConfig": {"service": service},
        "servers": {"roleGroups": {"default": {"configOverrides": {"zoo.cfg": overrides}}}}
    });
    let validated = ValidatedCluster::new(&cluster(spec)?, "cluster.local")?;
    let group = validated.servers.groups.first().ok_or("no role group")?;
    assert_eq!(
        group.product.zoo_cfg.get("4lw.commands.whitelist"),
        Some(whitelist)
    );
    Ok(())
}
