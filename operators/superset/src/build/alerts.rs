//! Superset's alerts, for the PrometheusRule a cluster asks for
//! (`clusterConfig.monitoring.prometheusRule`).
//!
//! Each names only metrics that the statsd exporter beside gunicorn serves (see
//! [`super::metrics`]), which the real-product test checks against a scrape of a real
//! Superset pod, and Prometheus' own `up`, which exists for every scraped pod even
//! when it serves nothing.

use strata_model::monitoring::{AlertRule, CLUSTER_LABELS, RuleGroup, Severity, targets_group};

/// The responses gunicorn sent, by status code.
pub const RESPONSES: &str = "superset_gunicorn_responses_total";

/// The rule groups for the cluster whose series `matchers` select.
pub fn rule_groups(matchers: &str) -> Vec<RuleGroup> {
    let cluster = CLUSTER_LABELS;
    vec![
        RuleGroup {
            name: "superset".to_owned(),
            rules: vec![
                AlertRule::new(
                    "SupersetDown",
                    Severity::Critical,
                    "5m",
                    format!("max by ({cluster}) (up{{{matchers}}}) == 0"),
                    "Superset {{ $labels.namespace }}/{{ $labels.app_kubernetes_io_instance }} does not answer",
                    "No Superset pod answers: users cannot reach dashboards or SQL Lab. Look at \
                 the pods, their init container (the metadata database) and their log.",
                ),
                AlertRule::new(
                    "SupersetServerErrors",
                    Severity::Warning,
                    "10m",
                    format!(
                        "sum by ({cluster}) (rate({RESPONSES}{{{matchers},status=~\"5..\"}}[5m])) / sum by ({cluster}) (rate({RESPONSES}{{{matchers}}}[5m])) > 0.05 and sum by ({cluster}) (rate({RESPONSES}{{{matchers}}}[5m])) > 0.1"
                    ),
                    "Superset {{ $labels.namespace }}/{{ $labels.app_kubernetes_io_instance }} answers {{ $value | humanizePercentage }} of requests with a server error",
                    "More than 5% of the requests end in a 5xx answer (at more than one request \
                 every ten seconds): a database (the metadata database or one a chart \
                 queries) fails or is slow, or requests time out. Look at the pods' logs.",
                ),
            ],
        },
        targets_group("Superset", matchers),
    ]
}
