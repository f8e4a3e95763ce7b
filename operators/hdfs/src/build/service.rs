//! Services: a headless Service per role group for the pods' DNS names, a Service per
//! namenode and journalnode pod for names that always resolve (the topology names every
//! namenode and journalnode by it), a metrics Service per role group, and with
//! `clusterConfig.nameNodeHttpService` an exposed HTTP Service per namenode, and with
//! `clusterConfig.nameNodeIngress` an Ingress per namenode.

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::Ingress;
use strata_model::build::{
    ContainerPort, PrometheusScrape, ScrapeScheme, object_meta, pod_service,
};

use crate::config::topology::{
    DATANODE_DATA_PORT, DATANODE_HTTP_PORT, DATANODE_IPC_PORT, JOURNALNODE_HTTP_PORT,
    JOURNALNODE_RPC_PORT, NAMENODE_HTTP_PORT, NAMENODE_RPC_PORT, ZKFC_PORT,
};
use crate::crd::HdfsRole;
use crate::validate::{ValidatedCluster, ValidatedRoleGroup};

/// Namenode RPC, where clients and datanodes connect.
pub const NAMENODE_RPC: ContainerPort = ContainerPort {
    name: "rpc",
    number: NAMENODE_RPC_PORT,
};
/// Namenode HTTP: web UI, JMX, `/isActive`, `/prom`.
pub const NAMENODE_HTTP: ContainerPort = ContainerPort {
    name: "http",
    number: NAMENODE_HTTP_PORT,
};
/// The ZKFC's RPC port.
pub const ZKFC: ContainerPort = ContainerPort {
    name: "zkfc",
    number: ZKFC_PORT,
};
/// Journalnode RPC, where namenodes write the edit log.
pub const JOURNALNODE_RPC: ContainerPort = ContainerPort {
    name: "rpc",
    number: JOURNALNODE_RPC_PORT,
};
/// Journalnode HTTP, where a lagging journalnode fetches edits.
pub const JOURNALNODE_HTTP: ContainerPort = ContainerPort {
    name: "http",
    number: JOURNALNODE_HTTP_PORT,
};
/// Datanode block transfer.
pub const DATANODE_DATA: ContainerPort = ContainerPort {
    name: "data",
    number: DATANODE_DATA_PORT,
};
/// Datanode IPC.
pub const DATANODE_IPC: ContainerPort = ContainerPort {
    name: "ipc",
    number: DATANODE_IPC_PORT,
};
/// Datanode HTTP: JMX and `/prom`.
pub const DATANODE_HTTP: ContainerPort = ContainerPort {
    name: "http",
    number: DATANODE_HTTP_PORT,
};

/// The ports a role's daemon listens on.
pub fn ports(role: HdfsRole) -> &'static [ContainerPort] {
    match role {
        HdfsRole::NameNode => &[NAMENODE_RPC, NAMENODE_HTTP],
        HdfsRole::JournalNode => &[JOURNALNODE_RPC, JOURNALNODE_HTTP],
        HdfsRole::DataNode => &[DATANODE_DATA, DATANODE_IPC, DATANODE_HTTP],
    }
}

/// The HTTP port that serves a role's metrics at `/prom`.
pub fn http_port(role: HdfsRole) -> ContainerPort {
    match role {
        HdfsRole::NameNode => NAMENODE_HTTP,
        HdfsRole::JournalNode => JOURNALNODE_HTTP,
        HdfsRole::DataNode => DATANODE_HTTP,
    }
}

/// `<hdfs>-<role>-<rg>`: the StatefulSet's `serviceName`. It publishes unready pods: a
/// namenode becomes ready only once it reaches the journalnodes by these names.
pub fn headless_service(
    cluster: &ValidatedCluster,
    role: HdfsRole,
    group: &ValidatedRoleGroup,
) -> Service {
    let mut all_ports = ports(role).to_vec();
    if role == HdfsRole::NameNode {
        all_ports.push(ZKFC);
    }
    group.headless_service(&cluster.identity.namespace, &all_ports)
}

/// `<pod>`: a Service per namenode and journalnode pod, the names Hadoop's
/// configuration uses for them ([`crate::config::topology`]). Hadoop resolves these
/// names once and fails for good when one does not resolve, and a pod's name behind the
/// headless Service exists only while the pod has an address; a Service's name resolves
/// always. Datanodes get none: no configuration names them.
pub fn pod_services(
    cluster: &ValidatedCluster,
    role: HdfsRole,
    group: &ValidatedRoleGroup,
) -> Vec<Service> {
    let ports: &[ContainerPort] = match role {
        HdfsRole::NameNode => &[NAMENODE_RPC, NAMENODE_HTTP, ZKFC],
        HdfsRole::JournalNode => &[JOURNALNODE_RPC, JOURNALNODE_HTTP],
        HdfsRole::DataNode => &[],
    };
    if ports.is_empty() {
        return Vec::new();
    }
    group.pod_services(&cluster.identity.namespace, ports)
}

/// Every namenode pod's name, with its role group, in roll order.
fn namenode_pods(
    cluster: &ValidatedCluster,
) -> impl Iterator<Item = (&ValidatedRoleGroup, String)> {
    cluster
        .roles
        .iter()
        .filter(|role| role.role == HdfsRole::NameNode)
        .flat_map(|role| &role.groups)
        .flat_map(|group| {
            (0..group.replicas).map(move |ordinal| (group, group.name.pod_name(ordinal)))
        })
}

/// `<pod>-http`: the namenode's web UI Service, which `clusterConfig.nameNodeHttpService`
/// exposes.
pub fn namenode_http_service_name(pod: &str) -> String {
    format!("{pod}-http")
}

/// The namenodes' HTTP Services with the cluster's exposure, one per namenode pod, so
/// each UI is reached as that namenode's, active or standby. None while the exposure is
/// the default: each namenode's own Service serves HTTP in the cluster already.
pub fn namenode_http_services(cluster: &ValidatedCluster) -> Vec<Service> {
    if cluster.namenode_http_service.is_default() {
        return Vec::new();
    }
    namenode_pods(cluster)
        .map(|(group, pod)| {
            let mut service = pod_service(
                object_meta(
                    &namenode_http_service_name(&pod),
                    &cluster.identity.namespace,
                    group.labels.labels(),
                ),
                &pod,
                &[NAMENODE_HTTP],
            );
            cluster.namenode_http_service.apply_to(&mut service);
            service
        })
        .collect()
}

/// `<pod>-http`: an Ingress per namenode to its own Service's HTTP port, with
/// `clusterConfig.nameNodeIngress`.
pub fn namenode_ingresses(cluster: &ValidatedCluster) -> Vec<Ingress> {
    let Some(ingress) = &cluster.namenode_ingress else {
        return Vec::new();
    };
    namenode_pods(cluster)
        .map(|(group, pod)| {
            ingress.for_namenode(&pod).ingress(
                object_meta(
                    &namenode_http_service_name(&pod),
                    &cluster.identity.namespace,
                    group.labels.labels(),
                ),
                &pod,
                NAMENODE_HTTP.name,
            )
        })
        .collect()
}

/// `<hdfs>-<role>-<rg>-metrics`: scraped pod by pod at `/prom`.
pub fn metrics_service(
    cluster: &ValidatedCluster,
    role: HdfsRole,
    group: &ValidatedRoleGroup,
) -> Service {
    group.metrics_service(
        &cluster.identity.namespace,
        PrometheusScrape {
            port: http_port(role),
            path: "/prom",
            scheme: ScrapeScheme::Http,
        },
    )
}
