//! Prometheus Operator objects for a cluster (issue 26, item 2): a ServiceMonitor that
//! scrapes every metrics Service of the cluster, and a PrometheusRule with the alerts
//! that matter for the product.
//!
//! Both kinds come from the Prometheus Operator's CRDs (`monitoring.coreos.com/v1`),
//! which many clusters do not have. A cluster asks for them in
//! `spec.clusterConfig.monitoring`; the operator applies them only where the cluster
//! serves the kinds, and otherwise sets a Warning condition and applies the rest
//! (`strata_operator::child::ChildObject::OPTIONAL`). The metrics Services themselves
//! are always there, with the `prometheus.io/*` annotations that a Prometheus without
//! the operator discovers.
//!
//! The types below hold only the fields the operators set; the API server stores the
//! objects whole, and server-side apply leaves every other field to its owner.

mod rules;
mod service_monitor;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use self::rules::{
    AlertRule, CLUSTER_LABELS, PrometheusRule, PrometheusRuleSpec, RuleGroup, Severity,
    TARGETS_GROUP, cluster_matchers, prometheus_label_name, prometheus_rule, targets_group,
};
pub use self::service_monitor::{
    BasicAuth, CaSource, Endpoint, KeyReference, NamespaceSelector, ScrapeSecurity, ServiceMonitor,
    ServiceMonitorSpec, TlsConfig, service_monitor,
};
use crate::labels::{
    COMPONENT_LABEL, INSTANCE_LABEL, NAME_LABEL, ROLE_GROUP_LABEL, validate_label_value,
};

/// The condition reason of monitoring settings the Prometheus Operator would refuse.
pub const INVALID_MONITORING: &str = "InvalidMonitoring";
/// The label (and annotation) that marks a metrics Service; the ServiceMonitor selects
/// on it, as Prometheus' own Kubernetes discovery examples do on the annotation.
pub const SCRAPE_LABEL: &str = "prometheus.io/scrape";
/// The annotations a metrics Service carries for Prometheus' Kubernetes discovery.
pub const PORT_ANNOTATION: &str = "prometheus.io/port";
/// See [`PORT_ANNOTATION`].
pub const PATH_ANNOTATION: &str = "prometheus.io/path";
/// See [`PORT_ANNOTATION`].
pub const SCHEME_ANNOTATION: &str = "prometheus.io/scheme";

/// The pod labels each scraped series carries (as `app_kubernetes_io_instance` and so
/// on), so alerts and dashboards tell products, clusters, roles and role groups apart:
/// a ZookeeperCluster and a TrinoCluster may share a name and a namespace.
pub const POD_TARGET_LABELS: [&str; 4] = [
    NAME_LABEL,
    INSTANCE_LABEL,
    COMPONENT_LABEL,
    ROLE_GROUP_LABEL,
];

/// `spec.clusterConfig.monitoring`: what the cluster asks of a Prometheus Operator.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Monitoring {
    /// A ServiceMonitor that scrapes every metrics Service of the cluster. Needs the
    /// Prometheus Operator's CRDs; without them the cluster gets a Warning condition
    /// and everything else is applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_monitor: Option<ServiceMonitorSettings>,
    /// A PrometheusRule with the product's alerts (docs/monitoring.md lists them).
    /// Needs the same CRDs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus_rule: Option<PrometheusRuleSettings>,
}

/// `monitoring.serviceMonitor`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ServiceMonitorSettings {
    /// Labels on the ServiceMonitor, for the Prometheus that selects it
    /// (kube-prometheus-stack's default selector is `release: <its release>`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// How often each pod is scraped, a Prometheus duration such as `30s`; the
    /// Prometheus' own interval when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^(0|(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"))]
    pub interval: Option<String>,
}

/// `monitoring.prometheusRule`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PrometheusRuleSettings {
    /// Labels on the PrometheusRule, for the Prometheus that selects it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

impl Monitoring {
    /// Whether the cluster asks for nothing of a Prometheus Operator.
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// What the API server or the Prometheus Operator would refuse, with `field` naming
    /// this value's place in the spec.
    pub fn check(&self, field: &str) -> Result<(), String> {
        if let Some(settings) = &self.service_monitor {
            check_labels(&format!("{field}.serviceMonitor.labels"), &settings.labels)?;
            if let Some(interval) = &settings.interval
                && !is_prometheus_duration(interval)
            {
                return Err(format!(
                    "{field}.serviceMonitor.interval: {interval:?} is not a Prometheus duration such as 30s or 1m30s"
                ));
            }
        }
        if let Some(settings) = &self.prometheus_rule {
            check_labels(&format!("{field}.prometheusRule.labels"), &settings.labels)?;
        }
        Ok(())
    }
}

fn check_labels(field: &str, labels: &BTreeMap<String, String>) -> Result<(), String> {
    for (key, value) in labels {
        if !crate::exposure::is_qualified_name(key) {
            return Err(format!(
                "{field}: {key:?} is not a label key ([prefix/]name, the name at most 63 characters of letters, digits, '-', '_' and '.')"
            ));
        }
        validate_label_value(key, value).map_err(|error| format!("{field}: {error}"))?;
    }
    Ok(())
}

/// Whether `text` is a duration the Prometheus Operator takes: units from hours down to
/// milliseconds, largest first, such as `30s`, `1m30s` or `0`.
fn is_prometheus_duration(text: &str) -> bool {
    if text == "0" {
        return true;
    }
    let mut rest = text;
    let mut last_unit = 0;
    while !rest.is_empty() {
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits == 0 {
            return false;
        }
        rest = &rest[digits..];
        let (unit, order) = match ["ms", "h", "m", "s"]
            .iter()
            .zip([4, 1, 2, 3])
            .find(|(unit, _)| rest.starts_with(**unit))
        {
            Some((unit, order)) => (*unit, order),
            None => return false,
        };
        if order <= last_unit {
            return false;
        }
        last_unit = order;
        rest = &rest[unit.len()..];
    }
    !text.is_empty()
}

/// `metadata` with the user's `labels` added; the recommended labels win, so the
/// operator's watch and pruning still find the object.
fn with_labels(mut metadata: ObjectMeta, labels: &BTreeMap<String, String>) -> ObjectMeta {
    let own = metadata.labels.get_or_insert_with(BTreeMap::new);
    for (key, value) in labels {
        own.entry(key.clone()).or_insert_with(|| value.clone());
    }
    metadata
}

/// The Prometheus Operator objects of one cluster; `None` where it asks for none, so
/// the apply step prunes one asked for before.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MonitoringObjects {
    /// `<cluster>`: scrapes every metrics Service of the cluster.
    pub service_monitor: Option<ServiceMonitor>,
    /// `<cluster>`: the product's alerts for this cluster.
    pub prometheus_rule: Option<PrometheusRule>,
}

/// The objects `monitoring` asks for, for the cluster `identity`, which scrape its
/// metrics `services` with `security`'s certificate check and credentials;
/// `alerts` builds the product's rule groups from the cluster's PromQL label matchers
/// ([`cluster_matchers`]).
pub fn cluster_monitoring(
    monitoring: &Monitoring,
    identity: &crate::identity::ClusterIdentity,
    services: &[&Service],
    security: &ScrapeSecurity,
    alerts: impl FnOnce(&str) -> Vec<RuleGroup>,
) -> MonitoringObjects {
    let name = identity.name.as_str();
    let metadata =
        || crate::build::object_meta(name, &identity.namespace, identity.labels.labels());
    MonitoringObjects {
        service_monitor: monitoring.service_monitor.as_ref().map(|settings| {
            service_monitor(
                metadata(),
                identity.labels.selector(),
                settings,
                services,
                security,
            )
        }),
        prometheus_rule: monitoring.prometheus_rule.as_ref().map(|settings| {
            prometheus_rule(
                metadata(),
                settings,
                alerts(&cluster_matchers(
                    &identity.namespace,
                    identity.labels.app_name(),
                    name,
                )),
            )
        }),
    }
}

macro_rules! monitoring_kind {
    ($kind:ident, $plural:literal) => {
        impl k8s_openapi::Resource for $kind {
            const API_VERSION: &'static str = "monitoring.coreos.com/v1";
            const GROUP: &'static str = "monitoring.coreos.com";
            const KIND: &'static str = stringify!($kind);
            const VERSION: &'static str = "v1";
            const URL_PATH_SEGMENT: &'static str = $plural;
            type Scope = k8s_openapi::NamespaceResourceScope;
        }

        impl k8s_openapi::Metadata for $kind {
            type Ty = ObjectMeta;

            fn metadata(&self) -> &ObjectMeta {
                &self.metadata
            }

            fn metadata_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }
    };
}

monitoring_kind!(ServiceMonitor, "servicemonitors");
monitoring_kind!(PrometheusRule, "prometheusrules");

#[cfg(test)]
mod tests;
