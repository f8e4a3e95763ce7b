//! Superset's alerts under Prometheus' own rule engine: `promtool` loads the rules the
//! operator puts in a cluster's PrometheusRule and runs `superset.test.yaml`, which
//! feeds series over time and says which alerts fire when.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::path::Path;

use strata_model::monitoring::cluster_matchers;
use superset_operator::build::alerts::{CeleryStatefulSets, celery_group, rule_groups};

#[test]
#[ignore = "needs promtool (STRATA_PROMTOOL); run by cargo xtask test"]
fn the_alerts_fire_when_every_pod_is_down_or_server_errors_pile_up() {
    strata_testing::prometheus::test_rules(
        &rule_groups(&cluster_matchers("prod", "superset", "simple")),
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/alerts/superset.test.yaml"),
    );
}

#[test]
#[ignore = "needs promtool (STRATA_PROMTOOL); run by cargo xtask test"]
fn the_celery_alerts_fire_when_no_worker_or_beat_is_ready() {
    let sets = CeleryStatefulSets {
        namespace: "prod".to_owned(),
        cluster: "simple".to_owned(),
        workers: vec![
            "simple-worker-default".to_owned(),
            "simple-worker-heavy".to_owned(),
        ],
        beat: vec!["simple-beat-default".to_owned()],
    };
    strata_testing::prometheus::test_rules(
        &[celery_group(&sets).expect("a group for a cluster with Celery")],
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/alerts/celery.test.yaml"),
    );
    assert_eq!(
        celery_group(&CeleryStatefulSets::default()),
        None,
        "no Celery, no group"
    );
}
