//! Build: pure functions from a [`ValidatedCluster`] to the objects the operator wants.
//!
//! | object | name | per |
//! | --- | --- | --- |
//! | Secret `internal-communication.shared-secret` (created once, never overwritten or rendered) | `<trino>-internal-secret` | cluster |
//! | ConfigMap with one `<catalog>.properties` per selected `TrinoCatalog` | `<trino>-catalog` | cluster |
//! | ConfigMap (`config.properties`, `node.properties`, `jvm.config`, `log.properties`, access control, scripts) | `<trino>-<role>-<rg>` | role group |
//! | headless Service | `<trino>-<role>-<rg>` | role group |
//! | StatefulSet | `<trino>-<role>-<rg>` | role group |
//! | PodDisruptionBudget (unless disabled) | `<trino>-<role>` | role |
//! | coordinator Service (8080) | `<trino>-coordinator` | cluster |

pub mod config_map;
pub mod container;
pub mod internal_secret;
pub mod service;
pub mod statefulset;

use strata_model::pdb::defaults;
use strata_operator::apply::DesiredObjects;
use strata_operator::pipeline::Prepared;

use crate::validate::{TrinoRole, ValidatedCluster};

/// Every object of the cluster in the apply step's form: the Secret and the files
/// first, so they exist before the pods that use them.
pub fn cluster_objects(cluster: &ValidatedCluster) -> DesiredObjects {
    let mut desired = DesiredObjects::new();
    desired.push_create_once(
        internal_secret::internal_secret(cluster),
        internal_secret::fill_internal_secret,
    );
    let catalogs = config_map::catalog_config_map(cluster);
    let catalog_data = catalogs.data.clone().unwrap_or_default();
    desired.push(catalogs);
    for role in &cluster.roles {
        for group in &role.groups {
            let config_map = config_map::role_group_config_map(cluster, group);
            let hash = config_map::pod_config_hash(&config_map, &catalog_data);
            desired.push(config_map);
            desired.push(service::headless_service(cluster, group));
            desired.push(statefulset::stateful_set(cluster, role, group, &hash));
        }
        let default_max_unavailable = match role.role {
            TrinoRole::Coordinator => defaults::trino_coordinators(),
            TrinoRole::Worker => defaults::trino_workers(role.replicas()),
        };
        if let Some(pdb) = role.pdb(&cluster.identity.namespace, default_max_unavailable) {
            desired.push(pdb);
        }
    }
    desired.push(service::coordinator_service(cluster));
    desired
}

/// Step 3 of the pipeline.
pub fn build(cluster: &ValidatedCluster) -> Prepared {
    let mut prepared = Prepared::new(
        cluster_objects(cluster),
        cluster.identity.image.product_version.clone(),
    );
    prepared.warnings = cluster.warnings.clone();
    prepared
}

#[cfg(test)]
mod tests;
