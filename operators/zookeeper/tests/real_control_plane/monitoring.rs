//! `clusterConfig.monitoring` on the real API server: without the Prometheus
//! Operator's CRDs, a Warning and everything else applied; with them (the real CRDs of
//! the pinned release, whose schemas validate what the operator sends), the
//! ServiceMonitor selects the metrics Service and the PrometheusRule holds the alerts;
//! asked for no more, both are pruned.

use kube::api::{Api, PostParams};
use strata_model::build::{
    ContainerPort, PrometheusScrape, ScrapeScheme, metrics_service, object_meta,
};
use strata_model::monitoring::{
    BasicAuth, CaSource, KeyReference, Monitoring, PrometheusRuleSettings, ScrapeSecurity,
    ServiceMonitorSettings, TlsConfig, service_monitor,
};
use strata_testing::control_plane::{ControlPlane, ControlPlaneOptions, wait_until};
use zookeeper_operator::crd::ZookeeperCluster;

use zookeeper_operator::OPERATOR_NAME;

use crate::{Cluster, TIMEOUT, condition, run_operator_as, stored, zookeeper_cluster};

// Multi-threaded: `kubectl` blocks this thread while the operator runs on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane and the Prometheus Operator CRDs; run by cargo xtask test"]
async fn monitoring_objects_are_applied_only_where_the_cluster_serves_their_kinds() {
    let cluster = Cluster::start(ControlPlaneOptions::default()).await;
    let Cluster {
        control_plane,
        client,
    } = &cluster;
    let operator_client = control_plane
        .cluster_admin_client("default", OPERATOR_NAME)
        .await
        .expect("the operator's own identity");
    let operator = run_operator_as(operator_client.clone());
    let mut simple: ZookeeperCluster = zookeeper_cluster("simple", 1);
    simple.spec.cluster_config.monitoring = Monitoring {
        service_monitor: Some(ServiceMonitorSettings {
            labels: [("release".to_owned(), "kube-prometheus-stack".to_owned())].into(),
            interval: Some("30s".to_owned()),
        }),
        prometheus_rule: Some(PrometheusRuleSettings::default()),
    };
    Api::<ZookeeperCluster>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &simple)
        .await
        .expect("the cluster is created");

    // Without the CRDs: everything else is applied, and the Warning says what is not.
    control_plane
        .kubectl(&[
            "wait",
            "zookeepercluster/simple",
            "--for=condition=Available=True",
            "--timeout=90s",
        ])
        .unwrap_or_else(|error| panic!("the cluster becomes Available: {error}"));
    let warning = wait_until("the CrdNotInstalled Warning", TIMEOUT, async || {
        let warning = condition(control_plane, "Warning");
        (warning["reason"] == "CrdNotInstalled").then_some(warning)
    })
    .await;
    let message = warning["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("ServiceMonitor/simple, PrometheusRule/simple not applied"),
        "{message}"
    );
    assert!(
        stored(control_plane, "service/simple-server-default-metrics").is_some(),
        "the metrics Service is applied"
    );

    // With the CRDs, and the operator restarted to watch the kinds.
    control_plane
        .install_crds(&strata_testing::prometheus::operator_crds())
        .await
        .expect("the Prometheus Operator's CRDs are established");
    drop(operator);
    let _operator = run_operator_as(operator_client);
    let monitor = wait_until("the ServiceMonitor", TIMEOUT, async || {
        stored(
            control_plane,
            "servicemonitors.monitoring.coreos.com/simple",
        )
    })
    .await;
    assert_eq!(
        monitor["metadata"]["labels"]["release"],
        "kube-prometheus-stack"
    );
    assert_eq!(
        monitor["spec"]["endpoints"],
        serde_json::json!([{"port": "metrics", "path": "/metrics", "scheme": "http", "interval": "30s"}])
    );
    let selector = monitor["spec"]["selector"]["matchLabels"]
        .as_object()
        .expect("a label selector")
        .iter()
        .map(|(key, value)| format!("{key}={}", value.as_str().unwrap_or_default()))
        .collect::<Vec<_>>()
        .join(",");
    let selected = control_plane
        .kubectl(&["get", "services", "-l", &selector, "-o", "name"])
        .expect("the selected Services");
    assert_eq!(selected.trim(), "service/simple-server-default-metrics");
    let rule = wait_until("the PrometheusRule", TIMEOUT, async || {
        stored(
            control_plane,
            "prometheusrules.monitoring.coreos.com/simple",
        )
    })
    .await;
    let alerts: Vec<&str> = rule["spec"]["groups"][0]["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .filter_map(|rule| rule["alert"].as_str())
        .collect();
    // One server runs standalone: it is alerted on when down, never for having no leader.
    assert!(alerts.contains(&"ZooKeeperDown"), "{alerts:?}");
    assert!(!alerts.contains(&"ZooKeeperNoLeader"), "{alerts:?}");
    wait_until("the Warning to clear", TIMEOUT, async || {
        (condition(control_plane, "Warning")["status"] == "False").then_some(())
    })
    .await;

    the_crd_takes_an_https_scrape_with_credentials(control_plane);

    // Asked for no more: both are pruned.
    control_plane
        .kubectl(&[
            "patch",
            "zookeepercluster/simple",
            "--type=json",
            "-p",
            r#"[{"op": "remove", "path": "/spec/clusterConfig/monitoring"}]"#,
        ])
        .expect("monitoring is removed from the spec");
    wait_until("the monitoring objects to be pruned", TIMEOUT, async || {
        (stored(
            control_plane,
            "servicemonitors.monitoring.coreos.com/simple",
        )
        .is_none()
            && stored(
                control_plane,
                "prometheusrules.monitoring.coreos.com/simple",
            )
            .is_none())
        .then_some(())
    })
    .await;
}

/// The HTTPS scrape Trino's ServiceMonitor asks for (the CA from a ConfigMap, the name
/// every certificate covers, credentials from a Secret), as the shared builder writes
/// it, applied with strict field validation: the real CRD's schema takes every field,
/// and stores it unchanged (a field it did not know would be refused, or pruned by the
/// operator's own applies).
fn the_crd_takes_an_https_scrape_with_credentials(control_plane: &ControlPlane) {
    let labels = || {
        [(
            "app.kubernetes.io/instance".to_owned(),
            "secured".to_owned(),
        )]
        .into()
    };
    let service = metrics_service(
        object_meta("secured-metrics", "default", labels()),
        labels(),
        PrometheusScrape {
            port: ContainerPort {
                name: "https",
                number: 8443,
            },
            path: "/metrics",
            scheme: ScrapeScheme::Https,
        },
    );
    let key = |name: &str, key: &str| KeyReference {
        name: name.to_owned(),
        key: key.to_owned(),
    };
    let monitor = service_monitor(
        object_meta("secured", "default", labels()),
        labels(),
        &ServiceMonitorSettings::default(),
        &[&service],
        &ScrapeSecurity {
            tls: Some(TlsConfig {
                ca: CaSource {
                    config_map: key("secured", "ca.crt"),
                },
                server_name: "secured-coordinator.default.svc.cluster.local".to_owned(),
            }),
            basic_auth: Some(BasicAuth {
                username: key("secured-metrics", "username"),
                password: key("secured-metrics", "password"),
            }),
        },
    );
    let mut sent = serde_json::to_value(&monitor).expect("JSON");
    sent["apiVersion"] = "monitoring.coreos.com/v1".into();
    sent["kind"] = "ServiceMonitor".into();
    let file = std::env::temp_dir().join(format!("secured-monitor-{}.json", std::process::id()));
    std::fs::write(&file, sent.to_string()).expect("the manifest is written");
    let applied = control_plane.kubectl(&[
        "apply",
        "--server-side",
        "--validate=strict",
        "-f",
        file.to_str().unwrap_or_default(),
    ]);
    std::fs::remove_file(&file).ok();
    applied.unwrap_or_else(|error| panic!("the real CRD refuses the HTTPS scrape: {error}"));
    let stored = stored(
        control_plane,
        "servicemonitors.monitoring.coreos.com/secured",
    )
    .expect("the ServiceMonitor is stored");
    assert_eq!(stored["spec"]["endpoints"], sent["spec"]["endpoints"]);
    assert_eq!(
        stored["spec"]["endpoints"][0]["tlsConfig"]["serverName"],
        "secured-coordinator.default.svc.cluster.local"
    );
}
