//! How users outside the cluster reach the web servers, on the real API server: the
//! client Service's type, an Ingress, and a Gateway API HTTPRoute with the real CRD's
//! validation.

use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use strata_testing::control_plane::wait_until;
use superset_operator::crd::SupersetCluster;

use crate::{CLUSTER, TIMEOUT, condition, rolled_out, started, started_with};

async fn expose(client: &kube::Client, service: serde_json::Value) {
    Api::<SupersetCluster>::namespaced(client.clone(), "default")
        .patch(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"clusterConfig": {"service": service}}})),
        )
        .await
        .expect("the cluster is patched");
}

#[tokio::test]
#[ignore = "needs the control plane (STRATA_CONTROL_PLANE_BIN); run by cargo xtask test"]
async fn a_node_port_is_allocated_and_a_load_balancer_without_an_address_keeps_the_cluster_progressing()
 {
    let (_control_plane, client, _operator) = started().await;
    let services = Api::<Service>::namespaced(client.clone(), "default");
    wait_until("both web servers Ready", TIMEOUT, async || {
        rolled_out(&client).await
    })
    .await;

    // NodePort: the real API server allocates the port.
    expose(
        &client,
        json!({"type": "NodePort", "externalTrafficPolicy": "Local"}),
    )
    .await;
    let node_port = wait_until("a node port on the client Service", TIMEOUT, async || {
        let service = services.get_opt(CLUSTER).await.ok()??;
        let spec = service.spec?;
        (spec.type_.as_deref() == Some("NodePort")
            && spec.external_traffic_policy.as_deref() == Some("Local"))
        .then_some(())?;
        spec.ports?.first()?.node_port
    })
    .await;
    assert!((30000..=32767).contains(&node_port), "{node_port}");

    // LoadBalancer: no load-balancer controller runs here, so no address comes, and
    // the cluster says so.
    expose(
        &client,
        json!({"type": "LoadBalancer", "externalTrafficPolicy": null,
               "loadBalancerSourceRanges": ["192.0.2.0/24"],
               "annotations": {"lb.example.com/internal": "true"}}),
    )
    .await;
    wait_until(
        "Progressing with WaitingForLoadBalancer",
        TIMEOUT,
        async || {
            let (status, reason) = condition(&client, "Progressing").await?;
            (status == "True" && reason == "WaitingForLoadBalancer").then_some(())
        },
    )
    .await;
    let service = services.get(CLUSTER).await.expect("the client Service");
    let spec = service.spec.expect("a spec");
    assert_eq!(
        spec.load_balancer_source_ranges,
        Some(vec!["192.0.2.0/24".to_owned()])
    );
    assert_eq!(
        service
            .metadata
            .annotations
            .unwrap_or_default()
            .get("lb.example.com/internal")
            .map(String::as_str),
        Some("true")
    );

    // A load-balancer controller gives it an address (the test plays one, writing the
    // status as a cloud's would): the cluster settles.
    services
        .patch_status(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(
                &json!({"status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}}}),
            ),
        )
        .await
        .expect("the load balancer's status is written");
    wait_until("Progressing False", TIMEOUT, async || {
        let (status, _) = condition(&client, "Progressing").await?;
        (status == "False").then_some(())
    })
    .await;

    // An exposure the API server would refuse is refused first, with its reason.
    expose(&client, json!({"type": "NodePort", "loadBalancerSourceRanges": ["192.0.2.0/24"], "annotations": null, "externalTrafficPolicy": null})).await;
    wait_until("InvalidServiceExposure", TIMEOUT, async || {
        let (_, reason) = condition(&client, "Degraded").await?;
        (reason == "InvalidServiceExposure").then_some(())
    })
    .await;
}

#[tokio::test]
#[ignore = "needs the control plane (STRATA_CONTROL_PLANE_BIN); run by cargo xtask test"]
async fn the_web_uis_ingress_is_taken_by_the_real_api_server_and_pruned_when_dropped() {
    use k8s_openapi::api::networking::v1::Ingress;

    let (_control_plane, client, _operator) = started().await;
    let clusters = Api::<SupersetCluster>::namespaced(client.clone(), "default");
    let ingress = json!({
        "host": "superset.example.com",
        "ingressClassName": "nginx",
        "annotations": {"nginx.ingress.kubernetes.io/proxy-body-size": "64m"},
        "tlsSecret": "superset-example-com"
    });
    clusters
        .patch(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"clusterConfig": {"ingress": ingress}}})),
        )
        .await
        .expect("the cluster is patched");
    let ingresses = Api::<Ingress>::namespaced(client.clone(), "default");
    let stored = wait_until("the Ingress stored", TIMEOUT, async || {
        ingresses.get_opt(CLUSTER).await.ok()?
    })
    .await;
    let stored = serde_json::to_value(stored).expect("serializes");
    assert_eq!(
        stored["spec"]["rules"][0],
        json!({"host": "superset.example.com", "http": {"paths": [{
            "path": "/", "pathType": "Prefix",
            "backend": {"service": {"name": CLUSTER, "port": {"name": "http"}}}
        }]}})
    );
    assert_eq!(stored["spec"]["ingressClassName"], "nginx");
    assert_eq!(
        stored["metadata"]["ownerReferences"][0]["kind"],
        "SupersetCluster"
    );

    // An Ingress the API server would refuse is named, and the stored one stays.
    clusters
        .patch(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(
                &json!({"spec": {"clusterConfig": {"ingress": {"host": "Superset.Example.com"}}}}),
            ),
        )
        .await
        .expect("the cluster is patched");
    wait_until("Degraded with InvalidIngress", TIMEOUT, async || {
        let (status, reason) = condition(&client, "Degraded").await?;
        (status == "True" && reason == "InvalidIngress").then_some(())
    })
    .await;
    assert!(ingresses.get_opt(CLUSTER).await.expect("read").is_some());

    clusters
        .patch(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"clusterConfig": {"ingress": null}}})),
        )
        .await
        .expect("the cluster is patched");
    wait_until("the Ingress pruned", TIMEOUT, async || {
        ingresses
            .get_opt(CLUSTER)
            .await
            .ok()
            .and_then(|found| found.is_none().then_some(()))
    })
    .await;
}

/// Where the cluster serves the Gateway API: the HTTPRoute passes the real CRD's
/// validation (its CEL rules included), a Gateway's refusal written to its status
/// becomes the cluster's Warning, an acceptance clears it, and dropping the field
/// prunes the route. No Gateway controller runs: the test writes the status a
/// controller would, through the status subresource the real CRD declares.
#[tokio::test]
#[ignore = "needs the control plane (STRATA_CONTROL_PLANE_BIN); run by cargo xtask test"]
async fn the_web_uis_http_route_passes_the_real_crd_and_a_gateways_refusal_is_a_warning() {
    use strata_model::http_route::HttpRoute;

    let (_control_plane, client, _operator) =
        started_with(&strata_testing::gateway_api::crds()).await;
    let clusters = Api::<SupersetCluster>::namespaced(client.clone(), "default");
    let route = json!({
        "parentRefs": [{"name": "public", "namespace": "gateways", "sectionName": "https"}],
        "hostnames": ["superset.example.com"],
        "annotations": {"external-dns.alpha.kubernetes.io/ttl": "60"}
    });
    clusters
        .patch(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"clusterConfig": {"httpRoute": route}}})),
        )
        .await
        .expect("the cluster is patched");
    let routes = Api::<HttpRoute>::namespaced(client.clone(), "default");
    // Read untyped, to see what the real CRD's defaults added.
    let untyped = Api::<kube::api::DynamicObject>::namespaced_with(
        client.clone(),
        "default",
        &kube::api::ApiResource::erase::<HttpRoute>(&()),
    );
    let stored = wait_until("the HTTPRoute stored", TIMEOUT, async || {
        untyped.get_opt(CLUSTER).await.ok()?
    })
    .await;
    let stored = serde_json::to_value(stored).expect("serializes");
    assert_eq!(
        stored["spec"]["rules"],
        json!([{
            "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
            "backendRefs": [{"group": "", "kind": "Service", "name": CLUSTER, "port": 8088, "weight": 1}]
        }]),
        "the real CRD's defaults filled in around what the operator set"
    );
    assert_eq!(stored["spec"]["parentRefs"][0]["sectionName"], "https");
    assert_eq!(
        stored["metadata"]["ownerReferences"][0]["kind"],
        "SupersetCluster"
    );

    // The Gateway's controller refuses it.
    let gateway_says = |accepted: &str, reason: &str| {
        json!({"status": {"parents": [{
            "parentRef": {"name": "public", "namespace": "gateways", "sectionName": "https"},
            "controllerName": "gateway.example.com/controller",
            "conditions": [{
                "type": "Accepted", "status": accepted, "reason": reason,
                "message": format!("{reason} by the test's Gateway"),
                "lastTransitionTime": "2026-11-29T00:00:00Z", "observedGeneration": 1
            }]
        }]}})
    };
    routes
        .patch_status(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(gateway_says("False", "NotAllowedByListeners")),
        )
        .await
        .expect("the status is written as the real CRD allows");
    wait_until("Warning with HttpRouteRefused", TIMEOUT, async || {
        let (status, reason) = condition(&client, "Warning").await?;
        (status == "True" && reason == "HttpRouteRefused").then_some(())
    })
    .await;
    routes
        .patch_status(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(gateway_says("True", "Accepted")),
        )
        .await
        .expect("the status is written");
    wait_until("the Warning cleared", TIMEOUT, async || {
        let (status, _) = condition(&client, "Warning").await?;
        (status == "False").then_some(())
    })
    .await;

    // A route the CRD would refuse is named before apply, and the stored one stays.
    clusters
        .patch(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"clusterConfig": {"httpRoute": {"hostnames": ["Superset.Example.com"]}}}})),
        )
        .await
        .expect("the cluster is patched");
    wait_until("Degraded with InvalidHttpRoute", TIMEOUT, async || {
        let (status, reason) = condition(&client, "Degraded").await?;
        (status == "True" && reason == "InvalidHttpRoute").then_some(())
    })
    .await;
    assert!(routes.get_opt(CLUSTER).await.expect("read").is_some());

    clusters
        .patch(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"clusterConfig": {"httpRoute": null}}})),
        )
        .await
        .expect("the cluster is patched");
    wait_until("the HTTPRoute pruned", TIMEOUT, async || {
        routes
            .get_opt(CLUSTER)
            .await
            .ok()
            .and_then(|found| found.is_none().then_some(()))
    })
    .await;
}
