//! The metrics Services and the ServiceMonitor as the built objects show them: the
//! scrape goes where Trino serves `/metrics`, checked and authenticated the way the
//! cluster's TLS and authentication demand.

use pretty_assertions::assert_eq;
use rstest::rstest;
use serde_json::{Value, json};
use strata_operator::error::ReconcileError;
use strata_testing::manifests::named;

use super::{model, objects};

const MONITORED: &str = r#"{"monitoring": {"serviceMonitor": {}, "prometheusRule": {}}}"#;

fn cluster_config(extra: Value) -> Value {
    let mut config: Value = serde_json::from_str(MONITORED).unwrap_or_default();
    if let (Some(config), Some(extra)) = (config.as_object_mut(), extra.as_object()) {
        config.extend(extra.clone());
    }
    json!({"clusterConfig": config})
}

#[rstest]
#[case::tls_and_authentication(
    json!({"authentication": [{"password": {"secretName": "users"}}]}),
    json!({
        "port": "https", "path": "/metrics", "scheme": "https",
        "tlsConfig": {
            "ca": {"configMap": {"name": "simple-trino", "key": "ca.crt"}},
            "serverName": "simple-trino-coordinator.default.svc.cluster.local"
        },
        "basicAuth": {
            "username": {"name": "simple-trino-metrics", "key": "username"},
            "password": {"name": "simple-trino-metrics", "key": "password"}
        }
    })
)]
#[case::tls_without_authentication_sends_the_name_alone(
    json!({}),
    json!({
        "port": "https", "path": "/metrics", "scheme": "https",
        "tlsConfig": {
            "ca": {"configMap": {"name": "simple-trino", "key": "ca.crt"}},
            "serverName": "simple-trino-coordinator.default.svc.cluster.local"
        },
        "basicAuth": {
            "username": {"name": "simple-trino-metrics", "key": "username"},
            "password": {"name": "simple-trino-metrics", "key": "noPassword"}
        }
    })
)]
#[case::plain_http(
    json!({"tls": {"enabled": false}}),
    json!({
        "port": "http", "path": "/metrics", "scheme": "http",
        "basicAuth": {
            "username": {"name": "simple-trino-metrics", "key": "username"},
            "password": {"name": "simple-trino-metrics", "key": "noPassword"}
        }
    })
)]
fn the_service_monitor_scrapes_as_the_cluster_demands(
    #[case] security: Value,
    #[case] endpoint: Value,
) -> Result<(), ReconcileError> {
    let objects = objects(&model(cluster_config(security), &[])?)?;
    let monitor = named(&objects, "ServiceMonitor", "simple-trino");
    assert_eq!(monitor["spec"]["endpoints"], json!([endpoint]));
    for group in [
        "simple-trino-coordinator-default",
        "simple-trino-worker-default",
    ] {
        let service = named(&objects, "Service", &format!("{group}-metrics"));
        assert_eq!(
            service["metadata"]["annotations"]["prometheus.io/scheme"],
            endpoint["scheme"]
        );
        assert_eq!(service["spec"]["ports"][0]["name"], endpoint["port"]);
    }
    Ok(())
}

#[test]
fn the_rule_knows_how_many_workers_the_cluster_should_have() -> Result<(), ReconcileError> {
    let objects = objects(&model(
        json!({
            "clusterConfig": {"monitoring": {"prometheusRule": {}}},
            "workers": {"roleGroups": {"a": {"replicas": 2}, "b": {"replicas": 3}}}
        }),
        &[],
    )?)?;
    let rule = named(&objects, "PrometheusRule", "simple-trino");
    let missing = rule["spec"]["groups"][0]["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|rule| rule["alert"] == "TrinoWorkersMissing")
        .cloned()
        .unwrap_or_default();
    assert!(
        missing["expr"]
            .as_str()
            .unwrap_or_default()
            .contains("< 5)"),
        "{missing}"
    );
    Ok(())
}

#[test]
fn the_metrics_user_may_read_system_information_before_any_rule_of_the_user()
-> Result<(), ReconcileError> {
    let objects = objects(&model(json!({}), &[])?)?;
    let rules: Value = serde_json::from_str(
        named(&objects, "ConfigMap", "simple-trino-access-control")["data"]["rules.json"]
            .as_str()
            .unwrap_or_default(),
    )
    .unwrap_or_default();
    assert_eq!(
        rules["system_information"][1],
        json!({"user": "strata-metrics", "allow": ["read"]})
    );
    Ok(())
}

#[test]
fn the_metrics_secret_is_built_without_values_and_mounted_as_its_password_file_alone()
-> Result<(), ReconcileError> {
    let objects = objects(&model(
        json!({"clusterConfig": {"authentication": [{"password": {"secretName": "users"}}]}}),
        &[],
    )?)?;
    let secret = named(&objects, "Secret", "simple-trino-metrics");
    assert!(
        secret.get("data").is_none() && secret.get("stringData").is_none(),
        "{secret}"
    );
    let volumes = &named(&objects, "StatefulSet", "simple-trino-worker-default")["spec"]["template"]
        ["spec"]["volumes"];
    let volume = volumes
        .as_array()
        .into_iter()
        .flatten()
        .find(|volume| volume["name"] == "metrics-user")
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        volume["secret"]["items"],
        json!([{"key": "password.db", "path": "password.db"}])
    );
    Ok(())
}
