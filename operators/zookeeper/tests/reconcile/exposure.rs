//! The client Service's exposure (issue 26, item 3): a load balancer without an
//! address keeps the cluster Progressing and discovery without an external address;
//! the address it gets is published and covered by the servers' certificates (a user's
//! certificate that leaves it out is warned about); an exposure the API server would
//! refuse is refused first.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use serde_json::json;
use strata_certificates::authority::{CertificateAuthority, Validity};
use strata_certificates::facts::CertificateFacts;
use strata_status::{ConditionStatus, ConditionType};
use strata_testing::manifests::{create_secret, secret_text};

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

/// Security review, finding 14: a user's certificate that covers every pod but not the
/// load balancer's address serves inside the cluster, so it is not refused; a Warning
/// names the address that clients outside will fail to verify.
#[tokio::test]
async fn a_users_certificate_without_the_load_balancers_address_is_warned_about() {
    let harness = start();
    let now = std::time::SystemTime::now();
    let validity = Validity::starting(now, std::time::Duration::from_secs(30 * 86_400));
    let ca = CertificateAuthority::create("user CA", validity).expect("a CA");
    let issued = ca
        .issue(
            &[
                "*.simple-zk-server-default.default.svc.cluster.local".to_owned(),
                "simple-zk.default.svc.cluster.local".to_owned(),
            ],
            validity,
        )
        .expect("a certificate");
    create_secret(
        &harness,
        "zk-tls",
        &[
            ("tls.crt", issued.certificate_pem()),
            ("tls.key", issued.key_pem()),
            ("ca.crt", ca.certificate_pem()),
        ],
    )
    .await;
    create(
        &harness,
        &cluster(
            NAME,
            json!({
                "clusterConfig": {
                    "service": {"type": "LoadBalancer"},
                    "tls": {"secretName": "zk-tls", "clientAuthentication": "Required"},
                },
                "servers": {"roleGroups": {"default": {"replicas": 3}}}
            }),
        ),
    )
    .await;
    wait_for::<Service>(&harness, NAME, "the client Service", |_| true).await;
    harness
        .server
        .patch_status_direct::<Service>(
            harness.namespace,
            NAME,
            json!({"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}),
        )
        .unwrap_or_else(|error| panic!("{error}"));
    let warning = wait_for_reason(
        &harness,
        NAME,
        ConditionType::Warning,
        ConditionStatus::True,
        "TlsExternalNameNotCovered",
    )
    .await;
    assert!(warning.message.contains("203.0.113.7"), "{warning:?}");
    wait_for::<StatefulSet>(
        &harness,
        "simple-zk-server-default",
        "the servers, which the certificate covers inside the cluster",
        |_| true,
    )
    .await;
}
