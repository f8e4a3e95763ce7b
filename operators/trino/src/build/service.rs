//! Services: the coordinator Service on 8443 (8080 without TLS) for clients, a headless
//! Service per role group (the coordinator's carries `discovery.uri`, since it publishes
//! the pod while it is not Ready), a metrics Service per role group, and what routes to
//! the coordinator Service from outside: an Ingress, or an HTTPRoute with its
//! BackendTLSPolicy.

use k8s_openapi::api::core::v1::Service;
use strata_model::build::{
    ContainerPort, PrometheusScrape, ScrapeScheme, client_service as client, object_meta,
};

use crate::config::security::HTTPS_PORT;
use crate::config::server::HTTP_PORT;
use crate::validate::{TrinoRole, ValidatedCluster, ValidatedRoleGroup};

/// The HTTP port of every node without TLS.
pub const HTTP: ContainerPort = ContainerPort {
    name: "http",
    number: HTTP_PORT,
};

/// The HTTPS port of every node with TLS.
pub const HTTPS: ContainerPort = ContainerPort {
    name: "https",
    number: HTTPS_PORT,
};

/// The one port every node serves: HTTPS with TLS, HTTP without.
pub fn server_port(cluster: &ValidatedCluster) -> ContainerPort {
    if cluster.security.tls.is_some() {
        HTTPS
    } else {
        HTTP
    }
}

/// `<trino>-<role>-<rg>`: the StatefulSet's `serviceName`.
pub fn headless_service(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> Service {
    group.headless_service(&cluster.identity.namespace, &[server_port(cluster)])
}

/// `<trino>-<role>-<rg>-metrics`: scraped pod by pod at `/metrics`, on the server port
/// itself, where Trino serves its metrics behind the cluster's TLS and authentication.
pub fn metrics_service(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> Service {
    group.metrics_service(
        &cluster.identity.namespace,
        PrometheusScrape {
            port: server_port(cluster),
            path: METRICS_PATH,
            scheme: if cluster.security.tls.is_some() {
                ScrapeScheme::Https
            } else {
                ScrapeScheme::Http
            },
        },
    )
}

/// Where every node serves its metrics (airlift's OpenMetrics resource).
pub const METRICS_PATH: &str = "/metrics";

/// `<trino>-coordinator`: where clients connect and workers announce themselves.
pub fn coordinator_service(cluster: &ValidatedCluster) -> Service {
    let coordinators = cluster
        .role(TrinoRole::Coordinator)
        .map(|role| role.labels.clone())
        .unwrap_or_else(|| cluster.identity.labels.clone());
    let mut service = client(
        object_meta(
            &cluster.coordinator_service(),
            &cluster.identity.namespace,
            coordinators.labels(),
        ),
        coordinators.selector(),
        &[server_port(cluster)],
    );
    cluster.service.apply_to(&mut service);
    service
}

/// `<trino>`: the HTTPRoute to the coordinator Service's server port, with
/// `clusterConfig.httpRoute`.
pub fn http_route(cluster: &ValidatedCluster) -> Option<strata_model::http_route::HttpRoute> {
    cluster.http_route.as_ref().map(|route| {
        strata_model::http_route::http_route(
            route,
            cluster.identity.name.as_str(),
            &cluster.identity.namespace,
            cluster.identity.labels.labels(),
            &cluster.coordinator_service(),
            server_port(cluster).number,
        )
    })
}

/// `<trino>`: with an HTTPRoute and TLS, how the Gateway checks the coordinator's
/// certificate: against the discovery ConfigMap's `ca.crt` (the operator's CA, or the
/// user's), under the coordinator Service's FQDN, which every certificate covers.
pub fn backend_tls_policy(
    cluster: &ValidatedCluster,
) -> Option<strata_model::http_route::BackendTlsPolicy> {
    if cluster.http_route.is_none() || cluster.security.tls.is_none() {
        return None;
    }
    let hostname = crate::build::certificates::coordinator_service_names(cluster)
        .into_iter()
        .next()?;
    Some(strata_model::http_route::backend_tls_policy(
        cluster.identity.name.as_str(),
        &cluster.identity.namespace,
        cluster.identity.labels.labels(),
        &cluster.coordinator_service(),
        cluster.identity.name.as_str(),
        &hostname,
    ))
}

/// `<trino>`: the Ingress to the coordinator Service's server port, with
/// `clusterConfig.ingress`.
pub fn ingress(cluster: &ValidatedCluster) -> Option<k8s_openapi::api::networking::v1::Ingress> {
    cluster.ingress.as_ref().map(|ingress| {
        ingress.ingress(
            object_meta(
                cluster.identity.name.as_str(),
                &cluster.identity.namespace,
                cluster.identity.labels.labels(),
            ),
            &cluster.coordinator_service(),
            server_port(cluster).name,
        )
    })
}
