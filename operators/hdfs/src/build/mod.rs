//! Build: pure functions from a [`ValidatedCluster`] and what the operator observed of
//! the namenodes to the objects the operator wants.
//!
//! | object | name | per |
//! | --- | --- | --- |
//! | ConfigMap (`core-site.xml`, `hdfs-site.xml`, `log4j.properties`, scripts) | `<hdfs>-<role>-<rg>` | role group |
//! | headless Service | `<hdfs>-<role>-<rg>` | role group |
//! | Service of one pod (namenodes, journalnodes) | `<hdfs>-<role>-<rg>-<ordinal>` | pod |
//! | exposed HTTP Service (with `nameNodeHttpService`) | `<hdfs>-namenode-<rg>-<ordinal>-http` | namenode pod |
//! | Ingress at `<pod>.<host>` (with `nameNodeIngress`) | `<hdfs>-namenode-<rg>-<ordinal>-http` | namenode pod |
//! | metrics Service (`/prom`) | `<hdfs>-<role>-<rg>-metrics` | role group |
//! | StatefulSet | `<hdfs>-<role>-<rg>` | role group |
//! | PodDisruptionBudget (unless disabled) | `<hdfs>-<role>` | role |
//! | namenode state ConfigMap (cluster ID, excluded datanodes) | `<hdfs>-namenode-state` | cluster |
//! | discovery ConfigMap (`core-site.xml`, `hdfs-site.xml`) | `<hdfs>` | cluster |

pub mod alerts;
pub mod config_map;
pub mod container;
pub mod pdb;
pub mod service;
pub mod statefulset;

use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
pub use strata_model::build::RoleGroupObjects;
use strata_model::monitoring::{MonitoringObjects, ScrapeSecurity, cluster_monitoring};
use strata_operator::apply::DesiredObjects;
use strata_operator::pipeline::Prepared;

use crate::config::zookeeper_tls::fill_client_keystore;
use crate::validate::{ValidatedCluster, ValidatedRole, ValidatedRoleGroup};

/// What the operator knows about the namespace beyond the spec: the cluster ID once
/// a namenode reported it, the datanodes being taken out of service, and the
/// journalnodes the namenodes write to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NameNodeState {
    /// The namespace's cluster ID, as a namenode reported it; never guessed.
    pub cluster_id: Option<String>,
    /// The datanodes the namenodes decommission, a line each: host name, then the pod's
    /// IP once known ([`crate::controller::datanodes::ExcludedHost`]).
    pub excluded_datanodes: Vec<String>,
    /// The journalnodes the namenodes are known to write to: a new set is recorded
    /// only once every namenode runs on it ([`crate::journal`]).
    pub journal_nodes: Vec<String>,
    /// The out-of-sync journalnodes a new edit log segment is asked for, empty when none
    /// is ([`crate::journal_sync`]).
    pub roll_edits: String,
}

/// Every object of a cluster, typed.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterObjects {
    /// A Service per namenode and journalnode pod, roles in roll order.
    pub pod_services: Vec<Service>,
    /// The namenodes' exposed HTTP Services, when the cluster asks for them.
    pub namenode_http_services: Vec<Service>,
    /// The namenodes' web UI Ingresses, when the cluster asks for them.
    pub namenode_ingresses: Vec<Ingress>,
    /// Per role group, roles in roll order, groups by name.
    pub role_groups: Vec<RoleGroupObjects>,
    /// Per role, unless disabled.
    pub pdbs: Vec<PodDisruptionBudget>,
    /// The cluster ID and the exclude list the namenodes read.
    pub namenode_state: ConfigMap,
    /// `<hdfs>`: the client configuration.
    pub discovery_config_map: ConfigMap,
    /// `<hdfs>-zookeeper-client`: the ZKFCs' keystore, while ZooKeeper serves TLS and
    /// the ZNode gives no client certificate. Its store is made once, when it is
    /// created ([`fill_client_keystore`]).
    pub zookeeper_client: Option<Secret>,
    /// `<hdfs>`: the ServiceMonitor and PrometheusRule the cluster asks for.
    pub monitoring: MonitoringObjects,
}

/// Builds the objects of one role group; the StatefulSet's pod template carries the
/// hash of the ConfigMap built alongside it.
pub fn role_group_objects(
    cluster: &ValidatedCluster,
    role: &ValidatedRole,
    group: &ValidatedRoleGroup,
) -> RoleGroupObjects {
    RoleGroupObjects::new(
        config_map::role_group_config_map(cluster, group),
        service::headless_service(cluster, role.role, group),
        service::metrics_service(cluster, role.role, group),
        |hash| statefulset::stateful_set(cluster, role, group, hash),
    )
}

/// Builds every object of the cluster.
pub fn build_cluster(cluster: &ValidatedCluster, state: &NameNodeState) -> ClusterObjects {
    let role_groups: Vec<RoleGroupObjects> = cluster
        .roles
        .iter()
        .flat_map(|role| {
            role.groups
                .iter()
                .map(move |group| role_group_objects(cluster, role, group))
        })
        .collect();
    let monitoring = cluster_monitoring(
        &cluster.monitoring,
        &cluster.identity,
        &RoleGroupObjects::metrics_services(&role_groups),
        &ScrapeSecurity::default(),
        alerts::rule_groups,
    );
    ClusterObjects {
        pod_services: cluster
            .roles
            .iter()
            .flat_map(|role| {
                role.groups
                    .iter()
                    .flat_map(move |group| service::pod_services(cluster, role.role, group))
            })
            .collect(),
        namenode_http_services: service::namenode_http_services(cluster),
        namenode_ingresses: service::namenode_ingresses(cluster),
        role_groups,
        pdbs: cluster
            .roles
            .iter()
            .filter_map(|role| pdb::role_pdb(cluster, role))
            .collect(),
        namenode_state: config_map::namenode_state_config_map(cluster, state),
        discovery_config_map: config_map::discovery_config_map(cluster),
        zookeeper_client: (cluster.zookeeper.tls && cluster.zookeeper.client_secret.is_none())
            .then(|| statefulset::zookeeper_client_secret(cluster)),
        monitoring,
    }
}

/// Every object of the cluster in the apply step's form; destructured field by field,
/// so an object added to [`ClusterObjects`] but not applied does not compile.
pub fn cluster_objects(cluster: &ValidatedCluster, state: &NameNodeState) -> DesiredObjects {
    let ClusterObjects {
        pod_services,
        namenode_http_services,
        namenode_ingresses,
        role_groups,
        pdbs,
        namenode_state,
        discovery_config_map,
        zookeeper_client,
        monitoring,
    } = build_cluster(cluster, state);
    let mut desired = DesiredObjects::new();
    if let Some(secret) = zookeeper_client {
        desired.push_create_once(secret, fill_client_keystore);
    }
    // The state the namenodes mount exists before their pods do.
    desired.push(namenode_state);
    // The names the configuration uses exist before the pods that resolve them.
    for service in pod_services.into_iter().chain(namenode_http_services) {
        desired.push(service);
    }
    for objects in role_groups {
        desired.push_role_group(objects);
    }
    for pdb in pdbs {
        desired.push(pdb);
    }
    for ingress in namenode_ingresses {
        desired.push(ingress);
    }
    desired.push(discovery_config_map);
    desired.push_monitoring(monitoring);
    desired
}

/// Step 3 of the pipeline: the objects of a validated cluster and the version they run.
pub fn build(cluster: &ValidatedCluster, state: &NameNodeState) -> Prepared {
    Prepared::new(
        cluster_objects(cluster, state),
        cluster.identity.image.product_version.clone(),
    )
}

#[cfg(test)]
mod tests;
