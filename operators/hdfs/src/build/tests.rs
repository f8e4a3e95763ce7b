use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Container, PodSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::ResourceExt;
use pretty_assertions::assert_eq;
use serde_json::json;
use strata_operator::error::ReconcileError;

use super::*;
use crate::config::zookeeper_tls::ZookeeperConnection;
use crate::crd::HdfsRole;
use crate::validate::tests::validated;

type TestResult = Result<(), ReconcileError>;

mod exposure;

fn objects() -> Result<ClusterObjects, ReconcileError> {
    Ok(build_cluster(
        &validated(json!({}))?,
        &NameNodeState::default(),
    ))
}

fn stateful_set<'a>(objects: &'a ClusterObjects, name: &str) -> Option<&'a StatefulSet> {
    objects
        .role_groups
        .iter()
        .map(|group| &group.stateful_set)
        .find(|set| set.name_any() == name)
}

fn pod_spec(set: Option<&StatefulSet>) -> PodSpec {
    set.and_then(|set| set.spec.template.spec.clone())
        .unwrap_or_default()
}

fn container_names(containers: &[Container]) -> Vec<&str> {
    containers
        .iter()
        .map(|container| container.name.as_str())
        .collect()
}

#[test]
fn every_role_group_gets_its_objects_in_roll_order() -> TestResult {
    let objects = objects()?;
    let names: Vec<String> = objects
        .role_groups
        .iter()
        .map(|group| group.stateful_set.name_any())
        .collect();
    assert_eq!(
        names,
        [
            "simple-hdfs-journalnode-default",
            "simple-hdfs-namenode-default",
            "simple-hdfs-datanode-default"
        ]
    );
    let pdbs: Vec<String> = objects.pdbs.iter().map(ResourceExt::name_any).collect();
    assert_eq!(
        pdbs,
        [
            "simple-hdfs-journalnode",
            "simple-hdfs-namenode",
            "simple-hdfs-datanode"
        ]
    );
    assert_eq!(objects.discovery_config_map.name_any(), "simple-hdfs");
    assert_eq!(
        objects.namenode_state.name_any(),
        "simple-hdfs-namenode-state"
    );
    Ok(())
}

#[test]
fn namenodes_format_in_an_init_container_and_run_zkfc_and_refresh_nodes_beside_the_daemon()
-> TestResult {
    let objects = objects()?;
    let pod = pod_spec(stateful_set(&objects, "simple-hdfs-namenode-default"));
    assert_eq!(
        container_names(&pod.containers),
        ["namenode", "zkfc", "refresh-nodes"]
    );
    let hand_over = pod.containers[0]
        .lifecycle
        .as_ref()
        .and_then(|lifecycle| lifecycle.pre_stop.as_ref())
        .and_then(|hook| hook.exec.as_ref())
        .and_then(|exec| exec.command.clone());
    assert_eq!(
        hand_over,
        Some(
            [
                "bash",
                "/strata/config/hand-over-active.sh",
                "simple-hdfs-namenode-default-0",
                "simple-hdfs-namenode-default-1"
            ]
            .map(str::to_owned)
            .to_vec()
        ),
        "an active namenode hands over before it stops"
    );
    let zkfc_ready = pod.containers[1]
        .readiness_probe
        .as_ref()
        .and_then(|probe| probe.tcp_socket.as_ref())
        .map(|socket| socket.port.clone());
    assert_eq!(
        zkfc_ready,
        Some(IntOrString::String("zkfc".to_owned())),
        "a namenode whose ZKFC has not reached ZooKeeper could not take over"
    );
    let init = pod.init_containers.unwrap_or_default();
    assert_eq!(container_names(&init), ["format-namenode"]);
    let env: Vec<(String, Option<String>)> = init[0]
        .env
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|var| (var.name, var.value))
        .filter(|(name, _)| {
            [
                "NAME_DIR",
                "FORMATTER_POD",
                "CLUSTER_ID_FILE",
                "HADOOP_PID_DIR",
            ]
            .contains(&name.as_str())
        })
        .collect();
    assert_eq!(
        env,
        [
            (
                "CLUSTER_ID_FILE".to_owned(),
                Some("/strata/state/cluster-id".to_owned())
            ),
            (
                "FORMATTER_POD".to_owned(),
                Some("simple-hdfs-namenode-default-0".to_owned())
            ),
            (
                "HADOOP_PID_DIR".to_owned(),
                Some("/strata/run/format-namenode".to_owned())
            ),
            ("NAME_DIR".to_owned(), Some("/data/name".to_owned())),
        ]
    );
    Ok(())
}

#[test]
fn daemons_run_hdfs_directly_never_the_image_entrypoint() -> TestResult {
    let objects = objects()?;
    for (set, daemon) in [
        ("simple-hdfs-journalnode-default", "journalnode"),
        ("simple-hdfs-namenode-default", "namenode"),
        ("simple-hdfs-datanode-default", "datanode"),
    ] {
        let pod = pod_spec(stateful_set(&objects, set));
        let container = &pod.containers[0];
        assert_eq!(
            container.command,
            Some(vec!["/opt/hadoop/bin/hdfs".to_owned(), daemon.to_owned()])
        );
        let security = pod.security_context.unwrap_or_default();
        assert_eq!(
            (security.run_as_user, security.run_as_group),
            (Some(1000), Some(100))
        );
        let pid_dir = container
            .env
            .iter()
            .flatten()
            .find(|var| var.name == "HADOOP_PID_DIR")
            .and_then(|var| var.value.clone());
        assert_eq!(pid_dir, Some(format!("/strata/run/{daemon}")));
    }
    Ok(())
}

#[test]
fn pods_restart_only_by_the_operator_and_keep_their_claims() -> TestResult {
    let objects = objects()?;
    for group in &objects.role_groups {
        let spec = group.stateful_set.spec.clone();
        assert_eq!(
            spec.update_strategy.and_then(|strategy| strategy.type_),
            Some("OnDelete".to_owned())
        );
        assert_eq!(
            spec.persistent_volume_claim_retention_policy
                .map(|policy| (policy.when_deleted, policy.when_scaled)),
            Some((Some("Retain".to_owned()), Some("Retain".to_owned())))
        );
    }
    Ok(())
}

#[test]
fn the_namenode_state_holds_the_cluster_id_the_excluded_datanodes_the_journalnodes_and_the_roll_request()
-> TestResult {
    let cluster = validated(json!({}))?;
    let state = NameNodeState {
        cluster_id: Some("CID-1".to_owned()),
        excluded_datanodes: vec!["dn-2.dn".to_owned(), "dn-1.dn".to_owned()],
        journal_nodes: vec!["jn-0.jn".to_owned(), "jn-1.jn".to_owned()],
        roll_edits: "10.244.0.2:8485".to_owned(),
    };
    let data = build_cluster(&cluster, &state)
        .namenode_state
        .data
        .unwrap_or_default();
    assert_eq!(data["cluster-id"], "CID-1");
    assert_eq!(data["datanodes"], "dn-2.dn\ndn-1.dn\n");
    assert_eq!(data["journalnodes"], "jn-0.jn\njn-1.jn\n");
    assert_eq!(data["roll-edits"], "10.244.0.2:8485");
    Ok(())
}

#[test]
fn a_changed_site_file_changes_only_the_pod_templates_of_its_role() -> TestResult {
    let before = objects()?;
    let after = build_cluster(
        &validated(json!({
            "dataNodes": {"configOverrides": {"hdfs-site.xml": {"dfs.datanode.du.reserved": "1"}}}
        }))?,
        &NameNodeState::default(),
    );
    fn hash<'a>(objects: &'a ClusterObjects, set: &str) -> Option<&'a str> {
        stateful_set(objects, set)
            .and_then(|set| set.spec.template.metadata.as_ref())
            .and_then(|meta| meta.annotations.as_ref())
            .and_then(|annotations| annotations.get(strata_model::build::CONFIG_HASH_ANNOTATION))
            .map(String::as_str)
    }
    for (set, changes) in [
        ("simple-hdfs-journalnode-default", false),
        ("simple-hdfs-namenode-default", false),
        ("simple-hdfs-datanode-default", true),
    ] {
        assert_eq!(hash(&before, set) != hash(&after, set), changes, "{set}");
    }
    Ok(())
}

#[test]
fn the_pdb_can_be_disabled_per_role() -> TestResult {
    let cluster = validated(json!({
        "dataNodes": {"roleConfig": {"podDisruptionBudget": {"enabled": false}}}
    }))?;
    let objects = build_cluster(&cluster, &NameNodeState::default());
    let pdbs: Vec<String> = objects.pdbs.iter().map(ResourceExt::name_any).collect();
    assert_eq!(pdbs, ["simple-hdfs-journalnode", "simple-hdfs-namenode"]);
    assert!(cluster.role(HdfsRole::DataNode).is_some());
    Ok(())
}

/// An OutOfMemoryError leaves a heap dump on the scratch volume sized for it, then
/// ends the JVM, so the kubelet restarts a daemon that may be broken.
#[test]
fn an_out_of_memory_error_dumps_the_heap_then_exits() {
    let opts = crate::build::container::jvm_opts(750);
    for flag in [
        "-Xmx750m",
        "-XX:+ExitOnOutOfMemoryError",
        "-XX:+HeapDumpOnOutOfMemoryError",
        "-XX:HeapDumpPath=/tmp",
    ] {
        assert!(
            opts.split_whitespace().any(|option| option == flag),
            "{flag} in {opts}"
        );
    }
}

/// With a ZooKeeper that serves TLS, each namenode pod mounts the discovery ConfigMap's
/// CA as a PEM truststore and the keystore Hadoop insists on, in its ZKFC alone; the
/// keystore's Secret is created once, its store never rendered.
#[test]
fn the_zkfc_reaches_a_tls_zookeeper_through_its_discovery_config_map() -> TestResult {
    let mut cluster = validated(json!({}))?;
    cluster.zookeeper = ZookeeperConnection {
        quorum: "zk.zk.svc.cluster.local:2282/znode-1".to_owned(),
        tls: true,
        config_map: "hdfs-znode".to_owned(),
        client_secret: None,
    };
    let objects = build_cluster(&cluster, &NameNodeState::default());
    let namenodes = pod_spec(stateful_set(&objects, "simple-hdfs-namenode-default"));
    let volumes = namenodes.volumes.unwrap_or_default();
    let ca = volumes
        .iter()
        .find(|volume| volume.name == "zookeeper-ca")
        .and_then(|volume| volume.config_map.clone())
        .unwrap_or_default();
    assert_eq!(ca.name, "hdfs-znode");
    let items: Vec<(String, String)> = ca
        .items
        .unwrap_or_default()
        .into_iter()
        .map(|item| (item.key, item.path))
        .collect();
    assert_eq!(items, [("ca.crt".to_owned(), "ca.pem".to_owned())]);
    assert!(volumes.iter().any(|volume| {
        volume.name == "zookeeper-client"
            && volume
                .secret
                .as_ref()
                .and_then(|secret| secret.secret_name.as_deref())
                == Some("simple-hdfs-zookeeper-client")
    }));
    for container in &namenodes.containers {
        let mounts: Vec<&str> = container
            .volume_mounts
            .iter()
            .flatten()
            .map(|mount| mount.name.as_str())
            .collect();
        let zkfc = container.name == "zkfc";
        assert_eq!(mounts.contains(&"zookeeper-ca"), zkfc, "{}", container.name);
        assert_eq!(
            mounts.contains(&"zookeeper-client"),
            zkfc,
            "{}",
            container.name
        );
    }
    let datanodes = pod_spec(stateful_set(&objects, "simple-hdfs-datanode-default"));
    assert!(
        !datanodes
            .volumes
            .unwrap_or_default()
            .iter()
            .any(|volume| volume.name.starts_with("zookeeper"))
    );
    let secret = objects.zookeeper_client.clone().ok_or_else(|| {
        ReconcileError::operator_bug("NoKeystore", "the keystore Secret is not built")
    })?;
    assert_eq!(
        secret.metadata.name.as_deref(),
        Some("simple-hdfs-zookeeper-client")
    );
    assert!(
        secret.data.is_none(),
        "the store is made when the Secret is created"
    );
    let rendered = cluster_objects(&cluster, &NameNodeState::default())
        .into_objects(false)
        .map_err(|error| ReconcileError::operator_bug("Erase", error.to_string()))?;
    let keystore = rendered
        .into_iter()
        .find(|object| object.name() == "simple-hdfs-zookeeper-client")
        .ok_or_else(|| ReconcileError::operator_bug("NoKeystore", "not applied"))?;
    assert!(keystore.mode().is_create_once());
    assert!(keystore.creation_value()["data"]["keystore.p12"].is_string());
    assert!(
        keystore.into_value().get("data").is_none(),
        "render shows no store"
    );
    Ok(())
}

/// A ZooKeeper that requires client certificates: the ZKFCs present the ZNode's,
/// only its store mounted, and the operator makes no keystore of its own.
#[test]
fn the_zkfc_presents_the_znodes_client_certificate() -> TestResult {
    let mut cluster = validated(json!({}))?;
    cluster.zookeeper = ZookeeperConnection {
        quorum: "zk.zk.svc.cluster.local:2282/znode-1".to_owned(),
        tls: true,
        config_map: "hdfs-znode".to_owned(),
        client_secret: Some("hdfs-znode-client-tls".to_owned()),
    };
    let objects = build_cluster(&cluster, &NameNodeState::default());
    assert!(objects.zookeeper_client.is_none());
    let namenodes = pod_spec(stateful_set(&objects, "simple-hdfs-namenode-default"));
    let client = namenodes
        .volumes
        .unwrap_or_default()
        .into_iter()
        .find(|volume| volume.name == "zookeeper-client")
        .and_then(|volume| volume.secret)
        .unwrap_or_default();
    assert_eq!(client.secret_name.as_deref(), Some("hdfs-znode-client-tls"));
    let items: Vec<(String, String)> = client
        .items
        .unwrap_or_default()
        .into_iter()
        .map(|item| (item.key, item.path))
        .collect();
    assert_eq!(
        items,
        [("keystore.p12".to_owned(), "keystore.p12".to_owned())]
    );
    Ok(())
}

#[test]
fn a_plaintext_zookeeper_needs_no_keystore() -> TestResult {
    assert!(objects()?.zookeeper_client.is_none());
    Ok(())
}

#[test]
fn monitoring_scrapes_every_daemons_prom_and_alerts_for_this_cluster_only() -> TestResult {
    let monitored = build_cluster(
        &validated(json!({"clusterConfig": {"monitoring": {
            "serviceMonitor": {"labels": {"release": "prometheus"}},
            "prometheusRule": {}
        }}}))?,
        &NameNodeState::default(),
    );
    let monitor = monitored
        .monitoring
        .service_monitor
        .expect("a ServiceMonitor when asked");
    let endpoints: Vec<(&str, &str)> = monitor
        .spec
        .endpoints
        .iter()
        .map(|endpoint| (endpoint.port.as_str(), endpoint.path.as_str()))
        .collect();
    assert_eq!(endpoints, [("http", "/prom")]);
    let rule = monitored
        .monitoring
        .prometheus_rule
        .expect("a PrometheusRule when asked");
    let group = &rule.spec.groups[0];
    assert!(
        group.rules.iter().all(|rule| rule
            .expr
            .contains(r#"namespace="default",app_kubernetes_io_name="hdfs",app_kubernetes_io_instance="simple-hdfs""#)),
        "{group:#?}"
    );

    assert_eq!(
        objects()?.monitoring,
        MonitoringObjects::default(),
        "nothing without clusterConfig.monitoring"
    );
    Ok(())
}
