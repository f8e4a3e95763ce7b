//! The coordinator Service's exposure (issue 26, item 3): its type and settings reach
//! the Service, a load balancer without an address keeps the cluster Progressing and
//! discovery without an external address, and the address it gets is published.

use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use serde_json::json;
use strata_certificates::facts::CertificateFacts;
use strata_status::{ConditionStatus, ConditionType};
use strata_testing::manifests::secret_text;
use strata_testing::wait::{stored, wait_for, wait_for_condition, wait_for_reason};
use strata_testing::workloads::run_until_settled;
use trino_operator::crd::TrinoCluster;

use crate::{CLUSTER, create_cluster, patch_spec, spec, start};

const COORDINATOR_SERVICE: &str = "simple-trino-coordinator";

#[tokio::test]
async fn a_load_balancer_address_reaches_discovery_once_the_service_has_one() {
    let harness = start();
    create_cluster(
        &harness,
        spec(json!({"clusterConfig": {"service": {
            "type": "LoadBalancer",
            "loadBalancerSourceRanges": ["192.0.2.0/24"],
            "annotations": {"lb.example.com/internal": "true"}
        }}})),
    )
    .await;
    let waiting = wait_for_reason::<TrinoCluster>(
        &harness,
        CLUSTER,
        ConditionType::Progressing,
        ConditionStatus::True,
        "WaitingForLoadBalancer",
    )
    .await;
    assert!(
        waiting.message.contains(COORDINATOR_SERVICE) && waiting.message.contains("NodePort"),
        "{waiting:?}"
    );
    let service = stored::<Service>(&harness, COORDINATOR_SERVICE);
    let spec = service.spec.unwrap_or_default();
    assert_eq!(spec.type_.as_deref(), Some("LoadBalancer"));
    assert_eq!(
        spec.load_balancer_source_ranges,
        Some(vec!["192.0.2.0/24".to_owned()])
    );
    let discovery = stored::<ConfigMap>(&harness, CLUSTER)
        .data
        .unwrap_or_default();
    assert!(discovery.contains_key("TRINO_HOST"), "{discovery:?}");
    assert!(
        !discovery.contains_key("TRINO_EXTERNAL_HOST"),
        "{discovery:?}"
    );

    // The load-balancer controller gives the Service its address.
    harness
        .server
        .patch_status_direct::<Service>(
            harness.namespace,
            COORDINATOR_SERVICE,
            json!({"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}}),
        )
        .unwrap_or_else(|error| panic!("{error}"));
    let discovery =
        wait_for::<ConfigMap>(&harness, CLUSTER, "the external address", |config_map| {
            config_map
                .data
                .as_ref()
                .is_some_and(|data| data.contains_key("TRINO_EXTERNAL_HOST"))
        })
        .await
        .data
        .unwrap_or_default();
    assert_eq!(discovery["TRINO_EXTERNAL_HOST"], "192.0.2.10");
    assert_eq!(discovery["TRINO_EXTERNAL_PORT"], "8443");
    // The coordinator's certificate is issued again for the address clients dial.
    wait_for::<Secret>(
        &harness,
        "simple-trino-coordinator-default-tls",
        "a certificate for the external address",
        |secret| {
            secret_text(secret, "tls.crt")
                .and_then(|pem| CertificateFacts::read("the coordinator's", &pem).ok())
                .is_some_and(|facts| facts.missing_names(&["192.0.2.10".to_owned()]).is_empty())
        },
    )
    .await;
    // The pods roll onto the new certificate (played by the harness's workload
    // controllers), and the cluster settles.
    run_until_settled(&harness, || {}).await;
    wait_for_condition::<TrinoCluster>(
        &harness,
        CLUSTER,
        ConditionType::Progressing,
        ConditionStatus::False,
    )
    .await;

    // Back to ClusterIP: the external address leaves discovery.
    patch_spec(&harness, json!({"clusterConfig": {"service": null}})).await;
    wait_for::<ConfigMap>(&harness, CLUSTER, "no external address", |config_map| {
        config_map
            .data
            .as_ref()
            .is_some_and(|data| !data.contains_key("TRINO_EXTERNAL_HOST"))
    })
    .await;
}

#[tokio::test]
async fn an_ingress_routes_to_the_coordinator_and_its_url_reaches_discovery_once_it_has_an_address()
{
    use k8s_openapi::api::networking::v1::Ingress;

    let harness = start();
    create_cluster(
        &harness,
        spec(json!({"clusterConfig": {"ingress": {
            "host": "trino.example.com",
            "ingressClassName": "nginx",
            "annotations": {"nginx.ingress.kubernetes.io/backend-protocol": "HTTPS"},
            "tlsSecret": "trino-example-com"
        }}})),
    )
    .await;
    let ingress = wait_for::<Ingress>(&harness, CLUSTER, "the Ingress", |_| true).await;
    let built = serde_json::to_value(&ingress).expect("serializes");
    assert_eq!(
        built["spec"]["rules"][0]["http"]["paths"][0]["backend"],
        json!({"service": {"name": COORDINATOR_SERVICE, "port": {"name": "https"}}})
    );
    assert_eq!(
        built["metadata"]["annotations"]["nginx.ingress.kubernetes.io/backend-protocol"],
        "HTTPS"
    );
    // Behind the controller, the coordinator takes its X-Forwarded-* headers.
    let properties = |name: &str| {
        stored::<ConfigMap>(&harness, name)
            .data
            .unwrap_or_default()
            .get("config.properties")
            .cloned()
            .unwrap_or_default()
    };
    assert!(
        properties("simple-trino-coordinator-default")
            .contains("http-server.process-forwarded=true")
    );
    assert!(!properties("simple-trino-worker-default").contains("process-forwarded"));
    // No address from a controller yet: no URL in discovery, and nothing waits on it.
    run_until_settled(&harness, || {}).await;
    let discovery = stored::<ConfigMap>(&harness, CLUSTER)
        .data
        .unwrap_or_default();
    assert!(
        !discovery.contains_key("TRINO_EXTERNAL_URL"),
        "{discovery:?}"
    );

    // The Ingress controller writes its address.
    harness
        .server
        .patch_status_direct::<Ingress>(
            harness.namespace,
            CLUSTER,
            json!({"loadBalancer": {"ingress": [{"ip": "192.0.2.20"}]}}),
        )
        .unwrap_or_else(|error| panic!("{error}"));
    let discovery = wait_for::<ConfigMap>(&harness, CLUSTER, "the Ingress URL", |config_map| {
        config_map
            .data
            .as_ref()
            .is_some_and(|data| data.contains_key("TRINO_EXTERNAL_URL"))
    })
    .await
    .data
    .unwrap_or_default();
    assert_eq!(
        discovery["TRINO_EXTERNAL_URL"],
        "https://trino.example.com/"
    );

    // Without the setting the Ingress is pruned, and its URL leaves discovery.
    patch_spec(&harness, json!({"clusterConfig": {"ingress": null}})).await;
    wait_for::<ConfigMap>(&harness, CLUSTER, "no Ingress URL", |config_map| {
        config_map
            .data
            .as_ref()
            .is_some_and(|data| !data.contains_key("TRINO_EXTERNAL_URL"))
    })
    .await;
    strata_testing::wait::eventually(
        "the Ingress pruned",
        || {
            strata_testing::wait::stored_names::<Ingress>(&harness)
                .is_empty()
                .then_some(())
        },
        || strata_testing::wait::stored_names::<Ingress>(&harness),
    )
    .await;
}
