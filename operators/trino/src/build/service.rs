//! Services: the coordinator Service on 8080 for clients, and a headless Service per
//! role group (the coordinator's carries `discovery.uri`, since it publishes the pod
//! while it is not Ready).

use k8s_openapi::api::core::v1::Service;
use strata_model::build::{ContainerPort, client_service as client, object_meta};

use crate::config::server::HTTP_PORT;
use crate::validate::{TrinoRole, ValidatedCluster, ValidatedRoleGroup};

/// The HTTP port of every node.
pub const HTTP: ContainerPort = ContainerPort {
    name: "http",
    number: HTTP_PORT,
};

/// `<trino>-<role>-<rg>`: the StatefulSet's `serviceName`.
pub fn headless_service(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> Service {
    group.headless_service(&cluster.identity.namespace, &[HTTP])
}

/// `<trino>-coordinator`: where clients connect and workers announce themselves.
pub fn coordinator_service(cluster: &ValidatedCluster) -> Service {
    let coordinators = cluster
        .role(TrinoRole::Coordinator)
        .map(|role| role.labels.clone())
        .unwrap_or_else(|| cluster.identity.labels.clone());
    client(
        object_meta(
            &cluster.coordinator_service(),
            &cluster.identity.namespace,
            coordinators.labels(),
        ),
        coordinators.selector(),
        &[HTTP],
    )
}
