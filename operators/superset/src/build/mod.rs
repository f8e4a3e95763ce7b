//! Build: pure functions from a [`ValidatedCluster`] to the objects the operator wants.
//!
//! | object | name | per |
//! | --- | --- | --- |
//! | Secret `SECRET_KEY` (created once, never overwritten, owned or rendered; unless `secretKeySecret` names the user's) | `<superset>-secret-key` | cluster |
//! | ConfigMap with the Python packages the image lacks (pg8000, authlib) | `<superset>-packages` | cluster |
//! | ConfigMap (`superset_config.py`, the init script) | `<superset>-node-<rg>` | role group |
//! | headless Service | `<superset>-node-<rg>` | role group |
//! | metrics Service (the statsd exporter's 9102) | `<superset>-node-<rg>-metrics` | role group |
//! | StatefulSet | `<superset>-node-<rg>` | role group |
//! | PodDisruptionBudget (unless disabled) | `<superset>-node` | role |
//! | client Service (8088) | `<superset>` | cluster |
//! | Ingress (with `clusterConfig.ingress`) | `<superset>` | cluster |
//! | HTTPRoute (with `clusterConfig.httpRoute`, where the Gateway API is served) | `<superset>` | cluster |
//! | ConfigMap (`superset_config.py`, `strata_celery.py`), headless Service, StatefulSet | `<superset>-worker-<rg>`, `<superset>-beat-<rg>` | Celery role group |
//! | PodDisruptionBudget (unless disabled) | `<superset>-worker`, `<superset>-beat` | Celery role |
//! | ServiceMonitor and PrometheusRule (with `clusterConfig.monitoring`) | `<superset>` | cluster |

pub mod alerts;
pub mod celery;
pub mod config_map;
pub mod container;
pub mod metrics;
pub mod secret_key;
pub mod service;
pub mod statefulset;

use strata_model::pdb::defaults;
use strata_operator::apply::DesiredObjects;
use strata_operator::pipeline::Prepared;

use crate::validate::ValidatedCluster;

/// Every object of the cluster in the apply step's form: the Secret and the files
/// first, so they exist before the pods that use them.
pub fn cluster_objects(cluster: &ValidatedCluster) -> DesiredObjects {
    let mut desired = DesiredObjects::new();
    if let Some(secret) = secret_key::secret_key_secret(cluster) {
        desired.push_retained(secret, secret_key::fill_secret_key);
    }
    if !cluster.wheels.is_empty() {
        desired.push(config_map::packages_config_map(cluster));
    }
    let mut metrics_services = Vec::new();
    for group in &cluster.nodes.groups {
        let config_map = config_map::role_group_config_map(cluster, group);
        let hash = config_map::files_hash(&config_map);
        desired.push(config_map);
        desired.push(service::headless_service(cluster, group));
        let metrics = metrics::metrics_service(cluster, group);
        metrics_services.push(metrics.clone());
        desired.push(metrics);
        desired.push(statefulset::stateful_set(cluster, group, &hash));
    }
    if let Some(pdb) = cluster
        .nodes
        .pdb(&cluster.identity.namespace, defaults::superset_nodes())
    {
        desired.push(pdb);
    }
    celery::push_celery_objects(cluster, &mut desired);
    desired.push(service::client_service(cluster));
    if let Some(ingress) = service::ingress(cluster) {
        desired.push(ingress);
    }
    if let Some(route) = service::http_route(cluster) {
        desired.push(route);
    }
    let services: Vec<&k8s_openapi::api::core::v1::Service> = metrics_services.iter().collect();
    desired.push_monitoring(metrics::monitoring_objects(cluster, &services));
    desired
}

/// Step 3 of the pipeline.
pub fn build(cluster: &ValidatedCluster) -> Prepared {
    Prepared::new(
        cluster_objects(cluster),
        cluster.identity.image.product_version.clone(),
    )
}

#[cfg(test)]
mod tests;
