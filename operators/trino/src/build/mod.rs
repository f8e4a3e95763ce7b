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

use std::collections::BTreeMap;

use strata_model::build::config_hash;
use strata_model::pdb::defaults;
use strata_operator::apply::DesiredObjects;
use strata_operator::pipeline::Prepared;
use strata_operator::roll::stateless::RESTART_TOGETHER_ANNOTATION;

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
    desired.annotate_pod_templates(
        RESTART_TOGETHER_ANNOTATION,
        &catalogs_hash(&catalog_data, &BTreeMap::new()),
    );
    desired
}

/// What every pod restarts for at once, without a drain: the catalog files, and the
/// versions of the Secrets and ConfigMaps the catalogs read (`versions`). Trino reads
/// static catalogs only at start, so a catalog change restarts the coordinator and
/// every running query with it; workers that then drained one by one would serve old
/// and new catalogs side by side for the whole roll.
pub fn catalogs_hash(
    catalog_files: &BTreeMap<String, String>,
    versions: &BTreeMap<String, String>,
) -> String {
    let mut data: BTreeMap<String, String> = catalog_files
        .iter()
        .map(|(file, content)| (format!("catalog/{file}"), content.clone()))
        .collect();
    data.extend(versions.clone());
    config_hash(&data)
}

/// Step 3 of the pipeline: the objects, rolling on the `versions` of the objects the
/// catalogs read ([`Prepared::rolling_on`]).
pub fn build(cluster: &ValidatedCluster, versions: &BTreeMap<String, String>) -> Prepared {
    let mut objects = cluster_objects(cluster);
    if !versions.is_empty() {
        let catalog_files = config_map::catalog_config_map(cluster)
            .data
            .unwrap_or_default();
        objects.annotate_pod_templates(
            RESTART_TOGETHER_ANNOTATION,
            &catalogs_hash(&catalog_files, versions),
        );
    }
    let mut prepared =
        Prepared::new(objects, cluster.identity.image.product_version.clone()).rolling_on(versions);
    prepared.warnings = cluster.warnings.clone();
    prepared
}

#[cfg(test)]
mod tests;
