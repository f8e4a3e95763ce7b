//! Services: one headless Service per role group for stable Pod DNS names, one metrics
//! Service per role group for Prometheus, and the client Service of the whole cluster.

use k8s_openapi::api::core::v1::Service;
use strata_model::build::{
    ContainerPort, PrometheusScrape, ScrapeScheme, client_service as client, object_meta,
};

use super::container::client_ports;
use crate::config::tls::SECURE_CLIENT_PORT;
use crate::config::zoo_cfg::{CLIENT_PORT, LEADER_ELECTION_PORT, METRICS_PORT, QUORUM_PORT};
use crate::validate::{ValidatedCluster, ValidatedRoleGroup};

/// Where clients connect.
pub const CLIENT: ContainerPort = ContainerPort {
    name: "client",
    number: CLIENT_PORT,
};
/// Where clients connect with TLS on.
pub const SECURE_CLIENT: ContainerPort = ContainerPort {
    name: "client-tls",
    number: SECURE_CLIENT_PORT,
};
/// Followers connect to the leader here.
pub const QUORUM: ContainerPort = ContainerPort {
    name: "quorum",
    number: QUORUM_PORT,
};
/// Servers elect a leader here.
pub const LEADER_ELECTION: ContainerPort = ContainerPort {
    name: "leader-election",
    number: LEADER_ELECTION_PORT,
};
/// ZooKeeper's Prometheus metrics provider.
pub const METRICS: ContainerPort = ContainerPort {
    name: "metrics",
    number: METRICS_PORT,
};

/// `<cluster>-server-<group>`: the StatefulSet's `serviceName`, giving each Pod the DNS
/// name used in the `server.N` lines. It publishes unready Pods: a server becomes ready
/// only once it has joined a quorum, which it can only do after resolving its peers.
pub fn headless_service(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> Service {
    let ports: Vec<ContainerPort> = client_ports(cluster)
        .into_iter()
        .chain([QUORUM, LEADER_ELECTION])
        .collect();
    group.headless_service(&cluster.identity.namespace, &ports)
}

/// `<cluster>-server-<group>-metrics`: scraped Pod by Pod at `/metrics`.
pub fn metrics_service(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> Service {
    group.metrics_service(
        &cluster.identity.namespace,
        PrometheusScrape {
            port: METRICS,
            path: "/metrics",
            scheme: ScrapeScheme::Http,
        },
    )
}

/// `<cluster>`: the Service clients connect to, over every ready server of every group.
pub fn client_service(cluster: &ValidatedCluster) -> Service {
    let mut service = client(
        object_meta(
            cluster.identity.name.client_service_name(),
            &cluster.identity.namespace,
            cluster.identity.labels.labels(),
        ),
        cluster.servers.labels.selector(),
        &client_ports(cluster),
    );
    cluster.service.apply_to(&mut service);
    service
}
