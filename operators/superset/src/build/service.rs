//! Services: the client Service on 8088 and a headless Service per role group.

use k8s_openapi::api::core::v1::Service;
use strata_model::build::{ContainerPort, client_service as client, object_meta};

use crate::validate::{ValidatedCluster, ValidatedRoleGroup};

/// The web server's port.
pub const HTTP: ContainerPort = ContainerPort {
    name: "http",
    number: 8088,
};

/// `<superset>-node-<rg>`: the StatefulSet's `serviceName`.
pub fn headless_service(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> Service {
    group.headless_service(&cluster.identity.namespace, &[HTTP])
}

/// `<superset>`: where users connect, over every ready web server.
pub fn client_service(cluster: &ValidatedCluster) -> Service {
    let mut service = client(
        object_meta(
            cluster.identity.name.client_service_name(),
            &cluster.identity.namespace,
            cluster.identity.labels.labels(),
        ),
        cluster.nodes.labels.selector(),
        &[HTTP],
    );
    cluster.service.apply_to(&mut service);
    service
}

/// `<superset>`: the web UI's HTTPRoute to the client Service's port `http`, with
/// `clusterConfig.httpRoute`.
pub fn http_route(cluster: &ValidatedCluster) -> Option<strata_model::http_route::HttpRoute> {
    let name = cluster.identity.name.client_service_name();
    cluster.http_route.as_ref().map(|route| {
        strata_model::http_route::http_route(
            route,
            name,
            &cluster.identity.namespace,
            cluster.identity.labels.labels(),
            name,
            HTTP.number,
        )
    })
}

/// `<superset>`: the web UI's Ingress to the client Service, with `clusterConfig.ingress`.
pub fn ingress(cluster: &ValidatedCluster) -> Option<k8s_openapi::api::networking::v1::Ingress> {
    let name = cluster.identity.name.client_service_name();
    cluster.ingress.as_ref().map(|ingress| {
        ingress.ingress(
            object_meta(
                name,
                &cluster.identity.namespace,
                cluster.identity.labels.labels(),
            ),
            name,
            HTTP.name,
        )
    })
}
