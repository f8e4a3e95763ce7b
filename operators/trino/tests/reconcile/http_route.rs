//! The coordinator's HTTPRoute (issue 26, item 3), where the cluster serves the Gateway
//! API: the route to the server port, a BackendTLSPolicy so the Gateway speaks HTTPS
//! and checks the coordinator's certificate, a Gateway's refusal as a Warning, and the
//! route's host in discovery once a Gateway accepts it.

use k8s_openapi::api::core::v1::ConfigMap;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use strata_model::http_route::{BackendTlsPolicy, HttpRoute};
use strata_status::{ConditionStatus, ConditionType};
use strata_test_apiserver::TestApiServer;
use strata_testing::manifests::create_secret;
use strata_testing::wait::{eventually, stored, stored_names, wait_for, wait_for_reason};
use trino_operator::crd::{TrinoCatalog, TrinoCluster};

use crate::{CLUSTER, create_cluster, patch_spec, spec, start_on};

/// The users Secret of the routed cluster: an HTTPRoute to a Trino without
/// authentication is a Warning of its own (`TrinoUnauthenticated`).
const USERS: &str = "trino-users";

const COORDINATOR_SERVICE: &str = "simple-trino-coordinator";

/// A Gateway's entry in the route's status, as its controller writes it.
fn gateway_says(accepted: &str, reason: &str, message: &str) -> Value {
    json!({"parents": [{
        "parentRef": {"name": "public", "namespace": "gateways"},
        "controllerName": "gateway.example.com/controller",
        "conditions": [{
            "type": "Accepted", "status": accepted, "reason": reason, "message": message,
            "lastTransitionTime": "2026-11-29T00:00:00Z"
        }]
    }]})
}

fn discovery_route(config_map: &ConfigMap) -> Option<String> {
    config_map
        .data
        .as_ref()?
        .get("TRINO_EXTERNAL_ROUTE")
        .cloned()
}

#[tokio::test]
async fn the_route_reaches_the_coordinator_over_checked_tls_and_its_host_reaches_discovery_once_accepted()
 {
    let server = TestApiServer::new();
    server.register::<TrinoCluster>();
    server.register::<TrinoCatalog>();
    server.register::<HttpRoute>();
    server.register::<BackendTlsPolicy>();
    let harness = start_on(server);
    create_secret(&harness, USERS, &[("alice", "alice-password")]).await;
    create_cluster(
        &harness,
        spec(json!({"clusterConfig": {
            "authentication": [{"password": {"secretName": USERS}}],
            "httpRoute": {
                "parentRefs": [{"name": "public", "namespace": "gateways"}],
                "hostnames": ["trino.example.com"]
            }
        }})),
    )
    .await;
    let route = wait_for::<HttpRoute>(&harness, CLUSTER, "the HTTPRoute", |_| true).await;
    let route = serde_json::to_value(&route).expect("serializes");
    assert_eq!(
        route["spec"],
        json!({
            "parentRefs": [{"name": "public", "namespace": "gateways"}],
            "hostnames": ["trino.example.com"],
            "rules": [{
                "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                "backendRefs": [{"name": COORDINATOR_SERVICE, "port": 8443}]
            }]
        })
    );
    let policy = wait_for::<BackendTlsPolicy>(&harness, CLUSTER, "the policy", |_| true).await;
    assert_eq!(
        serde_json::to_value(&policy.spec).expect("serializes"),
        json!({
            "targetRefs": [{"group": "", "kind": "Service", "name": COORDINATOR_SERVICE}],
            "validation": {
                "caCertificateRefs": [{"group": "", "kind": "ConfigMap", "name": CLUSTER}],
                "hostname": format!("{COORDINATOR_SERVICE}.{}.svc.cluster.local", harness.namespace)
            }
        })
    );
    // The ConfigMap the policy names holds the CA under the key the Gateway API reads.
    let discovery = wait_for::<ConfigMap>(&harness, CLUSTER, "the CA in discovery", |found| {
        found
            .data
            .as_ref()
            .is_some_and(|data| data.contains_key("ca.crt"))
    })
    .await;
    assert_eq!(discovery_route(&discovery), None);
    // Behind the Gateway, the coordinator takes its X-Forwarded-* headers.
    let coordinator = stored::<ConfigMap>(&harness, "simple-trino-coordinator-default");
    assert!(
        coordinator.data.unwrap_or_default()["config.properties"]
            .contains("http-server.process-forwarded=true")
    );

    // The Gateway refuses the route: a Warning that names it and says why.
    harness
        .server
        .patch_status_direct::<HttpRoute>(
            harness.namespace,
            CLUSTER,
            gateway_says(
                "False",
                "NotAllowedByListeners",
                "no listener admits routes from this namespace",
            ),
        )
        .unwrap_or_else(|error| panic!("{error}"));
    let warning = wait_for_reason::<TrinoCluster>(
        &harness,
        CLUSTER,
        ConditionType::Warning,
        ConditionStatus::True,
        "HttpRouteRefused",
    )
    .await;
    assert!(
        warning.message.contains("gateways/public")
            && warning.message.contains("NotAllowedByListeners")
            && warning.message.contains("no listener admits routes"),
        "{warning:?}"
    );
    assert_eq!(
        discovery_route(&stored::<ConfigMap>(&harness, CLUSTER)),
        None
    );

    // The Gateway accepts it: the host and path reach discovery, the Warning goes.
    harness
        .server
        .patch_status_direct::<HttpRoute>(
            harness.namespace,
            CLUSTER,
            gateway_says("True", "Accepted", "Route is accepted"),
        )
        .unwrap_or_else(|error| panic!("{error}"));
    let discovery = wait_for::<ConfigMap>(&harness, CLUSTER, "the route's host", |found| {
        discovery_route(found).is_some()
    })
    .await;
    assert_eq!(
        discovery_route(&discovery).as_deref(),
        Some("trino.example.com/")
    );
    strata_testing::wait::wait_for_condition::<TrinoCluster>(
        &harness,
        CLUSTER,
        ConditionType::Warning,
        ConditionStatus::False,
    )
    .await;

    // Without the setting, the route and the policy are pruned and discovery forgets it.
    patch_spec(&harness, json!({"clusterConfig": {"httpRoute": null}})).await;
    wait_for::<ConfigMap>(&harness, CLUSTER, "no route in discovery", |found| {
        discovery_route(found).is_none()
    })
    .await;
    eventually(
        "the route and the policy pruned",
        || {
            (stored_names::<HttpRoute>(&harness).is_empty()
                && stored_names::<BackendTlsPolicy>(&harness).is_empty())
            .then_some(())
        },
        || {
            (
                stored_names::<HttpRoute>(&harness),
                stored_names::<BackendTlsPolicy>(&harness),
            )
        },
    )
    .await;
}

/// Gateway API CRDs older than v1.4 serve HTTPRoute but not BackendTLSPolicy: with
/// TLS, the route would send plain HTTP to the HTTPS port, so it is left out too, and
/// the Warning says what to install.
#[tokio::test]
async fn without_backend_tls_policy_the_route_to_the_https_port_is_left_out_with_a_warning() {
    let server = TestApiServer::new();
    server.register::<TrinoCluster>();
    server.register::<TrinoCatalog>();
    server.register::<HttpRoute>();
    let harness = start_on(server);
    create_secret(&harness, USERS, &[("alice", "alice-password")]).await;
    create_cluster(
        &harness,
        spec(json!({"clusterConfig": {
            "authentication": [{"password": {"secretName": USERS}}],
            "httpRoute": {
                "parentRefs": [{"name": "public", "namespace": "gateways"}],
                "hostnames": ["trino.example.com"]
            }
        }})),
    )
    .await;
    let warning = wait_for_reason::<TrinoCluster>(
        &harness,
        CLUSTER,
        ConditionType::Warning,
        ConditionStatus::True,
        "BackendTlsPolicyNotServed",
    )
    .await;
    assert!(warning.message.contains("Gateway API v1.4"), "{warning:?}");
    // The rest is applied: discovery exists, and no route does.
    wait_for::<ConfigMap>(&harness, CLUSTER, "discovery", |_| true).await;
    assert!(stored_names::<HttpRoute>(&harness).is_empty());
}
