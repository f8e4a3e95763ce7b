//! The client Service's exposure (issue 26, item 3): a load balancer without an
//! address keeps the cluster Progressing and discovery without an external address;
//! the address it gets is published and covered by the servers' certificates; an
//! exposure the API server would refuse is refused first.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use serde_json::json;
use strata_certificates::facts::CertificateFacts;
use strata_status::{ConditionStatus, ConditionType};
use strata_testing::manifests::secret_text;

use crate::support::conditions::wait_for_reason;
use crate::support::{cluster, create, start, stored, stored_names, wait_for, wait_for_event};

const NAME: &str = "simple-zk";

fn certificate_covers(secret: &Secret, name: &str) -> bool {
    secret_text(secret, "tls.crt")
        .and_then(|pem| CertificateFacts::read("the server's", &pem).ok())
        .is_some_and(|facts| facts.missing_names(&[name.to_owned()]).is_empty())
}

#[tokio::test]
async fn a_load_balancer_address_reaches_discovery_and_the_certificates() {
    let harness = start();
    create(
        &harness,
        &cluster(
            NAME,
            json!({
                "clusterConfig": {"service": {"type": "LoadBalancer", "externalTrafficPolicy": "Local"}},
                "servers": {"roleGroups": {"default": {"replicas": 3}}}
            }),
        ),
    )
    .await;
    wait_for_reason(
        &harness,
        NAME,
        ConditionType::Progressing,
        ConditionStatus::True,
        "WaitingForLoadBalancer",
    )
    .await;
    let spec = stored::<Service>(&harness, NAME).spec.unwrap_or_default();
    assert_eq!(spec.type_.as_deref(), Some("LoadBalancer"));
    assert_eq!(spec.external_traffic_policy.as_deref(), Some("Local"));
    let discovery = stored::<ConfigMap>(&harness, NAME).data.unwrap_or_default();
    assert!(
        !discovery.contains_key("ZOOKEEPER_EXTERNAL_HOST"),
        "{discovery:?}"
    );

    harness
        .server
        .patch_status_direct::<Service>(
            harness.namespace,
            NAME,
            json!({"loadBalancer": {"ingress": [{"hostname": "zk.example.com"}]}}),
        )
        .unwrap_or_else(|error| panic!("{error}"));
    let discovery = wait_for::<ConfigMap>(&harness, NAME, "the external address", |config_map| {
        config_map
            .data
            .as_ref()
            .is_some_and(|data| data.contains_key("ZOOKEEPER_EXTERNAL_HOST"))
    })
    .await
    .data
    .unwrap_or_default();
    assert_eq!(discovery["ZOOKEEPER_EXTERNAL_HOST"], "zk.example.com");
    assert_eq!(discovery["ZOOKEEPER_EXTERNAL_PORT"], "2282");
    wait_for::<Secret>(
        &harness,
        "simple-zk-server-default-tls",
        "a certificate for the load balancer's name",
        |secret| certificate_covers(secret, "zk.example.com"),
    )
    .await;
}

#[tokio::test]
async fn an_exposure_the_api_server_would_refuse_is_refused_before_anything_is_applied() {
    let harness = start();
    create(
        &harness,
        &cluster(
            NAME,
            json!({
                "clusterConfig": {"service": {"externalTrafficPolicy": "Local"}},
                "servers": {"roleGroups": {"default": {"replicas": 3}}}
            }),
        ),
    )
    .await;
    wait_for_reason(
        &harness,
        NAME,
        ConditionType::Degraded,
        ConditionStatus::True,
        "InvalidServiceExposure",
    )
    .await;
    wait_for_event(&harness, NAME, "Warning", "InvalidServiceExposure").await;
    harness.settle().await;
    assert!(stored_names::<StatefulSet>(&harness).is_empty());
}
