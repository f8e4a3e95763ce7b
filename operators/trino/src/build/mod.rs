//! Build: pure functions from a [`ValidatedCluster`] to the objects the operator wants.
//!
//! | object | name | per |
//! | --- | --- | --- |
//! | Secret `internal-communication.shared-secret` (created once, never overwritten or rendered) | `<trino>-internal-secret` | cluster |
//! | ConfigMap with one `<catalog>.properties` per selected `TrinoCatalog` | `<trino>-catalog` | cluster |
//! | ConfigMap (`config.properties`, `node.properties`, `jvm.config`, `log.properties`, access control, scripts) | `<trino>-<role>-<rg>` | role group |
//! | headless Service | `<trino>-<role>-<rg>` | role group |
//! | metrics Service (`/metrics` on the server port) | `<trino>-<role>-<rg>-metrics` | role group |
//! | StatefulSet | `<trino>-<role>-<rg>` | role group |
//! | PodDisruptionBudget (unless disabled) | `<trino>-<role>` | role |
//! | coordinator Service (8443, or 8080 without TLS) | `<trino>-coordinator` | cluster |
//! | the CA and a certificate per role group (with the operator's certificates) | `<trino>-ca`, `<trino>-<role>-<rg>-tls` | cluster, role group |
//! | ServiceMonitor and PrometheusRule (with `clusterConfig.monitoring`) | `<trino>` | cluster |
//! | Ingress (with `clusterConfig.ingress`) | `<trino>` | cluster |
//! | HTTPRoute, and with TLS a BackendTLSPolicy (with `clusterConfig.httpRoute`, where the Gateway API is served) | `<trino>` | cluster |
//! | the shutdown user's, the metrics user's and the users' password files, the access control rules, the discovery ConfigMap | see [`security`] | cluster |

pub mod alerts;
pub mod certificates;
pub mod config_map;
pub mod container;
pub mod internal_secret;
pub mod monitoring;
pub mod security;
pub mod service;
pub mod statefulset;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Service;
use strata_model::build::config_hash;
use strata_model::pdb::defaults;
use strata_operator::apply::DesiredObjects;
use strata_operator::pipeline::Prepared;
use strata_operator::roll::stateless::RESTART_TOGETHER_ANNOTATION;

pub use self::security::SecurityMaterial;
use crate::validate::{TrinoRole, ValidatedCluster};

/// What the build takes beyond the model: what the controller read in the cluster.
#[derive(Clone, Debug, Default)]
pub struct BuildInputs {
    /// The versions of the Secrets and ConfigMaps the catalogs read: a change restarts
    /// every pod at once.
    pub catalog_versions: BTreeMap<String, String>,
    /// The certificates' fingerprints (or the user's Secret's version): a change rolls
    /// the pods, the workers one at a time through their drain.
    pub certificate_versions: BTreeMap<String, String>,
    /// The CA, the rules and the password file.
    pub security: SecurityMaterial,
    /// The internal shared secret's id ([`internal_secret::shared_secret_id`]): a new
    /// one restarts every pod at once. `None` for `render`, and for a Secret made
    /// before ids.
    pub shared_secret_id: Option<String>,
}

/// Every object of the cluster in the apply step's form: the Secrets and the files
/// first, so they exist before the pods that use them.
pub fn cluster_objects(cluster: &ValidatedCluster, inputs: &BuildInputs) -> DesiredObjects {
    let mut desired = DesiredObjects::new();
    desired.push_create_once(
        internal_secret::internal_secret(cluster, inputs.shared_secret_id.as_deref()),
        internal_secret::fill_internal_secret,
    );
    security::push_security_objects(&mut desired, cluster, &inputs.security);
    let catalogs = config_map::catalog_config_map(cluster);
    let catalog_data = catalogs.data.clone().unwrap_or_default();
    desired.push(catalogs);
    let mut metrics_services = Vec::new();
    for role in &cluster.roles {
        for group in &role.groups {
            let config_map = config_map::role_group_config_map(cluster, group);
            let hash = config_map::pod_config_hash(&config_map, &catalog_data);
            desired.push(config_map);
            desired.push(service::headless_service(cluster, group));
            let metrics = service::metrics_service(cluster, group);
            metrics_services.push(metrics.clone());
            desired.push(metrics);
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
    if let Some(ingress) = service::ingress(cluster) {
        desired.push(ingress);
    }
    if let Some(route) = service::http_route(cluster) {
        desired.push(route);
    }
    if let Some(policy) = service::backend_tls_policy(cluster) {
        desired.push(policy);
    }
    let services: Vec<&Service> = metrics_services.iter().collect();
    desired.push_monitoring(monitoring::monitoring_objects(cluster, &services));
    desired.annotate_pod_templates(
        RESTART_TOGETHER_ANNOTATION,
        &restart_together_hash(
            cluster,
            &catalog_data,
            &inputs.catalog_versions,
            inputs.shared_secret_id.as_deref(),
        ),
    );
    desired
}

/// What every pod restarts for at once, without a drain:
/// - the catalog files, and the versions of the Secrets and ConfigMaps the catalogs
///   read (`versions`): Trino reads static catalogs only at start, so a catalog change
///   restarts the coordinator and every running query with it; workers that then
///   drained one by one would serve old and new catalogs side by side for the whole
///   roll;
/// - whether the nodes speak TLS and authenticate: nodes on either side of a switch
///   cannot talk to each other, and a drain would wait for workers that cannot reach
///   the coordinator;
/// - the internal shared secret's id (`shared_secret_id`): nodes holding two values
///   reject each other's requests.
pub fn restart_together_hash(
    cluster: &ValidatedCluster,
    catalog_files: &BTreeMap<String, String>,
    versions: &BTreeMap<String, String>,
    shared_secret_id: Option<&str>,
) -> String {
    let mut data: BTreeMap<String, String> = catalog_files
        .iter()
        .map(|(file, content)| (format!("catalog/{file}"), content.clone()))
        .collect();
    data.extend(versions.clone());
    let settings = cluster.security.settings();
    if settings.tls {
        data.insert("security/tls".to_owned(), "on".to_owned());
    }
    if !settings.authenticators.is_empty() {
        data.insert("security/authentication".to_owned(), "on".to_owned());
    }
    if let Some(id) = shared_secret_id {
        data.insert("security/shared-secret".to_owned(), id.to_owned());
    }
    config_hash(&data)
}

/// Step 3 of the pipeline: the objects, rolling on the certificates and restarting
/// together on the catalogs' references ([`Prepared::rolling_on`]).
pub fn build(cluster: &ValidatedCluster, inputs: &BuildInputs) -> Prepared {
    let objects = cluster_objects(cluster, inputs);
    let mut versions = inputs.catalog_versions.clone();
    versions.extend(inputs.certificate_versions.clone());
    let mut prepared = Prepared::new(objects, cluster.identity.image.product_version.clone())
        .rolling_on(&versions);
    prepared.warnings = cluster.warnings.clone();
    prepared
}

#[cfg(test)]
mod tests;
