//! ZooKeeper's alerts, for the PrometheusRule a cluster asks for
//! (`clusterConfig.monitoring.prometheusRule`).
//!
//! Each names only metrics that ZooKeeper 3.9's Prometheus provider serves on port
//! 7000, which the real-product test checks against a scrape of every server, and
//! Prometheus' own `up`, which exists for every scraped pod even when it serves nothing:
//! an ensemble whose servers are all down must alert too. The leader-only gauges
//! (`leader_uptime`, `synced_followers`) exist on the leader alone, so the rules
//! aggregate over the cluster instead of looking at one server. A single server runs
//! standalone and never has a leader, so it gets an alert on being down instead.

use strata_model::monitoring::{AlertRule, CLUSTER_LABELS, RuleGroup, Severity, targets_group};

/// The rule groups for the cluster whose series `matchers` select; `standalone` for
/// an ensemble of one server.
pub fn rule_groups(matchers: &str, standalone: bool) -> Vec<RuleGroup> {
    let cluster = CLUSTER_LABELS;
    let availability = if standalone {
        AlertRule::new(
            "ZooKeeperDown",
            Severity::Critical,
            "1m",
            format!("max by ({cluster}) (up{{{matchers}}}) == 0"),
            "ZooKeeper {{ $labels.namespace }}/{{ $labels.app_kubernetes_io_instance }} is down",
            "Its only server does not answer: every client request fails.",
        )
    } else {
        AlertRule::new(
            "ZooKeeperNoLeader",
            Severity::Critical,
            "1m",
            format!(
                "count by ({cluster}) (up{{{matchers}}}) unless on ({cluster}) count by ({cluster}) (leader_uptime{{{matchers}}})"
            ),
            "ZooKeeper {{ $labels.namespace }}/{{ $labels.app_kubernetes_io_instance }} has no leader",
            "No server leads, or none answers: the ensemble lost its quorum, and every \
             client request fails until a majority of servers see each other again.",
        )
    };
    vec![
        RuleGroup {
            name: "zookeeper".to_owned(),
            rules: vec![
                availability,
                AlertRule::new(
                    "ZooKeeperServerNotSynced",
                    Severity::Warning,
                    "5m",
                    format!(
                        "max by ({cluster}) (quorum_size{{{matchers}}}) - on ({cluster}) max by ({cluster}) (synced_followers{{{matchers}}}) - 1 > 0"
                    ),
                    "ZooKeeper {{ $labels.namespace }}/{{ $labels.app_kubernetes_io_instance }} has {{ $value }} voting server(s) not in sync with the leader",
                    "A voting server is down or cannot follow the leader. The ensemble still \
                 serves, but one more lost server may cost the quorum.",
                ),
                AlertRule::new(
                    "ZooKeeperOutstandingRequests",
                    Severity::Warning,
                    "5m",
                    format!("max by ({cluster}, pod) (outstanding_requests{{{matchers}}}) > 10"),
                    "ZooKeeper server {{ $labels.pod }} queues {{ $value }} requests",
                    "The server cannot keep up with its clients: requests wait, and clients \
                 time out. Look at its disk latency and at the clients' load.",
                ),
                AlertRule::new(
                    "ZooKeeperFileDescriptorsNearLimit",
                    Severity::Warning,
                    "10m",
                    format!(
                        "max by ({cluster}, pod) (open_file_descriptor_count{{{matchers}}} / max_file_descriptor_count{{{matchers}}}) > 0.85"
                    ),
                    "ZooKeeper server {{ $labels.pod }} uses {{ $value | humanizePercentage }} of its file descriptors",
                    "Each client connection holds a descriptor; at the limit the server refuses \
                 new clients.",
                ),
            ],
        },
        targets_group("ZooKeeper", matchers),
    ]
}
