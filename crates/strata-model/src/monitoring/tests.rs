use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Service;
use pretty_assertions::assert_eq;
use rstest::rstest;

use super::*;
use crate::build::{ContainerPort, PrometheusScrape, ScrapeScheme, metrics_service, object_meta};

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
        .collect()
}

fn metrics(name: &str, port: ContainerPort, path: &'static str) -> Service {
    metrics_service(
        object_meta(name, "prod", labels(&[(INSTANCE_LABEL, "simple")])),
        labels(&[(INSTANCE_LABEL, "simple")]),
        PrometheusScrape {
            port,
            path,
            scheme: ScrapeScheme::Http,
        },
    )
}

#[rstest]
#[case::nothing_asked(Monitoring::default(), Ok(()))]
#[case::a_release_label(
    Monitoring {
        service_monitor: Some(ServiceMonitorSettings {
            labels: labels(&[("release", "kube-prometheus-stack")]),
            interval: Some("1m30s".to_owned()),
        }),
        prometheus_rule: Some(PrometheusRuleSettings { labels: labels(&[("release", "prom")]) }),
    },
    Ok(())
)]
#[case::an_interval_without_unit(
    Monitoring {
        service_monitor: Some(ServiceMonitorSettings { interval: Some("30".to_owned()), ..Default::default() }),
        prometheus_rule: None,
    },
    Err("clusterConfig.monitoring.serviceMonitor.interval: \"30\" is not a Prometheus duration such as 30s or 1m30s")
)]
#[case::units_out_of_order(
    Monitoring {
        service_monitor: Some(ServiceMonitorSettings { interval: Some("30s1m".to_owned()), ..Default::default() }),
        prometheus_rule: None,
    },
    Err("clusterConfig.monitoring.serviceMonitor.interval: \"30s1m\" is not a Prometheus duration such as 30s or 1m30s")
)]
#[case::a_label_value_with_a_space(
    Monitoring {
        service_monitor: None,
        prometheus_rule: Some(PrometheusRuleSettings { labels: labels(&[("team", "data platform")]) }),
    },
    Err("clusterConfig.monitoring.prometheusRule.labels: ")
)]
#[case::a_label_key_with_a_space(
    Monitoring {
        service_monitor: Some(ServiceMonitorSettings { labels: labels(&[("my team", "data")]), interval: None }),
        prometheus_rule: None,
    },
    Err("clusterConfig.monitoring.serviceMonitor.labels: \"my team\" is not a label key")
)]
fn monitoring_settings_are_checked_before_anything_is_applied(
    #[case] monitoring: Monitoring,
    #[case] expected: Result<(), &str>,
) {
    let checked = monitoring.check("clusterConfig.monitoring");
    match expected {
        Ok(()) => assert_eq!(checked, Ok(())),
        Err(start) => {
            let message = checked.expect_err("refused");
            assert!(message.starts_with(start), "{message}");
        }
    }
}

#[test]
fn the_service_monitor_scrapes_each_distinct_port_and_path_of_the_metrics_services() {
    let namenode = metrics(
        "simple-namenode-default-metrics",
        ContainerPort {
            name: "http",
            number: 9870,
        },
        "/prom",
    );
    let datanode = metrics(
        "simple-datanode-default-metrics",
        ContainerPort {
            name: "http",
            number: 9870,
        },
        "/prom",
    );
    let other = metrics(
        "other-metrics",
        ContainerPort {
            name: "metrics",
            number: 7000,
        },
        "/metrics",
    );
    let mut not_metrics = other.clone();
    not_metrics.metadata.labels = Some(labels(&[(INSTANCE_LABEL, "simple")]));

    let monitor = service_monitor(
        object_meta(
            "simple",
            "prod",
            labels(&[(INSTANCE_LABEL, "simple"), ("release", "ours")]),
        ),
        labels(&[(INSTANCE_LABEL, "simple")]),
        &ServiceMonitorSettings {
            labels: labels(&[("release", "theirs"), ("team", "data")]),
            interval: Some("30s".to_owned()),
        },
        &[&namenode, &datanode, &other, &not_metrics],
        &ScrapeSecurity::default(),
    );

    assert_eq!(
        monitor.spec.endpoints,
        vec![
            Endpoint {
                port: "http".to_owned(),
                path: "/prom".to_owned(),
                scheme: "http".to_owned(),
                interval: Some("30s".to_owned()),
                ..Endpoint::default()
            },
            Endpoint {
                port: "metrics".to_owned(),
                path: "/metrics".to_owned(),
                scheme: "http".to_owned(),
                interval: Some("30s".to_owned()),
                ..Endpoint::default()
            },
        ]
    );
    assert_eq!(
        monitor.spec.selector.match_labels,
        Some(labels(&[
            (INSTANCE_LABEL, "simple"),
            (SCRAPE_LABEL, "true")
        ]))
    );
    assert_eq!(monitor.spec.namespace_selector.match_names, vec!["prod"]);
    assert_eq!(
        monitor.metadata.labels,
        Some(labels(&[
            (INSTANCE_LABEL, "simple"),
            ("release", "ours"),
            ("team", "data")
        ])),
        "the operator's own labels win over the user's"
    );
}

#[test]
fn a_metrics_service_carries_the_scrape_mark_as_a_label_too() {
    let service = metrics(
        "simple-metrics",
        ContainerPort {
            name: "metrics",
            number: 7000,
        },
        "/metrics",
    );
    assert_eq!(
        service
            .metadata
            .labels
            .unwrap()
            .get(SCRAPE_LABEL)
            .map(String::as_str),
        Some("true")
    );
}

#[test]
fn alerts_select_one_cluster_by_namespace_product_and_instance() {
    assert_eq!(
        cluster_matchers("prod", "zookeeper", "simple"),
        r#"namespace="prod",app_kubernetes_io_name="zookeeper",app_kubernetes_io_instance="simple""#
    );
    let rule = AlertRule::new(
        "ZooKeeperDown",
        Severity::Critical,
        "1m",
        "x > 0".to_owned(),
        "summary",
        "description",
    );
    assert_eq!(rule.labels, labels(&[("severity", "critical")]));
    let value = serde_json::to_value(&rule).unwrap();
    assert_eq!(value["for"], "1m");
}

#[test]
fn a_rule_group_names_the_metrics_its_selectors_read() {
    let group = RuleGroup {
        name: "product".to_owned(),
        rules: vec![AlertRule::new(
            "Down",
            Severity::Critical,
            "1m",
            r#"count(jvm_info{a="b"}) > 0 unless on() count(leader_uptime{a="b"}) > 0 or max by (pod) (x:y{a="b"} / jvm_info{a="b"})"#.to_owned(),
            "s",
            "d",
        )],
    };
    assert_eq!(
        group.metric_names(),
        vec!["jvm_info", "leader_uptime", "x:y"]
    );
}

#[test]
fn scrape_security_applies_to_every_endpoint() {
    let https = ContainerPort {
        name: "https",
        number: 8443,
    };
    let scheme = |mut service: Service| {
        service
            .metadata
            .annotations
            .as_mut()
            .unwrap()
            .insert(SCHEME_ANNOTATION.to_owned(), "https".to_owned());
        service
    };
    let coordinator = scheme(metrics("t-coordinator-default-metrics", https, "/metrics"));
    let workers = scheme(metrics("t-worker-default-metrics", https, "/metrics"));
    let secret_key = |key: &str| KeyReference {
        name: "t-metrics".to_owned(),
        key: key.to_owned(),
    };
    let security = ScrapeSecurity {
        tls: Some(TlsConfig {
            ca: CaSource {
                config_map: KeyReference {
                    name: "t".to_owned(),
                    key: "ca.crt".to_owned(),
                },
            },
            server_name: "t-coordinator.prod.svc.cluster.local".to_owned(),
        }),
        basic_auth: Some(BasicAuth {
            username: secret_key("username"),
            password: secret_key("password"),
        }),
    };

    let monitor = service_monitor(
        object_meta("t", "prod", labels(&[(INSTANCE_LABEL, "t")])),
        labels(&[(INSTANCE_LABEL, "t")]),
        &ServiceMonitorSettings::default(),
        &[&workers, &coordinator],
        &security,
    );

    assert_eq!(
        monitor.spec.endpoints,
        vec![Endpoint {
            port: "https".to_owned(),
            path: "/metrics".to_owned(),
            scheme: "https".to_owned(),
            interval: None,
            tls_config: security.tls.clone(),
            basic_auth: security.basic_auth.clone(),
        }]
    );
    let json = serde_json::to_value(&monitor.spec.endpoints[0]).unwrap();
    assert_eq!(json["tlsConfig"]["ca"]["configMap"]["key"], "ca.crt");
    assert_eq!(
        json["tlsConfig"]["serverName"],
        "t-coordinator.prod.svc.cluster.local"
    );
    assert_eq!(json["basicAuth"]["password"]["name"], "t-metrics");
}

#[test]
fn a_stopped_clusters_rule_keeps_every_alert_but_the_one_on_having_no_pod() {
    let matchers = cluster_matchers("prod", "zookeeper", "simple");
    let other = RuleGroup {
        name: "zookeeper".to_owned(),
        rules: vec![AlertRule::new(
            "ZooKeeperNoLeader",
            Severity::Critical,
            "1m",
            format!("count(up{{{matchers}}})"),
            "summary",
            "description",
        )],
    };
    let mut rule = prometheus_rule(
        object_meta("simple", "prod", BTreeMap::new()),
        &PrometheusRuleSettings::default(),
        vec![other.clone(), targets_group("ZooKeeper", &matchers)],
    );
    assert_eq!(
        rule.spec.groups[1].rules[0].expr,
        "absent(up{namespace=\"prod\",app_kubernetes_io_name=\"zookeeper\",app_kubernetes_io_instance=\"simple\"})"
    );
    rule.without_targets_group();
    assert_eq!(rule.spec.groups, vec![other]);
}
