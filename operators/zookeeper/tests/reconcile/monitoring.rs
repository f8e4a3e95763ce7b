//! `clusterConfig.monitoring` where the API server serves no Prometheus Operator kinds
//! (the in-memory API serves no discovery): the cluster gets a Warning naming the
//! objects left out, and everything else; settings the Prometheus Operator would
//! refuse are refused before anything is applied. The real CRDs are in
//! `real_control_plane/monitoring.rs`.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Service;
use serde_json::json;
use strata_status::{ConditionStatus, ConditionType};

use crate::support::conditions::wait_for_reason;
use crate::support::{cluster, create, start, stored_names, wait_for_event};

const NAME: &str = "simple-zk";

#[tokio::test]
async fn without_the_crds_the_cluster_warns_and_applies_everything_else() {
    let harness = start();
    create(
        &harness,
        &cluster(
            NAME,
            json!({
                "clusterConfig": {"monitoring": {
                    "serviceMonitor": {"labels": {"release": "prometheus"}},
                    "prometheusRule": {}
                }},
                "servers": {"roleGroups": {"default": {"replicas": 3}}}
            }),
        ),
    )
    .await;
    let warning = wait_for_reason(
        &harness,
        NAME,
        ConditionType::Warning,
        ConditionStatus::True,
        "CrdNotInstalled",
    )
    .await;
    assert!(
        warning
            .message
            .starts_with("ServiceMonitor/simple-zk, PrometheusRule/simple-zk not applied"),
        "{}",
        warning.message
    );
    wait_for_event(&harness, NAME, "Warning", "CrdNotInstalled").await;
    harness.settle().await;
    assert_eq!(
        stored_names::<StatefulSet>(&harness),
        ["simple-zk-server-default".to_owned()].into()
    );
    assert!(stored_names::<Service>(&harness).contains("simple-zk-server-default-metrics"));
}

#[tokio::test]
async fn monitoring_settings_the_prometheus_operator_would_refuse_are_refused_first() {
    let harness = start();
    create(
        &harness,
        &cluster(
            NAME,
            json!({
                "clusterConfig": {"monitoring": {"serviceMonitor": {"interval": "30"}}},
                "servers": {"roleGroups": {"default": {"replicas": 3}}}
            }),
        ),
    )
    .await;
    let degraded = wait_for_reason(
        &harness,
        NAME,
        ConditionType::Degraded,
        ConditionStatus::True,
        "InvalidMonitoring",
    )
    .await;
    assert!(
        degraded
            .message
            .contains("spec.clusterConfig.monitoring.serviceMonitor.interval"),
        "{}",
        degraded.message
    );
    wait_for_event(&harness, NAME, "Warning", "InvalidMonitoring").await;
    harness.settle().await;
    assert!(stored_names::<StatefulSet>(&harness).is_empty());
}
