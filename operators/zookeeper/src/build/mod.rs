//! Build: pure functions from a [`ValidatedCluster`] to the objects the operator wants.
//!
//! No client is involved, so the controller, `render` and the tests produce exactly the
//! same objects. Every object carries the recommended labels and the cluster's namespace
//! but no owner reference: the apply step adds it, because only it knows the owner's uid.
//!
//! | object | name | per |
//! | --- | --- | --- |
//! | ConfigMap (`zoo.cfg`, `logback.xml`) | `<zk>-server-<rg>` | role group |
//! | headless Service | `<zk>-server-<rg>` | role group |
//! | metrics Service | `<zk>-server-<rg>-metrics` | role group |
//! | StatefulSet | `<zk>-server-<rg>` | role group |
//! | PodDisruptionBudget (unless disabled) | `<zk>-server` | role |
//! | client Service | `<zk>` | cluster |
//! | discovery ConfigMap | `<zk>` | cluster |
//! | CA Secret (TLS with the operator's certificates) | `<zk>-ca` | cluster |
//! | certificate Secret (the same) | `<zk>-server-<rg>-tls` | role group |
//!
//! The Secrets are made by the controller's certificate step, which alone can read what
//! they hold; `render` shows them without values ([`certificates`]).

pub mod alerts;
pub mod certificates;
pub mod config_map;
pub mod container;
pub mod discovery;
pub mod pdb;
pub mod service;
pub mod statefulset;
pub mod znode_client;

use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
pub use strata_model::build::RoleGroupObjects;
use strata_model::monitoring::{MonitoringObjects, ScrapeSecurity, cluster_monitoring};
use strata_operator::apply::DesiredObjects;
use strata_operator::pipeline::Prepared;

pub use self::discovery::{DiscoveryTls, znode_discovery_config_map, znode_path};
use crate::validate::{ValidatedCluster, ValidatedRoleGroup};

/// Every object of a cluster, typed, for callers that need to look inside (tests, the
/// status step reading StatefulSet names).
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterObjects {
    /// Per role group, sorted by role group name.
    pub role_groups: Vec<RoleGroupObjects>,
    /// The role's budget; `None` when disabled, so the apply step prunes it.
    pub server_pdb: Option<PodDisruptionBudget>,
    /// `<zk>`: where clients connect.
    pub client_service: Service,
    /// `<zk>`: the connection string for clients.
    pub discovery_config_map: ConfigMap,
    /// `<zk>`: the ServiceMonitor and PrometheusRule the cluster asks for.
    pub monitoring: MonitoringObjects,
}

/// Builds the objects of one role group; the StatefulSet's Pod template carries the hash
/// of the ConfigMap built alongside it.
pub fn role_group_objects(
    cluster: &ValidatedCluster,
    group: &ValidatedRoleGroup,
) -> RoleGroupObjects {
    RoleGroupObjects::new(
        config_map::role_group_config_map(cluster, group),
        service::headless_service(cluster, group),
        service::metrics_service(cluster, group),
        |hash| statefulset::stateful_set(cluster, group, hash),
    )
}

/// Builds every object of the cluster.
pub fn build_cluster(cluster: &ValidatedCluster) -> ClusterObjects {
    let role_groups: Vec<RoleGroupObjects> = cluster
        .servers
        .groups
        .iter()
        .map(|group| role_group_objects(cluster, group))
        .collect();
    let monitoring = cluster_monitoring(
        &cluster.monitoring,
        &cluster.identity,
        &RoleGroupObjects::metrics_services(&role_groups),
        &ScrapeSecurity::default(),
        |matchers| alerts::rule_groups(matchers, cluster.ensemble_servers().len() == 1),
    );
    ClusterObjects {
        role_groups,
        server_pdb: pdb::server_pdb(cluster),
        client_service: service::client_service(cluster),
        discovery_config_map: discovery::cluster_discovery_config_map(cluster),
        monitoring,
    }
}

/// Every object of the cluster in the apply step's form.
///
/// The typed objects are destructured field by field, so adding an object kind to
/// [`ClusterObjects`] without handing it to the apply step does not compile.
pub fn cluster_objects(cluster: &ValidatedCluster) -> DesiredObjects {
    let ClusterObjects {
        role_groups,
        server_pdb,
        client_service,
        discovery_config_map,
        monitoring,
    } = build_cluster(cluster);
    let mut desired = DesiredObjects::new();
    for objects in role_groups {
        desired.push_role_group(objects);
    }
    if let Some(pdb) = server_pdb {
        desired.push(pdb);
    }
    desired.push(client_service);
    desired.push(discovery_config_map);
    desired.push_monitoring(monitoring);
    desired
}

/// Step 3 of the pipeline: the objects of a validated cluster and the version they run.
pub fn build(cluster: &ValidatedCluster) -> Prepared {
    Prepared::new(
        cluster_objects(cluster),
        cluster.identity.image.product_version.clone(),
    )
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tls_tests;
