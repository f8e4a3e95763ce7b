//! Which server leads, asked of the servers themselves with the `srvr` four-letter word.
//!
//! The membership planner restarts the leader last ([`crate::membership::plan`]). Only
//! ZooKeeper knows the leader, so the operator asks each member over its client port,
//! concurrently and with a short timeout, and only when a restart is due.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::config::zoo_cfg::CLIENT_PORT;

/// Where the leader lookup reaches a server's client port. In a cluster this is the
/// pod's DNS name ([`PodDnsName`]); a test whose pods run no ZooKeeper (KWOK plays the
/// kubelets) points it at a loopback port where nothing listens, so the lookup finds
/// no leader without resolving cluster DNS names on the test machine.
pub trait ServerAddress: Send + Sync + std::fmt::Debug {
    /// The `host:port` of the server whose pod has the DNS name `server_fqdn`.
    fn address(&self, server_fqdn: &str) -> String;
}

/// The pod's DNS name under its role group's headless Service, at the client port.
#[derive(Clone, Copy, Debug, Default)]
pub struct PodDnsName;

impl ServerAddress for PodDnsName {
    fn address(&self, server_fqdn: &str) -> String {
        format!("{server_fqdn}:{CLIENT_PORT}")
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

/// The id of the server whose `srvr` answer says `Mode: leader`, if any answers so.
/// `servers` are `(server id, host:port)`; a server that does not answer in `timeout`
/// is skipped.
pub async fn find_leader(servers: Vec<(u32, String)>, timeout: Duration) -> Option<u32> {
    let probes = servers.into_iter().map(|(id, address)| async move {
        let mode = tokio::time::timeout(timeout, server_mode(&address))
            .await
            .ok()??;
        (mode == "leader").then_some(id)
    });
    futures::future::join_all(probes)
        .await
        .into_iter()
        .flatten()
        .next()
}

/// The `Mode:` line of a server's `srvr` answer: `leader`, `follower` or `standalone`.
async fn server_mode(address: &str) -> Option<String> {
    let mut stream = TcpStream::connect(address).await.ok()?;
    stream.write_all(b"srvr").await.ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.ok()?;
    mode_of(&answer).map(str::to_owned)
}

/// The mode in a `srvr` answer.
pub fn mode_of(srvr_answer: &str) -> Option<&str> {
    srvr_answer
        .lines()
        .find_map(|line| line.strip_prefix("Mode: "))
        .map(str::trim)
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::leader(
        "Zookeeper version: 3.9.5\nLatency min/avg/max: 0/0.0/0\nMode: leader\nNode count: 5\n",
        Some("leader")
    )]
    #[case::follower("Mode: follower\n", Some("follower"))]
    #[case::not_serving("This ZooKeeper instance is not currently serving requests\n", None)]
    fn the_mode_is_read_from_the_srvr_answer(#[case] answer: &str, #[case] mode: Option<&str>) {
        assert_eq!(mode_of(answer), mode);
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
