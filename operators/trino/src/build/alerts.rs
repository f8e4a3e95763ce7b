//! Trino's alerts, for the PrometheusRule a cluster asks for
//! (`clusterConfig.monitoring.prometheusRule`).
//!
//! Each names only metrics that Trino 483 serves at `/metrics` (airlift's OpenMetrics
//! export of its managed beans), which the real-product test checks against a scrape of
//! the coordinator, and Prometheus' own `up`, which exists for every scraped pod even
//! when it serves nothing. The coordinator's node manager counts the workers that
//! announced themselves and answer it; the operator knows how many there should be, so
//! the rules carry that number, and a scaled cluster gets new rules with it.

use strata_model::monitoring::{AlertRule, CLUSTER_LABELS, RuleGroup, Severity, targets_group};

/// The coordinator's count of the workers that announced themselves and answer it.
pub const ACTIVE_WORKERS: &str = "trino_node_name_CoordinatorNodeManager_ActiveWorkerCount";
/// The coordinator's counts of the workers that leave on purpose: a drained worker
/// (the operator's roll, through the preStop `SHUTTING_DOWN`) is draining its tasks,
/// drained, or shutting down, and is no longer active.
pub const LEAVING_WORKERS: [&str; 3] = [
    "trino_node_name_CoordinatorNodeManager_DrainingNodeCount",
    "trino_node_name_CoordinatorNodeManager_DrainedNodeCount",
    "trino_node_name_CoordinatorNodeManager_ShuttingDownNodeCount",
];
/// Queries waiting for a resource group to admit them.
pub const QUEUED_QUERIES: &str = "trino_execution_name_QueryManager_QueuedQueries";
/// Queries the coordinator killed because the cluster ran out of memory (a counter).
pub const KILLED_OUT_OF_MEMORY: &str =
    "trino_memory_name_ClusterMemoryManager_QueriesKilledDueToOutOfMemory";

/// The rule groups for the cluster whose series `matchers` select, which should have
/// `workers` workers.
pub fn rule_groups(matchers: &str, workers: u16) -> Vec<RuleGroup> {
    let coordinator = format!("{matchers},app_kubernetes_io_component=\"coordinator\"");
    let cluster = CLUSTER_LABELS;
    let mut rules = vec![AlertRule::new(
        "TrinoCoordinatorDown",
        Severity::Critical,
        "2m",
        format!("max by ({cluster}) (up{{{coordinator}}}) == 0"),
        "Trino {{ $labels.namespace }}/{{ $labels.app_kubernetes_io_instance }} has no coordinator",
        "The coordinator does not answer: no query can be submitted, and every running \
         query has failed. Look at the coordinator pod and its log.",
    )];
    if workers > 0 {
        rules.push(AlertRule::new(
            "TrinoNoWorkers",
            Severity::Critical,
            "2m",
            format!("max by ({cluster}) ({ACTIVE_WORKERS}{{{coordinator}}}) == 0"),
            "Trino {{ $labels.namespace }}/{{ $labels.app_kubernetes_io_instance }} has no active worker",
            "The coordinator schedules on no worker: every query waits. Look at the worker \
             pods, and whether they reach the coordinator.",
        ));
        // A worker the operator drains for a roll still counts, so that a planned roll,
        // whose drain can take the whole grace period, does not page (security review,
        // finding 31); the restarted worker announces itself within the 5 minutes.
        let present = std::iter::once(ACTIVE_WORKERS)
            .chain(LEAVING_WORKERS)
            .map(|metric| format!("max by ({cluster}) ({metric}{{{coordinator}}})"))
            .collect::<Vec<_>>()
            .join(" + ");
        rules.push(AlertRule::new(
            "TrinoWorkersMissing",
            Severity::Warning,
            "5m",
            format!("(({present}) < {workers}) > 0"),
            "Trino {{ $labels.namespace }}/{{ $labels.app_kubernetes_io_instance }} has {{ $value }} of its workers",
            &format!(
                "The cluster should have {workers} workers, and fewer answer the \
                 coordinator, counting those that drain for a planned restart: queries \
                 run slower, and memory-hungry ones may fail."
            ),
        ));
    }
    rules.push(AlertRule::new(
        "TrinoQueriesQueued",
        Severity::Warning,
        "15m",
        format!("max by ({cluster}) ({QUEUED_QUERIES}{{{coordinator}}}) > 0"),
        "Trino {{ $labels.namespace }}/{{ $labels.app_kubernetes_io_instance }} has had queries queued for 15 minutes",
        "Queries wait for the resource groups to admit them: the cluster is at its \
         concurrency limit. Add workers, or look at the longest queries.",
    ));
    rules.push(AlertRule::new(
        "TrinoQueriesKilledOutOfMemory",
        Severity::Warning,
        "0m",
        format!("max by ({cluster}) (increase({KILLED_OUT_OF_MEMORY}{{{coordinator}}}[15m])) > 0"),
        "Trino {{ $labels.namespace }}/{{ $labels.app_kubernetes_io_instance }} killed queries for lack of memory",
        "The cluster ran out of query memory and the coordinator killed queries to go on. \
         Give the workers more memory, add workers, or limit the queries' memory.",
    ));
    vec![
        RuleGroup {
            name: "trino".to_owned(),
            rules,
        },
        targets_group("Trino", matchers),
    ]
}
