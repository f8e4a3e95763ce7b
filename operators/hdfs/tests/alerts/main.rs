//! HDFS's alerts under Prometheus' own rule engine: `promtool` loads the rules the
//! operator puts in a cluster's PrometheusRule and runs `hdfs.test.yaml`, which
//! feeds series over time and says which alerts fire when.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::path::Path;

use hdfs_operator::build::alerts::rule_groups;
use strata_model::monitoring::cluster_matchers;

#[test]
#[ignore = "needs promtool (STRATA_PROMTOOL); run by cargo xtask test"]
fn the_alerts_fire_when_no_namenode_is_active_or_blocks_or_datanodes_are_lost() {
    strata_testing::prometheus::test_rules(
        &rule_groups(&cluster_matchers("prod", "hdfs", "simple")),
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/alerts/hdfs.test.yaml"),
    );
}
