//! Trino's alerts under Prometheus' own rule engine: `promtool` loads the rules the
//! operator puts in the PrometheusRule of a cluster with three workers and runs
//! `trino.test.yaml`, which feeds series over time and says which alerts fire when.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::path::Path;

use strata_model::monitoring::cluster_matchers;
use trino_operator::build::alerts::rule_groups;

#[test]
#[ignore = "needs promtool (STRATA_PROMTOOL); run by cargo xtask test"]
fn the_alerts_fire_when_the_coordinator_or_workers_are_gone_or_queries_queue() {
    strata_testing::prometheus::test_rules(
        &rule_groups(&cluster_matchers("prod", "trino", "simple"), 3),
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/alerts/trino.test.yaml"),
    );
}

#[test]
fn a_cluster_without_workers_gets_no_worker_alerts() {
    let alerts: Vec<String> = rule_groups(&cluster_matchers("prod", "trino", "simple"), 0)
        .into_iter()
        .flat_map(|group| group.rules)
        .map(|rule| rule.alert)
        .collect();
    assert_eq!(
        alerts,
        [
            "TrinoCoordinatorDown",
            "TrinoQueriesQueued",
            "TrinoQueriesKilledOutOfMemory",
            "TrinoTargetsAbsent"
        ]
    );
}
