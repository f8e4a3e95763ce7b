//! Objects of a built cluster: names, labels, ports, security, config and determinism.

use std::collections::{BTreeMap, BTreeSet};

use pretty_assertions::assert_eq;
use rstest::rstest;
use serde_json::{Value, json};
use strata_status::OperationState;

use super::*;
use crate::validate::tests::{three_servers, validated};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Every object of a cluster as the apply step would send it, keyed by `Kind/name`.
fn objects(spec: Value) -> Result<BTreeMap<String, Value>, Box<dyn std::error::Error>> {
    Ok(cluster_objects(&validated(spec)?)
        .into_objects(false)?
        .into_iter()
        .map(|object| (object.display_name(), object.into_value()))
        .collect())
}

fn object<'a>(objects: &'a BTreeMap<String, Value>, key: &str) -> Result<&'a Value, String> {
    objects.get(key).ok_or_else(|| format!("{key} missing"))
}

#[test]
fn simple_cluster_has_exactly_the_expected_objects() -> TestResult {
    let objects = objects(three_servers())?;
    let names: Vec<&str> = objects.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "ConfigMap/simple-zk",
            "ConfigMap/simple-zk-server-default",
            "PodDisruptionBudget/simple-zk-server",
            "Service/simple-zk",
            "Service/simple-zk-server-default",
            "Service/simple-zk-server-default-metrics",
            "StatefulSet/simple-zk-server-default",
        ]
    );
    for (key, value) in &objects {
        let metadata = &value["metadata"];
        assert_eq!(metadata["namespace"], "data", "{key}");
        assert!(metadata.get("ownerReferences").is_none(), "{key}");
        let labels = &metadata["labels"];
        assert_eq!(
            labels["app.kubernetes.io/managed-by"], "zookeeper-operator",
            "{key}"
        );
        assert_eq!(labels["app.kubernetes.io/name"], "zookeeper", "{key}");
        assert_eq!(labels["app.kubernetes.io/instance"], "simple-zk", "{key}");
        assert_eq!(labels["app.kubernetes.io/version"], "3.9.5", "{key}");
    }
    Ok(())
}

#[rstest]
#[case::headless("Service/simple-zk-server-default", json!({"clusterIP": "None", "publishNotReadyAddresses": true}), &[("client-tls", 2282), ("quorum", 2888), ("leader-election", 3888)])]
#[case::metrics("Service/simple-zk-server-default-metrics", json!({"clusterIP": "None", "publishNotReadyAddresses": true}), &[("metrics", 7000)])]
#[case::client("Service/simple-zk", json!({"type": "ClusterIP"}), &[("client-tls", 2282)])]
fn services_expose_the_right_ports(
    #[case] key: &str,
    #[case] expected_spec: Value,
    #[case] ports: &[(&str, u16)],
) -> TestResult {
    let objects = objects(three_servers())?;
    let spec = &object(&objects, key)?["spec"];
    for (field, value) in expected_spec.as_object().into_iter().flatten() {
        assert_eq!(&spec[field], value, "{key} {field}");
    }
    let actual: Vec<(String, u64)> = spec["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|port| {
            (
                port["name"].as_str().unwrap_or_default().to_owned(),
                port["port"].as_u64().unwrap_or_default(),
            )
        })
        .collect();
    let expected: Vec<(String, u64)> = ports
        .iter()
        .map(|(name, port)| ((*name).to_owned(), u64::from(*port)))
        .collect();
    assert_eq!(actual, expected);
    Ok(())
}

#[test]
fn client_service_selects_every_server_and_metrics_are_annotated() -> TestResult {
    let objects = objects(three_servers())?;
    assert_eq!(
        object(&objects, "Service/simple-zk")?["spec"]["selector"],
        json!({"app.kubernetes.io/component": "server", "app.kubernetes.io/instance": "simple-zk", "app.kubernetes.io/name": "zookeeper"})
    );
    let annotations =
        &object(&objects, "Service/simple-zk-server-default-metrics")?["metadata"]["annotations"];
    assert_eq!(annotations["prometheus.io/scrape"], "true");
    assert_eq!(annotations["prometheus.io/port"], "7000");
    Ok(())
}

#[test]
fn discovery_config_map_points_at_the_client_service() -> TestResult {
    let objects = objects(three_servers())?;
    let data = &object(&objects, "ConfigMap/simple-zk")?["data"];
    assert_eq!(data["ZOOKEEPER"], "simple-zk.data.svc.cluster.local:2282");
    assert_eq!(data["ZOOKEEPER_CHROOT"], "/");
    assert_eq!(data["ZOOKEEPER_TLS"], "true", "TLS is on by default");
    Ok(())
}

#[test]
fn stateful_set_runs_zookeeper_with_least_privilege() -> TestResult {
    let objects = objects(three_servers())?;
    let spec = &object(&objects, "StatefulSet/simple-zk-server-default")?["spec"];
    assert_eq!(spec["replicas"], 3);
    assert_eq!(spec["serviceName"], "simple-zk-server-default");
    assert_eq!(spec["podManagementPolicy"], "Parallel");
    assert_eq!(
        spec["selector"]["matchLabels"]["app.kubernetes.io/role-group"],
        "default"
    );
    assert!(
        spec["selector"]["matchLabels"]
            .get("app.kubernetes.io/version")
            .is_none()
    );
    let claim = &spec["volumeClaimTemplates"][0];
    assert_eq!(claim["metadata"]["name"], "data");
    assert_eq!(claim["spec"]["accessModes"], json!(["ReadWriteOnce"]));
    assert_eq!(claim["spec"]["resources"]["requests"]["storage"], "1Gi");

    let pod = &spec["template"]["spec"];
    assert_eq!(pod["terminationGracePeriodSeconds"], 120);
    assert_eq!(
        pod["securityContext"],
        json!({"fsGroup": 1000, "fsGroupChangePolicy": "OnRootMismatch", "runAsGroup": 1000, "runAsNonRoot": true, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}})
    );
    let container_security = json!({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": true, "runAsNonRoot": true});
    let init = &pod["initContainers"][0];
    assert_eq!(init["securityContext"], container_security);
    assert_eq!(
        init["volumeMounts"],
        json!([{"mountPath": "/data", "name": "data"}])
    );
    assert!(
        init["command"][2]
            .as_str()
            .unwrap_or_default()
            .contains("myid_offset=1")
    );

    let main = &pod["containers"][0];
    assert_eq!(main["name"], "zookeeper");
    assert_eq!(main["image"], "docker.io/library/zookeeper:3.9.5");
    assert_eq!(main["imagePullPolicy"], "IfNotPresent");
    assert_eq!(main["command"], json!(["zkServer.sh", "start-foreground"]));
    assert_eq!(main["securityContext"], container_security);
    assert_eq!(
        main["env"],
        json!([
            {"name": "SERVER_JVMFLAGS", "value": "-XX:HeapDumpPath=/tmp -Dsun.net.inetaddr.ttl=10 -Dsun.net.inetaddr.negative.ttl=1"},
            {"name": "ZK_SERVER_HEAP", "value": "768"},
            {"name": "ZOOCFGDIR", "value": "/conf"},
            {"name": "ZOO_LOG_DIR", "value": "/logs"}
        ])
    );
    let size_limit = |volume: &str| {
        pod["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|found| found["name"] == volume)
            .map(|found| found["emptyDir"]["sizeLimit"].clone())
    };
    assert_eq!(
        size_limit("tmp"),
        Some(json!("832Mi")),
        "room for a heap dump of the 768 MiB heap"
    );
    assert_eq!(size_limit("logs"), Some(json!("64Mi")));
    let ports: Vec<u64> = main["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["containerPort"].as_u64())
        .collect();
    assert_eq!(ports, [2282, 2888, 3888, 7000], "TLS is on by default");
    assert_eq!(
        main["resources"]["limits"],
        json!({"cpu": "1", "memory": "1Gi"})
    );
    assert_eq!(
        main["resources"]["requests"],
        json!({"cpu": "250m", "memory": "1Gi"})
    );
    let readiness = main["readinessProbe"]["exec"]["command"][2]
        .as_str()
        .unwrap_or_default();
    assert!(
        readiness.contains("/dev/tcp/127.0.0.1/8080")
            && readiness.contains("GET /commands/srvr")
            && readiness.contains("(leader|follower|observer|standalone)"),
        "with TLS on, the admin server on loopback: {readiness}"
    );
    let liveness = main["livenessProbe"]["exec"]["command"][2]
        .as_str()
        .unwrap_or_default();
    assert!(
        liveness.contains("GET /commands/ruok") && liveness.contains(" 200 "),
        "{liveness}"
    );
    let mounts: Vec<(&str, &str, bool)> = main["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            (
                m["name"].as_str().unwrap_or_default(),
                m["mountPath"].as_str().unwrap_or_default(),
                m["readOnly"] == true,
            )
        })
        .collect();
    assert_eq!(
        mounts,
        [
            ("config", "/conf", true),
            ("data", "/data", false),
            ("tmp", "/tmp", false),
            ("logs", "/logs", false),
            ("tls", "/tls", true),
            ("keystore", "/keystore", true)
        ]
    );
    assert_eq!(
        pod["volumes"][0]["configMap"]["name"],
        "simple-zk-server-default"
    );
    assert!(pod["volumes"][1]["emptyDir"].is_object() && pod["volumes"][2]["emptyDir"].is_object());
    Ok(())
}

fn server_lines(config_map: &ConfigMap) -> Vec<String> {
    config_map
        .data
        .as_ref()
        .and_then(|data| data.get(config_map::ZOO_CFG))
        .map(|zoo_cfg| {
            zoo_cfg
                .lines()
                .filter(|line| line.starts_with("server."))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn every_zoo_cfg_lists_every_replica_of_every_group_with_unique_ids() -> TestResult {
    let built = build_cluster(&validated(json!({"servers": {"roleGroups": {
        "primary": {"replicas": 3, "config": {"myidOffset": 1}},
        "secondary": {"replicas": 2, "config": {"myidOffset": 10}}
    }}}))?);
    let all: Vec<Vec<String>> = built
        .role_groups
        .iter()
        .map(|group| server_lines(&group.config_map))
        .collect();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0], all[1]);
    let line = |id: u32, group: &str, ordinal: u32| {
        format!(
            "server.{id}=simple-zk-server-{group}-{ordinal}.simple-zk-server-{group}.data.svc.cluster.local:2888:3888"
        )
    };
    assert_eq!(
        all[0],
        [
            line(1, "primary", 0),
            line(2, "primary", 1),
            line(3, "primary", 2),
            line(10, "secondary", 0),
            line(11, "secondary", 1),
        ]
    );
    let ids: BTreeSet<&str> = all[0]
        .iter()
        .filter_map(|line| line.split('=').next())
        .collect();
    assert_eq!(ids.len(), 5);
    let offsets: Vec<String> = built
        .role_groups
        .iter()
        .filter_map(|group| group.stateful_set.spec.template.spec.as_ref())
        .filter_map(|pod| {
            pod.init_containers
                .as_ref()?
                .first()?
                .command
                .as_ref()?
                .get(2)
                .cloned()
        })
        .filter_map(|script| {
            script
                .lines()
                .find(|line| line.starts_with("myid_offset="))
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(offsets, ["myid_offset=1", "myid_offset=10"]);
    Ok(())
}

/// Every object of the three-server cluster as applied under `operation`, by `Kind/name`.
fn objects_under(
    operation: &OperationState,
) -> Result<BTreeMap<String, Value>, Box<dyn std::error::Error>> {
    Ok(cluster_objects(&validated(three_servers())?)
        .into_objects(operation.is_stopped())?
        .into_iter()
        .map(|object| (object.display_name(), object.into_value()))
        .collect())
}

#[test]
fn stopped_cluster_keeps_claims_services_and_config() -> TestResult {
    let stopped = objects_under(&OperationState::resolve(false, true, &BTreeMap::new()))?;
    let running = objects_under(&OperationState::default())?;
    let sts = "StatefulSet/simple-zk-server-default";
    let spec = &object(&stopped, sts)?["spec"];
    assert_eq!(spec["replicas"], 0);
    assert_eq!(
        spec["volumeClaimTemplates"].as_array().map(Vec::len),
        Some(1)
    );
    assert_eq!(
        spec["persistentVolumeClaimRetentionPolicy"]["whenScaled"],
        "Retain"
    );
    for unchanged in [
        "ConfigMap/simple-zk-server-default",
        "Service/simple-zk-server-default",
        "Service/simple-zk",
    ] {
        assert_eq!(
            object(&stopped, unchanged)?,
            object(&running, unchanged)?,
            "{unchanged}"
        );
    }
    Ok(())
}

#[rstest]
#[case::running(false, BTreeMap::new(), 3)]
#[case::stopped_by_spec(true, BTreeMap::new(), 0)]
#[case::stopped_by_annotation(false, BTreeMap::from([("operator-command".to_owned(), "Stopped".to_owned())]), 0)]
#[case::paused_keeps_replicas(false, BTreeMap::from([("operator-command".to_owned(), "Paused".to_owned())]), 3)]
fn stopping_sets_replicas_to_zero_but_keeps_the_ensemble(
    #[case] spec_stopped: bool,
    #[case] annotations: BTreeMap<String, String>,
    #[case] replicas: u16,
) -> TestResult {
    let objects = objects_under(&OperationState::resolve(false, spec_stopped, &annotations))?;
    assert_eq!(
        object(&objects, "StatefulSet/simple-zk-server-default")?["spec"]["replicas"],
        replicas
    );
    let zoo_cfg = object(&objects, "ConfigMap/simple-zk-server-default")?["data"]["zoo.cfg"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(
        zoo_cfg
            .lines()
            .filter(|line| line.starts_with("server."))
            .count(),
        3
    );
    Ok(())
}

#[rstest]
#[case::default_budget(json!({}), Some(1))]
#[case::custom_max_unavailable(json!({"podDisruptionBudget": {"maxUnavailable": 2}}), Some(2))]
#[case::disabled(json!({"podDisruptionBudget": {"enabled": false}}), None)]
fn pdb_follows_the_role_config(
    #[case] role_config: Value,
    #[case] max_unavailable: Option<i64>,
) -> TestResult {
    let objects = objects(
        json!({"servers": {"roleConfig": role_config, "roleGroups": {"default": {"replicas": 3}}}}),
    )?;
    let pdb = objects.get("PodDisruptionBudget/simple-zk-server");
    assert_eq!(
        pdb.and_then(|pdb| pdb["spec"]["maxUnavailable"].as_i64()),
        max_unavailable
    );
    if let Some(pdb) = pdb {
        assert_eq!(
            pdb["spec"]["selector"]["matchLabels"],
            json!({"app.kubernetes.io/component": "server", "app.kubernetes.io/instance": "simple-zk", "app.kubernetes.io/name": "zookeeper"})
        );
    }
    Ok(())
}

fn config_hash_of(spec: Value) -> Result<Value, Box<dyn std::error::Error>> {
    let objects = objects(spec)?;
    Ok(object(&objects, "StatefulSet/simple-zk-server-default")?["spec"]["template"]["metadata"]["annotations"]
        [statefulset::CONFIG_HASH_ANNOTATION]
        .clone())
}

#[rstest]
#[case::tick_time(json!({"config": {"tickTime": 3000}}))]
#[case::zoo_cfg_override(json!({"configOverrides": {"zoo.cfg": {"maxClientCnxns": "10"}}}))]
#[case::log_level(json!({"configOverrides": {"logback.xml": {"ROOT": "DEBUG"}}}))]
#[case::replicas(json!({"replicas": 5}))]
fn config_changes_change_the_config_hash(#[case] change: Value) -> TestResult {
    let mut group = json!({"replicas": 3});
    for (key, value) in change.as_object().into_iter().flatten() {
        group[key] = value.clone();
    }
    let changed = config_hash_of(json!({"servers": {"roleGroups": {"default": group}}}))?;
    let original = config_hash_of(three_servers())?;
    assert!(
        original.as_str().is_some_and(|hash| hash.len() == 64),
        "{original}"
    );
    assert_ne!(changed, original);
    Ok(())
}

#[test]
fn resources_and_timeout_changes_keep_the_config_hash() -> TestResult {
    let changed = config_hash_of(
        json!({"servers": {"roleGroups": {"default": {"replicas": 3, "config": {"resources": {"cpu": {"max": "2"}}, "gracefulShutdownTimeout": "5m"}}}}}),
    )?;
    assert_eq!(changed, config_hash_of(three_servers())?);
    Ok(())
}

#[test]
fn same_input_gives_identical_output() -> TestResult {
    let spec = json!({"servers": {
        "configOverrides": {"zoo.cfg": {"b": "1", "a": "2"}},
        "envOverrides": {"Z": "1", "A": "2"},
        "roleGroups": {"b": {"replicas": 2, "config": {"myidOffset": 5}}, "a": {"replicas": 3}}
    }});
    let first = serde_json::to_string(&objects(spec.clone())?)?;
    let second = serde_json::to_string(&objects(spec)?)?;
    assert_eq!(first, second);
    Ok(())
}

#[test]
fn overrides_are_applied_last() -> TestResult {
    let objects = objects(json!({"servers": {
        "envOverrides": {"ZK_SERVER_HEAP": "2000", "EXTRA": "1"},
        "podOverrides": {"spec": {
            "nodeSelector": {"disk": "ssd"},
            "terminationGracePeriodSeconds": 7,
            "containers": [{"name": "zookeeper", "resources": {"limits": {"cpu": "3"}}}]
        }},
        "roleGroups": {"default": {"replicas": 3, "envOverrides": {"EXTRA": "2"}}}
    }}))?;
    let pod =
        &object(&objects, "StatefulSet/simple-zk-server-default")?["spec"]["template"]["spec"];
    assert_eq!(pod["nodeSelector"], json!({"disk": "ssd"}));
    assert_eq!(pod["terminationGracePeriodSeconds"], 7);
    let main = &pod["containers"][0];
    assert_eq!(main["resources"]["limits"]["cpu"], "3");
    assert_eq!(main["resources"]["limits"]["memory"], "1Gi");
    assert_eq!(main["command"], json!(["zkServer.sh", "start-foreground"]));
    let env: BTreeMap<&str, &str> = main["env"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|var| Some((var["name"].as_str()?, var["value"].as_str()?)))
        .collect();
    assert_eq!(env.get("ZK_SERVER_HEAP"), Some(&"2000"));
    assert_eq!(env.get("EXTRA"), Some(&"2"));
    assert_eq!(env.get("ZOOCFGDIR"), Some(&"/conf"));
    Ok(())
}

/// Security review, finding 30: the alert on a cluster with no scraped pod goes with a
/// running cluster only.
#[rstest]
#[case::running(false, &["zookeeper", "targets"])]
#[case::stopped(true, &["zookeeper"])]
fn the_alert_on_no_scraped_pod_is_left_out_while_the_cluster_is_stopped(
    #[case] stopped: bool,
    #[case] groups: &[&str],
) -> TestResult {
    let mut spec = three_servers();
    spec["clusterConfig"]["monitoring"] = json!({"prometheusRule": {}});
    let objects: BTreeMap<String, Value> = cluster_objects(&validated(spec)?)
        .into_objects(stopped)?
        .into_iter()
        .map(|object| (object.display_name(), object.into_value()))
        .collect();
    let rule = object(&objects, "PrometheusRule/simple-zk")?;
    let names: Vec<&str> = rule["spec"]["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|group| group["name"].as_str())
        .collect();
    assert_eq!(names, groups);
    Ok(())
}
