//! Services: one headless Service per role group for stable Pod DNS names, one metrics
//! Service per role group for Prometheus, and the client Service of the whole cluster.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::metadata;
use crate::config::zoo_cfg::{CLIENT_PORT, LEADER_ELECTION_PORT, METRICS_PORT, QUORUM_PORT};
use crate::validate::{ValidatedCluster, ValidatedRoleGroup};

/// Name of the client port on Services and containers.
pub const CLIENT_PORT_NAME: &str = "client";
/// Name of the quorum port.
pub const QUORUM_PORT_NAME: &str = "quorum";
/// Name of the leader election port.
pub const LEADER_ELECTION_PORT_NAME: &str = "leader-election";
/// Name of the Prometheus metrics port.
pub const METRICS_PORT_NAME: &str = "metrics";

/// A TCP port whose target is the container port of the same name.
pub(super) fn port(name: &str, number: u16) -> ServicePort {
    ServicePort {
        name: Some(name.to_owned()),
        port: i32::from(number),
        target_port: Some(IntOrString::String(name.to_owned())),
        protocol: Some("TCP".to_owned()),
        ..ServicePort::default()
    }
}

/// `<cluster>-server-<group>`: the StatefulSet's `serviceName`, giving each Pod the DNS
/// name used in the `server.N` lines.
///
/// It publishes addresses of Pods that are not ready: a ZooKeeper server only becomes
/// ready once it has joined a quorum, and it can only join after resolving its peers, so
/// hiding unready Pods would keep a fresh ensemble from ever forming.
pub fn headless_service(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> Service {
    Service {
        metadata: metadata(
            group.name.object_name(),
            &cluster.namespace,
            group.labels.labels(),
        ),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".to_owned()),
            publish_not_ready_addresses: Some(true),
            selector: Some(group.labels.selector()),
            ports: Some(vec![
                port(CLIENT_PORT_NAME, CLIENT_PORT),
                port(QUORUM_PORT_NAME, QUORUM_PORT),
                port(LEADER_ELECTION_PORT_NAME, LEADER_ELECTION_PORT),
            ]),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}

/// `<cluster>-server-<group>-metrics`: a headless Service whose endpoints Prometheus
/// scrapes Pod by Pod, found through the conventional `prometheus.io/*` annotations.
/// Unready Pods are included: metrics of a server that lost its quorum matter most.
pub fn metrics_service(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> Service {
    let mut meta = metadata(
        &metrics_service_name(group),
        &cluster.namespace,
        group.labels.labels(),
    );
    meta.annotations = Some(BTreeMap::from(
        [
            ("prometheus.io/scrape", "true".to_owned()),
            ("prometheus.io/port", METRICS_PORT.to_string()),
            ("prometheus.io/path", "/metrics".to_owned()),
            ("prometheus.io/scheme", "http".to_owned()),
        ]
        .map(|(key, value)| (key.to_owned(), value)),
    ));
    Service {
        metadata: meta,
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".to_owned()),
            publish_not_ready_addresses: Some(true),
            selector: Some(group.labels.selector()),
            ports: Some(vec![port(METRICS_PORT_NAME, METRICS_PORT)]),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}

/// The metrics Service's name; the role group name is at most 52 characters, so this fits
/// the 63 characters of a Service name.
pub fn metrics_service_name(group: &ValidatedRoleGroup) -> String {
    format!("{}-metrics", group.name.object_name())
}

/// `<cluster>`: the Service clients connect to. It selects every server Pod of every role
/// group but only ready ones, so clients never land on a server without quorum.
pub fn client_service(cluster: &ValidatedCluster) -> Service {
    Service {
        metadata: metadata(
            cluster.name.client_service_name(),
            &cluster.namespace,
            cluster.cluster_labels.labels(),
        ),
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".to_owned()),
            selector: Some(cluster.role_labels.selector()),
            ports: Some(vec![port(CLIENT_PORT_NAME, CLIENT_PORT)]),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}
