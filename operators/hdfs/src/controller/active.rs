//! Which namenode is active, asked of the namenodes themselves through `/isActive`.
//!
//! Namenodes restart standby first, so a roll fails over once at most. Only the
//! namenodes (through ZKFC) know which is active, so the operator asks each over HTTP,
//! concurrently and with a short timeout, and only when a namenode restart is due.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::config::NameNodeAddress;

/// Where to reach a namenode's HTTP port; tests point it at loopback servers.
pub type HttpAddress = Arc<dyn Fn(&NameNodeAddress) -> String + Send + Sync>;

/// How the operator asks namenodes whether they are active.
#[derive(Clone)]
pub struct ActiveNameNodeProbe {
    /// Bound on each namenode's answer.
    pub timeout: Duration,
    /// The `host:port` of a namenode's HTTP server.
    pub address: HttpAddress,
}

impl Default for ActiveNameNodeProbe {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(2),
            address: Arc::new(NameNodeAddress::http_address),
        }
    }
}

impl fmt::Debug for ActiveNameNodeProbe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ActiveNameNodeProbe")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl ActiveNameNodeProbe {
    /// The id of the namenode that answers `/isActive` with 200, if one does.
    pub async fn find_active(&self, namenodes: &[NameNodeAddress]) -> Option<String> {
        let probes = namenodes.iter().map(|namenode| {
            let address = (self.address)(namenode);
            async move {
                let status = tokio::time::timeout(self.timeout, is_active_status(&address))
                    .await
                    .ok()??;
                (status == 200).then(|| namenode.id.clone())
            }
        });
        futures::future::join_all(probes)
            .await
            .into_iter()
            .flatten()
            .next()
    }
}

/// The HTTP status of `GET /isActive`: 200 active, 405 standby.
async fn is_active_status(address: &str) -> Option<u16> {
    let mut stream = TcpStream::connect(address).await.ok()?;
    stream
        .write_all(b"GET /isActive HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .await
        .ok()?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.ok()?;
    status_of(&String::from_utf8_lossy(&answer))
}

/// The status code of an HTTP response's status line.
pub fn status_of(response: &str) -> Option<u16> {
    let line = response.lines().next()?;
    let mut parts = line.split_whitespace();
    parts
        .next()
        .filter(|version| version.starts_with("HTTP/"))?;
    parts.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use tokio::net::TcpListener;

    use super::*;

    #[rstest]
    #[case::active("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", Some(200))]
    #[case::standby("HTTP/1.1 405 Method Not Allowed\r\n\r\n", Some(405))]
    #[case::not_http("SSH-2.0-OpenSSH\r\n", None)]
    #[case::empty("", None)]
    fn the_status_is_read_from_the_status_line(
        #[case] response: &str,
        #[case] status: Option<u16>,
    ) {
        assert_eq!(status_of(response), status);
    }

    /// A namenode HTTP server on loopback that answers every request with `status`.
    async fn namenode(status: &'static str) -> std::io::Result<String> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?.to_string();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut request = [0_u8; 512];
                let _read = stream.read(&mut request).await;
                let _written = stream
                    .write_all(format!("HTTP/1.1 {status}\r\n\r\n").as_bytes())
                    .await;
            }
        });
        Ok(address)
    }

    #[tokio::test]
    async fn the_namenode_answering_200_is_active() -> std::io::Result<()> {
        let standby = namenode("405 Method Not Allowed").await?;
        let active = namenode("200 OK").await?;
        let addresses = [("nn-0", standby), ("nn-1", active)];
        let namenodes: Vec<NameNodeAddress> = addresses
            .iter()
            .map(|(id, address)| NameNodeAddress {
                id: (*id).to_owned(),
                fqdn: address.clone(),
            })
            .collect();
        let probe = ActiveNameNodeProbe {
            timeout: Duration::from_millis(500),
            address: Arc::new(|namenode: &NameNodeAddress| namenode.fqdn.clone()),
        };
        assert_eq!(probe.find_active(&namenodes).await.as_deref(), Some("nn-1"));
        Ok(())
    }

    #[tokio::test]
    async fn namenodes_that_do_not_answer_are_skipped() {
        let probe = ActiveNameNodeProbe {
            timeout: Duration::from_millis(200),
            address: Arc::new(|_: &NameNodeAddress| "127.0.0.1:1".to_owned()),
        };
        let namenodes = [NameNodeAddress {
            id: "nn-0".to_owned(),
            fqdn: "unused".to_owned(),
        }];
        assert_eq!(probe.find_active(&namenodes).await, None);
    }
}
