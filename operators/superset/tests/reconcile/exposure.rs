//! The client Service's exposure (issue 26, item 3): one the API server would refuse or
//! ignore is refused before anything is applied, with a reason and an Event.

use k8s_openapi::api::apps::v1::StatefulSet;
use serde_json::json;
use strata_testing::wait::{stored_names, wait_for_degraded, wait_for_event};

use crate::{CLUSTER, create_cluster, create_user_secrets, spec, start};
use superset_operator::crd::SupersetCluster;

#[tokio::test]
async fn source_ranges_without_a_load_balancer_are_refused_before_anything_is_applied() {
    let harness = start();
    create_user_secrets(&harness).await;
    create_cluster(
        &harness,
        spec(json!({"clusterConfig": {
            "metadataDatabase": {"postgresql": {
                "host": "postgresql.default.svc", "database": "superset",
                "credentialsSecret": "superset-db"
            }},
            "adminUser": {"secretName": "superset-admin"},
            "service": {"type": "NodePort", "loadBalancerSourceRanges": ["192.0.2.0/24"]}
        }})),
    )
    .await;
    let degraded =
        wait_for_degraded::<SupersetCluster>(&harness, CLUSTER, "InvalidServiceExposure").await;
    assert!(
        degraded
            .message
            .contains("spec.clusterConfig.service.loadBalancerSourceRanges applies only to type LoadBalancer, not NodePort"),
        "{degraded:?}"
    );
    wait_for_event(&harness, CLUSTER, "Warning", "InvalidServiceExposure").await;
    harness.settle().await;
    assert!(stored_names::<StatefulSet>(&harness).is_empty());
}
