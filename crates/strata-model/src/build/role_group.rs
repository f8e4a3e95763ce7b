//! The objects every role group of a StatefulSet-based product has: its files, a
//! headless Service for stable pod names, a metrics Service and the StatefulSet, whose
//! pod template carries the hash of the files so a changed file rolls the pods.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Service};

use super::meta::{config_hash, object_meta};
use super::service::{PrometheusScrape, metrics_service};
use crate::labels::RecommendedLabels;

/// One role group's objects, typed, in the order the apply step sends them: the
/// files exist before the pods that mount them.
#[derive(Clone, Debug, PartialEq)]
pub struct RoleGroupObjects {
    /// The product's files.
    pub config_map: ConfigMap,
    /// Stable pod DNS names (`<pod>.<group>`).
    pub headless_service: Service,
    /// The Prometheus scrape target.
    pub metrics_service: Service,
    /// The pods.
    pub stateful_set: StatefulSet,
}

impl RoleGroupObjects {
    /// The objects of a role group: `stateful_set` gets the hash of `config_map`'s data.
    pub fn new(
        config_map: ConfigMap,
        headless_service: Service,
        metrics_service: Service,
        stateful_set: impl FnOnce(&str) -> StatefulSet,
    ) -> Self {
        let hash = config_map
            .data
            .as_ref()
            .map(config_hash)
            .unwrap_or_default();
        Self {
            stateful_set: stateful_set(&hash),
            config_map,
            headless_service,
            metrics_service,
        }
    }

    /// The metrics Services of `role_groups`, which a ServiceMonitor scrapes.
    pub fn metrics_services(role_groups: &[Self]) -> Vec<&Service> {
        role_groups
            .iter()
            .map(|objects| &objects.metrics_service)
            .collect()
    }
}

/// `<group object name>-metrics`; role group object names are at most 52 characters,
/// so this fits the 63 of a Service name.
pub fn metrics_service_name(group_object_name: &str) -> String {
    format!("{group_object_name}-metrics")
}

/// The metrics Service of the role group `group_object_name`, scraped pod by pod.
pub fn role_group_metrics_service(
    group_object_name: &str,
    namespace: &str,
    labels: &RecommendedLabels,
    scrape: PrometheusScrape,
) -> Service {
    metrics_service(
        object_meta(
            &metrics_service_name(group_object_name),
            namespace,
            labels.labels(),
        ),
        labels.selector(),
        scrape,
    )
}
