//! Superset's alerts under Prometheus' own rule engine: `promtool` loads the rules the
//! operator puts in a cluster's PrometheusRule and runs `superset.test.yaml`, which
//! feeds series over time and says which alerts fire when.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::path::Path;

use strata_model::monitoring::cluster_matchers;
use superset_operator::build::alerts::rule_groups;

#[test]
#[ignore = "needs promtool (STRATA_PROMTOOL); run by cargo xtask test"]
fn the_alerts_fire_when_every_pod_is_down_or_server_errors_pile_up() {
    strata_testing::prometheus::test_rules(
        &rule_groups(&cluster_matchers("prod", "superset", "simple")),
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/alerts/superset.test.yaml"),
    );
}
