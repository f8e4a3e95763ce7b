//! `clusterConfig.monitoring` where the API server serves no Prometheus Operator kinds
//! (the in-memory API serves no discovery): the cluster gets a Warning naming the
//! objects left out, and everything else, the metrics Services and the metrics user's
//! Secret included.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Secret, Service};
use serde_json::json;
use strata_status::{ConditionStatus, ConditionType};
use strata_testing::wait::{eventually, stored_names, wait_for_event, wait_for_reason};
use trino_operator::crd::TrinoCluster;

use crate::{CLUSTER, STATEFUL_SETS, create_cluster, spec, start};

#[tokio::test]
async fn without_the_crds_the_cluster_warns_and_applies_everything_else() {
    let harness = start();
    create_cluster(
        &harness,
        spec(json!({"clusterConfig": {"monitoring": {
            "serviceMonitor": {"labels": {"release": "prometheus"}},
            "prometheusRule": {}
        }}})),
    )
    .await;
    let warning = wait_for_reason::<TrinoCluster>(
        &harness,
        CLUSTER,
        ConditionType::Warning,
        ConditionStatus::True,
        "CrdNotInstalled",
    )
    .await;
    assert!(
        warning
            .message
            .starts_with("ServiceMonitor/simple-trino, PrometheusRule/simple-trino not applied"),
        "{}",
        warning.message
    );
    wait_for_event(&harness, CLUSTER, "Warning", "CrdNotInstalled").await;
    eventually(
        "every StatefulSet",
        || (stored_names::<StatefulSet>(&harness).len() == STATEFUL_SETS.len()).then_some(()),
        || stored_names::<StatefulSet>(&harness),
    )
    .await;
    let services = stored_names::<Service>(&harness);
    for group in STATEFUL_SETS {
        assert!(
            services.contains(&format!("{group}-metrics")),
            "{services:?}"
        );
    }
    assert!(stored_names::<Secret>(&harness).contains("simple-trino-metrics"));
}
