//! ZooKeeper's alerts under Prometheus' own rule engine: `promtool` loads the rules the
//! operator puts in a cluster's PrometheusRule and runs `zookeeper.test.yaml`, which
//! feeds series over time and says which alerts fire when.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::path::Path;

use strata_model::monitoring::cluster_matchers;
use zookeeper_operator::build::alerts::rule_groups;

#[test]
#[ignore = "needs promtool (STRATA_PROMTOOL); run by cargo xtask test"]
fn the_alerts_fire_when_the_ensemble_loses_its_leader_or_a_server() {
    strata_testing::prometheus::test_rules(
        &rule_groups(&cluster_matchers("prod", "zookeeper", "simple"), false),
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/alerts/zookeeper.test.yaml"),
    );
}

#[test]
#[ignore = "needs promtool (STRATA_PROMTOOL); run by cargo xtask test"]
fn a_standalone_server_alerts_when_it_is_down_never_for_having_no_leader() {
    strata_testing::prometheus::test_rules(
        &rule_groups(&cluster_matchers("prod", "zookeeper", "simple"), true),
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/alerts/standalone.test.yaml"),
    );
}
