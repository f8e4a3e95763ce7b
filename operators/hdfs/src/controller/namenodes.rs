//! What the operator asks the namenodes over HTTP: which one is active (`/isActive`),
//! the namespace's cluster ID, the datanode admin states and each namenode's safe mode
//! (JMX `NameNodeInfo`).
//!
//! Only the namenodes know these, so the operator asks each, concurrently and with a
//! short timeout, and only when it needs the answer: before a namenode restarts (the
//! active one restarts last), while the cluster ID is unknown, and while datanodes
//! are decommissioned. A steady cluster is never asked.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use std::collections::BTreeMap;

use super::namenode_http::{NameNodeInfo, active_block_health, get, namenode_info, safe_mode};
use crate::config::NameNodeAddress;
use crate::decommission::BlockHealth;
use crate::takeover::SafeMode;

/// Where to reach a namenode's HTTP port; tests point it at loopback servers.
pub type HttpAddress = Arc<dyn Fn(&NameNodeAddress) -> String + Send + Sync>;

/// How the operator reaches the namenodes' HTTP servers.
#[derive(Clone)]
pub struct NameNodeHttp {
    /// Bound on each namenode's answer.
    pub timeout: Duration,
    /// The `host:port` of a namenode's HTTP server.
    pub address: HttpAddress,
}

impl Default for NameNodeHttp {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(2),
            address: Arc::new(NameNodeAddress::pod_http_address),
        }
    }
}

impl fmt::Debug for NameNodeHttp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NameNodeHttp")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// The namenodes' answers to `/isActive`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HaStates {
    /// The active namenode's id.
    pub active: Option<String>,
    /// How many namenodes answered, active or standby.
    pub answering: usize,
}

impl NameNodeHttp {
    /// What the namenodes answer to `/isActive`: the id of the one that answers 200
    /// (405 is a standby), if one does, and how many answer at all. A namenode that
    /// answers nothing proves nothing about which one is active.
    pub async fn ha_states(&self, namenodes: &[NameNodeAddress]) -> HaStates {
        let probes = namenodes.iter().map(|namenode| {
            let address = (self.address)(namenode);
            async move {
                let (status, _) = get(&address, "/isActive", self.timeout).await?;
                Some((status == 200).then(|| namenode.id.clone()))
            }
        });
        let answers: Vec<Option<String>> = futures::future::join_all(probes)
            .await
            .into_iter()
            .flatten()
            .collect();
        HaStates {
            answering: answers.len(),
            active: answers.into_iter().flatten().next(),
        }
    }

    /// The id of the namenode that answers `/isActive` with 200 (405 is a standby), if
    /// one does.
    pub async fn find_active(&self, namenodes: &[NameNodeAddress]) -> Option<String> {
        self.ha_states(namenodes).await.active
    }

    /// The active namenode's block counts (JMX `FSNamesystem`), `None` when no
    /// namenode answers as the active one.
    pub async fn block_health(&self, namenodes: &[NameNodeAddress]) -> Option<BlockHealth> {
        let requests = namenodes.iter().map(|namenode| {
            let address = (self.address)(namenode);
            async move { active_block_health(&address, self.timeout).await }
        });
        futures::future::join_all(requests)
            .await
            .into_iter()
            .flatten()
            .next()
    }

    /// Each namenode's safe mode by id, `None` for one that does not answer.
    pub async fn safe_modes<'a>(
        &self,
        namenodes: impl IntoIterator<Item = &'a NameNodeAddress>,
    ) -> BTreeMap<String, Option<SafeMode>> {
        let requests = namenodes.into_iter().map(|namenode| {
            let address = (self.address)(namenode);
            async move {
                let state = safe_mode(&address, self.timeout).await;
                (namenode.id.clone(), state)
            }
        });
        futures::future::join_all(requests)
            .await
            .into_iter()
            .collect()
    }

    /// What the namenodes that answer report, merged (a datanode's state is the least
    /// advanced any of them reports); `None` when none answers.
    pub async fn info(&self, namenodes: &[NameNodeAddress]) -> Option<NameNodeInfo> {
        let requests = namenodes.iter().map(|namenode| {
            let address = (self.address)(namenode);
            async move { namenode_info(&address, self.timeout).await }
        });
        futures::future::join_all(requests)
            .await
            .into_iter()
            .flatten()
            .reduce(|mut merged, info| {
                merged.merge(info);
                merged
            })
    }
}

#[cfg(test)]
mod tests {
    use strata_testing::http::{Answer, serve};

    use super::*;

    /// A namenode HTTP server on loopback that answers every request alike.
    fn namenode(status: &'static str, body: &'static str) -> String {
        serve(move |_| Answer::new(status, body))
    }

    fn client(addresses: Vec<(&'static str, String)>) -> (NameNodeHttp, Vec<NameNodeAddress>) {
        let namenodes = addresses
            .iter()
            .map(|(id, address)| NameNodeAddress {
                id: (*id).to_owned(),
                fqdn: address.clone(),
                host: format!("{id}.default.svc.cluster.local"),
            })
            .collect();
        let client = NameNodeHttp {
            timeout: Duration::from_millis(500),
            address: Arc::new(|namenode: &NameNodeAddress| namenode.fqdn.clone()),
        };
        (client, namenodes)
    }

    #[tokio::test]
    async fn the_namenode_answering_200_is_active() {
        let standby = namenode("405 Method Not Allowed", "I am not Active!");
        let active = namenode("200 OK", "I am Active!");
        let (client, namenodes) = client(vec![("nn-0", standby), ("nn-1", active)]);
        assert_eq!(
            client.find_active(&namenodes).await.as_deref(),
            Some("nn-1")
        );
    }

    #[tokio::test]
    async fn the_cluster_id_comes_from_whichever_namenode_answers() {
        let answering = namenode(
            "200 OK",
            r#"{"beans":[{"ClusterId":"CID-1","LiveNodes":"{}","DeadNodes":"{}"}]}"#,
        );
        let (client, namenodes) = client(vec![
            ("nn-0", "127.0.0.1:1".to_owned()),
            ("nn-1", answering),
        ]);
        let info = client.info(&namenodes).await;
        assert_eq!(
            info.and_then(|info| info.cluster_id).as_deref(),
            Some("CID-1")
        );
    }

    #[tokio::test]
    async fn block_counts_come_from_the_active_namenode_only() {
        let standby = namenode(
            "200 OK",
            r#"{"beans":[{"tag.HAState":"standby","LowRedundancyBlocks":0,
                "PendingReconstructionBlocks":0,"MissingBlocks":0}]}"#,
        );
        let active = namenode(
            "200 OK",
            r#"{"beans":[{"name":"Hadoop:service=NameNode,name=FSNamesystem",
                "tag.HAState":"active","LowRedundancyBlocks":3,
                "PendingReconstructionBlocks":1,"MissingBlocks":2,"CorruptBlocks":0}]}"#,
        );
        let (both, namenodes) = client(vec![("nn-0", standby.clone()), ("nn-1", active)]);
        assert_eq!(
            both.block_health(&namenodes).await,
            Some(BlockHealth {
                low_redundancy: 3,
                pending_reconstruction: 1,
                missing: 2,
                postponed_misreplicated: 0,
            })
        );
        let (only_standby, namenodes) = client(vec![("nn-0", standby)]);
        assert_eq!(only_standby.block_health(&namenodes).await, None);
    }

    #[tokio::test]
    async fn namenodes_that_do_not_answer_are_skipped() {
        let (mut client, namenodes) = client(vec![("nn-0", "127.0.0.1:1".to_owned())]);
        client.timeout = Duration::from_millis(200);
        assert_eq!(client.find_active(&namenodes).await, None);
        assert_eq!(client.info(&namenodes).await, None);
    }
}
