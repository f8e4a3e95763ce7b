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

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::labels::{COMPONENT_LABEL, INSTANCE_LABEL, ROLE_GROUP_LABEL, validate_label_value};

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
/// on), so alerts and dashboards tell clusters, roles and role groups apart.
pub const POD_TARGET_LABELS: [&str; 3] = [INSTANCE_LABEL, COMPONENT_LABEL, ROLE_GROUP_LABEL];

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

/// `monitoring.coreos.com/v1` `ServiceMonitor`, as far as the operators set it.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct ServiceMonitor {
    /// The object's metadata.
    pub metadata: ObjectMeta,
    /// What to scrape.
    pub spec: ServiceMonitorSpec,
}

/// A ServiceMonitor's spec.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ServiceMonitorSpec {
    /// The metrics Services of one cluster.
    pub selector: LabelSelector,
    /// Only the cluster's own namespace.
    pub namespace_selector: NamespaceSelector,
    /// One per distinct port, path and scheme of the selected Services.
    pub endpoints: Vec<Endpoint>,
    /// Pod labels copied onto every series.
    pub pod_target_labels: Vec<String>,
}

/// A ServiceMonitor's `namespaceSelector`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceSelector {
    /// The namespaces whose Services are selected.
    pub match_names: Vec<String>,
}

/// A ServiceMonitor endpoint: where each selected Service's pods are scraped.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    /// The Service port's name.
    pub port: String,
    /// The HTTP path.
    pub path: String,
    /// `http` or `https`.
    pub scheme: String,
    /// The scrape interval, when the cluster sets one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
}

/// `monitoring.coreos.com/v1` `PrometheusRule`, as far as the operators set it.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct PrometheusRule {
    /// The object's metadata.
    pub metadata: ObjectMeta,
    /// The rule groups.
    pub spec: PrometheusRuleSpec,
}

/// A PrometheusRule's spec: the `groups` of a Prometheus rule file.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct PrometheusRuleSpec {
    /// The rule groups.
    pub groups: Vec<RuleGroup>,
}

/// One group of a Prometheus rule file.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct RuleGroup {
    /// The group's name, unique in the rule file.
    pub name: String,
    /// The alerting rules.
    pub rules: Vec<AlertRule>,
}

/// How urgent an alert is, as the `severity` label Alertmanager routes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::AsRefStr)]
#[strum(serialize_all = "lowercase")]
pub enum Severity {
    /// Clients fail now.
    Critical,
    /// Service degrades, or will fail if nothing is done.
    Warning,
}

/// One alerting rule.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct AlertRule {
    /// The alert's name.
    pub alert: String,
    /// The PromQL expression; the alert is pending while it returns series.
    pub expr: String,
    /// How long it must hold before the alert fires.
    #[serde(rename = "for")]
    pub for_: String,
    /// `severity`.
    pub labels: BTreeMap<String, String>,
    /// `summary` and `description`, which may use `$labels` and `$value`.
    pub annotations: BTreeMap<String, String>,
}

impl AlertRule {
    /// An alert on `expr` that fires once it held for `for_`.
    pub fn new(
        alert: &str,
        severity: Severity,
        for_: &str,
        expr: String,
        summary: &str,
        description: &str,
    ) -> Self {
        Self {
            alert: alert.to_owned(),
            expr,
            for_: for_.to_owned(),
            labels: BTreeMap::from([("severity".to_owned(), severity.as_ref().to_owned())]),
            annotations: BTreeMap::from([
                ("summary".to_owned(), summary.to_owned()),
                ("description".to_owned(), description.to_owned()),
            ]),
        }
    }
}

impl RuleGroup {
    /// The product's metric names the group's expressions select, sorted: every name
    /// written with label matchers (`name{...}`), as the operators write each selector,
    /// except Prometheus' own `up`. Tests check that the real product serves every one.
    pub fn metric_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .rules
            .iter()
            .flat_map(|rule| selected_metrics(&rule.expr))
            .filter(|name| name != "up")
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

/// The identifiers directly followed by `{` in a PromQL expression.
fn selected_metrics(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut current = String::new();
    for c in expr.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
            current.push(c);
            continue;
        }
        if c == '{' && current.starts_with(|first: char| !first.is_ascii_digit()) {
            names.push(current.clone());
        }
        current.clear();
    }
    names
}

/// The labels that tell one cluster's series from another's, for `by` and `on` in
/// alert expressions, so that each alert names its cluster.
pub const CLUSTER_LABELS: &str = "namespace, app_kubernetes_io_instance";

/// The PromQL label matchers of one cluster's series: its namespace (which every
/// ServiceMonitor target carries) and its instance label ([`POD_TARGET_LABELS`]).
pub fn cluster_matchers(namespace: &str, cluster: &str) -> String {
    format!(
        "namespace=\"{namespace}\",{}=\"{cluster}\"",
        prometheus_label_name(INSTANCE_LABEL)
    )
}

/// The name Prometheus gives a Kubernetes label: every character that may not be in a
/// label name becomes `_` (`app.kubernetes.io/instance` is `app_kubernetes_io_instance`).
pub fn prometheus_label_name(label: &str) -> String {
    label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The ServiceMonitor of a cluster whose objects carry `selector` (name and instance),
/// scraping each metrics Service in `services` (those with [`SCRAPE_LABEL`]) at the
/// port, path and scheme its annotations name.
pub fn service_monitor(
    metadata: ObjectMeta,
    selector: BTreeMap<String, String>,
    settings: &ServiceMonitorSettings,
    services: &[&Service],
) -> ServiceMonitor {
    let mut endpoints: Vec<Endpoint> = services
        .iter()
        .filter_map(|service| scrape_endpoint(service, settings.interval.as_deref()))
        .collect();
    endpoints.sort();
    endpoints.dedup();
    let mut match_labels = selector;
    match_labels.insert(SCRAPE_LABEL.to_owned(), "true".to_owned());
    let namespace = metadata.namespace.clone().unwrap_or_default();
    ServiceMonitor {
        metadata: with_labels(metadata, &settings.labels),
        spec: ServiceMonitorSpec {
            selector: LabelSelector {
                match_labels: Some(match_labels),
                match_expressions: None,
            },
            namespace_selector: NamespaceSelector {
                match_names: vec![namespace],
            },
            endpoints,
            pod_target_labels: POD_TARGET_LABELS.map(str::to_owned).to_vec(),
        },
    }
}

/// Where a metrics Service is scraped, from its annotations and its port's name;
/// `None` for a Service that is not one.
fn scrape_endpoint(service: &Service, interval: Option<&str>) -> Option<Endpoint> {
    let labels = service.metadata.labels.as_ref()?;
    if labels.get(SCRAPE_LABEL).map(String::as_str) != Some("true") {
        return None;
    }
    let annotations = service.metadata.annotations.as_ref()?;
    let port: i32 = annotations.get(PORT_ANNOTATION)?.parse().ok()?;
    let port_name = service
        .spec
        .as_ref()?
        .ports
        .as_ref()?
        .iter()
        .find(|service_port| service_port.port == port)?
        .name
        .clone()?;
    Some(Endpoint {
        port: port_name,
        path: annotations.get(PATH_ANNOTATION)?.clone(),
        scheme: annotations
            .get(SCHEME_ANNOTATION)
            .cloned()
            .unwrap_or_else(|| "http".to_owned()),
        interval: interval.map(str::to_owned),
    })
}

/// The PrometheusRule of a cluster, holding `groups`.
pub fn prometheus_rule(
    metadata: ObjectMeta,
    settings: &PrometheusRuleSettings,
    groups: Vec<RuleGroup>,
) -> PrometheusRule {
    PrometheusRule {
        metadata: with_labels(metadata, &settings.labels),
        spec: PrometheusRuleSpec { groups },
    }
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

/// The objects `monitoring` asks for, for the cluster `identity`, which scrape the
/// metrics Services of its `role_groups`; `alerts` builds the product's rule groups
/// from the cluster's PromQL label matchers ([`cluster_matchers`]).
pub fn cluster_monitoring(
    monitoring: &Monitoring,
    identity: &crate::identity::ClusterIdentity,
    role_groups: &[crate::build::RoleGroupObjects],
    alerts: impl FnOnce(&str) -> Vec<RuleGroup>,
) -> MonitoringObjects {
    let services: Vec<&Service> = role_groups
        .iter()
        .map(|objects| &objects.metrics_service)
        .collect();
    let name = identity.name.as_str();
    let metadata =
        || crate::build::object_meta(name, &identity.namespace, identity.labels.labels());
    MonitoringObjects {
        service_monitor: monitoring.service_monitor.as_ref().map(|settings| {
            service_monitor(metadata(), identity.labels.selector(), settings, &services)
        }),
        prometheus_rule: monitoring.prometheus_rule.as_ref().map(|settings| {
            prometheus_rule(
                metadata(),
                settings,
                alerts(&cluster_matchers(&identity.namespace, name)),
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
