//! HDFS's alerts, for the PrometheusRule a cluster asks for
//! (`clusterConfig.monitoring.prometheusRule`).
//!
//! Each names only metrics that Hadoop 3.4's Prometheus sink serves at `/prom`
//! (`hadoop.prometheus.endpoint.enabled`), which the real-product test checks against a
//! scrape of the namenodes, and Prometheus' own `up`, which exists for every scraped
//! pod even when it serves nothing: namenodes that are all down must alert too. Both namenodes report the namesystem's figures; the rules
//! take the active one's (`hastate="active"`), since a standby's lag behind it.

use strata_model::monitoring::{AlertRule, CLUSTER_LABELS, RuleGroup, Severity, targets_group};

/// The rule groups for the cluster whose series `matchers` select.
pub fn rule_groups(matchers: &str) -> Vec<RuleGroup> {
    let active = format!("{matchers},hastate=\"active\"");
    let cluster = CLUSTER_LABELS;
    vec![
        RuleGroup {
            name: "hdfs".to_owned(),
            rules: vec![
                AlertRule::new(
                    "HdfsNoActiveNameNode",
                    Severity::Critical,
                    "2m",
                    format!(
                        "count by ({cluster}) (up{{{matchers},app_kubernetes_io_component=\"namenode\"}}) unless on ({cluster}) count by ({cluster}) (fs_namesystem_missing_blocks{{{active}}})"
                    ),
                    "HDFS {{ $labels.namespace }}/{{ $labels.app_kubernetes_io_instance }} has no active namenode",
                    "No namenode is active, or none answers: every read and write fails. Look \
                 at the namenodes, their failover controllers and ZooKeeper.",
                ),
                AlertRule::new(
                    "HdfsMissingBlocks",
                    Severity::Critical,
                    "5m",
                    format!("max by ({cluster}) (fs_namesystem_missing_blocks{{{active}}}) > 0"),
                    "HDFS {{ $labels.namespace }}/{{ $labels.app_kubernetes_io_instance }} has {{ $value }} missing blocks",
                    "No datanode holds a replica of these blocks: reads of their files fail, \
                 and the data is lost unless a datanode that held them comes back.",
                ),
                AlertRule::new(
                    "HdfsDeadDataNodes",
                    Severity::Warning,
                    "5m",
                    format!(
                        "max by ({cluster}) (fs_namesystem_num_dead_data_nodes{{{active}}}) > 0"
                    ),
                    "HDFS {{ $labels.namespace }}/{{ $labels.app_kubernetes_io_instance }} has {{ $value }} dead datanode(s)",
                    "The namenode has not heard from these datanodes: their blocks are \
                 re-replicated, and with too few datanodes left blocks go missing.",
                ),
                AlertRule::new(
                    "HdfsCapacityLow",
                    Severity::Warning,
                    "15m",
                    format!(
                        "max by ({cluster}) (fs_namesystem_capacity_remaining{{{active}}} / fs_namesystem_capacity_total{{{active}}}) < 0.1"
                    ),
                    "HDFS {{ $labels.namespace }}/{{ $labels.app_kubernetes_io_instance }} has {{ $value | humanizePercentage }} of its capacity left",
                    "Writes fail once the datanodes are full. Add datanodes or storage, or \
                 delete data.",
                ),
            ],
        },
        targets_group("HDFS", matchers),
    ]
}
