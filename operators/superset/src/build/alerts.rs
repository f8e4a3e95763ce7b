//! Superset's alerts, for the PrometheusRule a cluster asks for
//! (`clusterConfig.monitoring.prometheusRule`).
//!
//! Each names only metrics that the statsd exporter beside gunicorn serves (see
//! [`super::metrics`]), which the real-product test checks against a scrape of a real
//! Superset pod, and Prometheus' own `up`, which exists for every scraped pod even
//! when it serves nothing. The Celery workers and beat serve no metrics, so their
//! group ([`celery_group`]) reads kube-state-metrics' StatefulSet series instead.

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

/// kube-state-metrics' count of a StatefulSet's Ready pods.
pub const STATEFULSET_READY: &str = "kube_statefulset_status_replicas_ready";
/// kube-state-metrics' count of the pods a StatefulSet's spec asks for.
pub const STATEFULSET_REPLICAS: &str = "kube_statefulset_replicas";

/// The StatefulSets of one cluster's Celery roles, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CeleryStatefulSets {
    /// The cluster's namespace.
    pub namespace: String,
    /// The cluster's name, which the alerts carry as `app_kubernetes_io_instance`.
    pub cluster: String,
    /// `<superset>-worker-<rg>`, one per worker role group.
    pub workers: Vec<String>,
    /// `<superset>-beat-<rg>`.
    pub beat: Vec<String>,
}

/// The alerts on the Celery workers and beat, which Prometheus cannot scrape: they read
/// kube-state-metrics (which kube-prometheus-stack runs), whose series name the
/// StatefulSet. `None` for a cluster without Celery. A StatefulSet at 0 replicas (a
/// stopped cluster) alerts for nothing (security review, finding 32).
pub fn celery_group(sets: &CeleryStatefulSets) -> Option<RuleGroup> {
    let selector = |names: &[String]| {
        format!(
            "namespace=\"{}\",statefulset=~\"{}\"",
            sets.namespace,
            names.join("|")
        )
    };
    let count = |metric: &str, names: &[String]| {
        format!("sum by (namespace) ({metric}{{{}}})", selector(names))
    };
    let named = |expr: String| {
        format!(
            "label_replace({expr}, \"app_kubernetes_io_instance\", \"{}\", \"\", \"\")",
            sets.cluster
        )
    };
    let mut rules = Vec::new();
    if !sets.workers.is_empty() {
        let ready = count(STATEFULSET_READY, &sets.workers);
        let asked = count(STATEFULSET_REPLICAS, &sets.workers);
        rules.push(AlertRule::new(
            "SupersetCeleryWorkersDown",
            Severity::Critical,
            "5m",
            named(format!("{ready} == 0 and {asked} > 0")),
            "Superset {{ $labels.namespace }}/{{ $labels.app_kubernetes_io_instance }} has no Celery worker ready",
            "No Celery worker is Ready: SQL Lab's asynchronous queries, reports and alerts \
             wait in the broker. Look at the worker pods and their log; a worker that \
             cannot reach Redis says so (BrokerUnreachable).",
        ));
        rules.push(AlertRule::new(
            "SupersetCeleryWorkersMissing",
            Severity::Warning,
            "15m",
            named(format!("{ready} < {asked}")),
            "Superset {{ $labels.namespace }}/{{ $labels.app_kubernetes_io_instance }} has {{ $value }} Celery workers ready, fewer than it asks for",
            "Some Celery workers are not Ready: tasks queue longer. Look at the worker pods \
             that are not Ready, and their log.",
        ));
    }
    if !sets.beat.is_empty() {
        let ready = count(STATEFULSET_READY, &sets.beat);
        let asked = count(STATEFULSET_REPLICAS, &sets.beat);
        rules.push(AlertRule::new(
            "SupersetCeleryBeatDown",
            Severity::Critical,
            "10m",
            named(format!("{ready} < 1 and {asked} > 0")),
            "Superset {{ $labels.namespace }}/{{ $labels.app_kubernetes_io_instance }} has no Celery beat ready",
            "Celery beat is not Ready: no report or alert is scheduled. Its one pod may be \
             Terminating on a lost node, which its StatefulSet replaces only once the node \
             is gone or the pod is deleted.",
        ));
    }
    (!rules.is_empty()).then(|| RuleGroup {
        name: "celery".to_owned(),
        rules,
    })
}
