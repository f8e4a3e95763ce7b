//! Which server leads, asked of the servers themselves, on their metrics port.
//!
//! The membership planner restarts the leader last ([`crate::membership::plan`]). Only
//! ZooKeeper knows the leader, so the operator asks each member, concurrently and with a
//! short timeout, and only when a restart is due. It asks the Prometheus endpoint
//! (port 7000, plain HTTP on the pod network, on whether or not clients use TLS): a
//! serving leader alone exports `leader_uptime`. The client port cannot be asked: with
//! TLS on, the plaintext one listens inside the pod only, and `srvr` over TLS would need
//! a client certificate.

use std::time::Duration;

use strata_operator::product_http::get;

use crate::config::zoo_cfg::METRICS_PORT;

/// The metric only a serving leader exports.
pub const LEADER_METRIC: &str = "leader_uptime";

/// Where the leader lookup reaches a server's metrics port. In a cluster this is the
/// pod's DNS name ([`PodDnsName`]); a test whose pods run no ZooKeeper (KWOK plays the
/// kubelets) points it at a loopback port where nothing listens, so the lookup finds
/// no leader without resolving cluster DNS names on the test machine.
pub trait ServerAddress: Send + Sync + std::fmt::Debug {
    /// The `host:port` of the metrics endpoint of the server whose pod has the DNS name
    /// `server_fqdn`.
    fn address(&self, server_fqdn: &str) -> String;
}

/// The pod's DNS name under its role group's headless Service, at the metrics port.
#[derive(Clone, Copy, Debug, Default)]
pub struct PodDnsName;

impl ServerAddress for PodDnsName {
    fn address(&self, server_fqdn: &str) -> String {
        format!("{server_fqdn}:{METRICS_PORT}")
    }
}

/// Every server at one `host:port`: for tests whose pods run no ZooKeeper, a loopback
/// port where nothing listens.
#[derive(Clone, Debug)]
pub struct FixedServerAddress(pub String);

impl ServerAddress for FixedServerAddress {
    fn address(&self, _server_fqdn: &str) -> String {
        self.0.clone()
    }
}

/// The id of the server whose metrics say it leads, if any does. `servers` are
/// `(server id, host:port)`; a server that does not answer in `timeout` is skipped.
pub async fn find_leader(servers: Vec<(u32, String)>, timeout: Duration) -> Option<u32> {
    let probes = servers.into_iter().map(|(id, address)| async move {
        let (status, body) = get(&address, "/metrics", timeout).await?;
        (status == 200 && leads(&body)).then_some(id)
    });
    futures::future::join_all(probes)
        .await
        .into_iter()
        .flatten()
        .next()
}

/// Whether a metrics page is a serving leader's: it has a `leader_uptime` sample.
pub fn leads(metrics: &str) -> bool {
    metrics.lines().any(|line| {
        line.strip_prefix(LEADER_METRIC)
            .and_then(|rest| rest.strip_prefix(' '))
            .is_some_and(|value| value.trim().parse::<f64>().is_ok())
    })
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::leader(
        "# HELP leader_uptime leader_uptime\n# TYPE leader_uptime gauge\nleader_uptime 41234.0\nquorum_size 3.0\n",
        true
    )]
    #[case::follower(
        "# HELP quorum_size quorum_size\nquorum_size 3.0\nuptime 51234.0\n",
        false
    )]
    #[case::only_the_help_line("# HELP leader_uptime leader_uptime\n", false)]
    #[case::a_longer_name("leader_uptime_total 3.0\n", false)]
    fn the_leader_is_the_server_with_a_leader_uptime(#[case] metrics: &str, #[case] leader: bool) {
        assert_eq!(leads(metrics), leader);
    }

    #[tokio::test]
    async fn servers_that_do_not_answer_are_skipped() {
        let leader = find_leader(
            vec![(1, "127.0.0.1:1".to_owned())],
            Duration::from_millis(200),
        )
        .await;
        assert_eq!(leader, None);
    }
}
