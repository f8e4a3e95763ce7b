//! The PrometheusRule kind and the alert rules each product writes into it.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use super::{PrometheusRuleSettings, with_labels};
use crate::labels::{INSTANCE_LABEL, NAME_LABEL};

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

/// The name of the group [`targets_group`] makes: the apply step drops it from a
/// stopped cluster's PrometheusRule, whose pods are gone on purpose.
pub const TARGETS_GROUP: &str = "targets";

/// The group that alerts when Prometheus scrapes no pod of the cluster at all. The
/// `up`-based alerts cannot: Prometheus makes `up` only for the targets it discovers,
/// and a pod without an address (Pending: unschedulable, a lost zone, a quota) or a
/// StatefulSet at 0 is none, so they see an empty vector and stay silent through a
/// total outage (security review, finding 30). `absent` returns the matchers' labels,
/// so the alert names the cluster. A stopped cluster drops the group
/// ([`PrometheusRule::without_targets_group`]).
pub fn targets_group(product: &str, matchers: &str) -> RuleGroup {
    RuleGroup {
        name: TARGETS_GROUP.to_owned(),
        rules: vec![AlertRule::new(
            &format!("{product}TargetsAbsent"),
            Severity::Critical,
            "5m",
            format!("absent(up{{{matchers}}})"),
            &format!(
                "{product} {{{{ $labels.namespace }}}}/{{{{ $labels.app_kubernetes_io_instance }}}} has no pod that Prometheus scrapes"
            ),
            "No pod of the cluster is a scrape target: none has an address (Pending, \
             unschedulable, its node or zone lost), its workloads run no pod, or its \
             metrics Services are gone. The cluster serves nothing, or is not watched.",
        )],
    }
}

impl PrometheusRule {
    /// Drops [`TARGETS_GROUP`]: a stopped cluster runs no pod, and must not alert for
    /// it.
    pub fn without_targets_group(&mut self) {
        self.spec.groups.retain(|group| group.name != TARGETS_GROUP);
    }
}

/// The labels that tell one cluster's series from another's, for `by` and `on` in
/// alert expressions, so that each alert names its cluster.
pub const CLUSTER_LABELS: &str = "namespace, app_kubernetes_io_instance";

/// The PromQL label matchers of one cluster's series: its namespace (which every
/// ServiceMonitor target carries), its product and its instance label
/// ([`super::POD_TARGET_LABELS`]). The product keeps another product's cluster of the
/// same name, whose `up` would mask an outage, out of the alerts (security review,
/// finding 33).
pub fn cluster_matchers(namespace: &str, product: &str, cluster: &str) -> String {
    format!(
        "namespace=\"{namespace}\",{}=\"{product}\",{}=\"{cluster}\"",
        prometheus_label_name(NAME_LABEL),
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
