//! Asking a namenode over its HTTP port: a bare GET, and the JMX beans that list every
//! datanode with its admin state, and give the namenode's safe mode and block counts.
//!
//! The exchange itself is the shared bounded HTTP/1.0 GET
//! ([`strata_operator::product_http`]); the operator asks namenodes on the pod network
//! only.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::Deserialize;
pub use strata_operator::product_http::{get, parse_response};

use crate::decommission::{AdminState, BlockHealth, DataNodeReport};
use crate::journal_sync::out_of_sync_loggers;
use crate::takeover::SafeMode;

/// The JMX query of the bean with the node lists and the cluster ID.
pub const NAMENODE_INFO_PATH: &str = "/jmx?qry=Hadoop:service=NameNode,name=NameNodeInfo";
/// The JMX query of the bean with the block counts and the namenode's HA state.
pub const FS_NAMESYSTEM_PATH: &str = "/jmx?qry=Hadoop:service=NameNode,name=FSNamesystem";
/// What a namenode's `NameNodeInfo` bean says about the namespace and its datanodes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NameNodeInfo {
    /// `ClusterId`: the namespace's cluster ID, if the namenode has loaded one.
    pub cluster_id: Option<String>,
    /// Every datanode of `LiveNodes` and `DeadNodes` by host name (the node list key
    /// without its `:<xferPort>`), reports of one host merged conservatively.
    pub nodes: BTreeMap<String, DataNodeReport>,
    /// If this namenode writes the edit log (the active one), the journalnodes it does
    /// not write to until the next segment (`NameJournalStatus`, see
    /// [`crate::journal_sync`]).
    pub out_of_sync_journals: Option<BTreeSet<String>>,
}

impl NameNodeInfo {
    /// Adds another namenode's view: a host counts as decommissioned only if every
    /// namenode that lists it says so (see [`DataNodeReport::merge`]).
    pub fn merge(&mut self, other: Self) {
        if self.cluster_id.is_none() {
            self.cluster_id = other.cluster_id;
        }
        if self.out_of_sync_journals.is_none() {
            self.out_of_sync_journals = other.out_of_sync_journals;
        }
        for (host, report) in other.nodes {
            insert(&mut self.nodes, host, report);
        }
    }
}

/// The `NameNodeInfo` bean of the namenode whose HTTP server is at `address`, or `None`
/// if it does not answer with it in `timeout`.
pub async fn namenode_info(address: &str, timeout: Duration) -> Option<NameNodeInfo> {
    let (status, body) = get(address, NAMENODE_INFO_PATH, timeout).await?;
    if status != 200 {
        return None;
    }
    parse_namenode_info(&body)
}

/// The JMX answer: `{"beans": [{...}]}`, empty while the namenode starts.
#[derive(Deserialize)]
struct Jmx {
    beans: Vec<NameNodeInfoBean>,
}

/// The attributes read; the node lists are JSON objects serialized into strings.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct NameNodeInfoBean {
    cluster_id: Option<String>,
    live_nodes: String,
    dead_nodes: String,
    /// A JSON list of `{"manager", "stream", "required", "disabled"}` maps.
    name_journal_status: Option<String>,
}

/// One entry of `LiveNodes` or `DeadNodes`. `DecomNodes` has no `adminState`, and
/// every node it lists is also in one of the two.
#[derive(Deserialize)]
struct NodeEntry {
    #[serde(rename = "adminState")]
    admin_state: String,
}

/// Parses the body of [`NAMENODE_INFO_PATH`]; `None` unless it holds the bean with both
/// node lists.
pub fn parse_namenode_info(body: &str) -> Option<NameNodeInfo> {
    let jmx: Jmx = serde_json::from_str(body).ok()?;
    let bean = jmx.beans.into_iter().next()?;
    let mut nodes = BTreeMap::new();
    for (list, live) in [(&bean.live_nodes, true), (&bean.dead_nodes, false)] {
        let entries: BTreeMap<String, NodeEntry> = serde_json::from_str(list).ok()?;
        for (key, entry) in entries {
            let report = DataNodeReport {
                admin_state: AdminState::parse(&entry.admin_state),
                live,
            };
            insert(&mut nodes, host_of(&key).to_owned(), report);
        }
    }
    let journals: Vec<BTreeMap<String, String>> = bean
        .name_journal_status
        .and_then(|status| serde_json::from_str(&status).ok())
        .unwrap_or_default();
    let out_of_sync_journals = journals
        .iter()
        .filter_map(|journal| out_of_sync_loggers(journal.get("stream")?))
        .reduce(|mut all, more| {
            all.extend(more);
            all
        });
    Some(NameNodeInfo {
        cluster_id: bean.cluster_id.filter(|id| !id.is_empty()),
        nodes,
        out_of_sync_journals,
    })
}

/// The safe mode of the namenode whose HTTP server is at `address` (the `Safemode`
/// attribute of its `NameNodeInfo` bean), or `None` if it does not answer with it in
/// `timeout`.
pub async fn safe_mode(address: &str, timeout: Duration) -> Option<SafeMode> {
    let (status, body) = get(address, NAMENODE_INFO_PATH, timeout).await?;
    if status != 200 {
        return None;
    }
    parse_safe_mode(&body)
}

/// Parses the `Safemode` attribute out of the body of [`NAMENODE_INFO_PATH`].
pub fn parse_safe_mode(body: &str) -> Option<SafeMode> {
    #[derive(Deserialize)]
    struct Bean {
        #[serde(rename = "Safemode")]
        safe_mode: String,
    }
    #[derive(Deserialize)]
    struct Beans {
        beans: Vec<Bean>,
    }
    let beans: Beans = serde_json::from_str(body).ok()?;
    let bean = beans.beans.into_iter().next()?;
    Some(SafeMode::parse(&bean.safe_mode))
}

/// The `FSNamesystem` bean's attributes the decommission reads. A standby namenode
/// computes no replication queues, so only an active one's counts mean anything.
#[derive(Deserialize)]
struct FsNamesystemBean {
    #[serde(rename = "tag.HAState")]
    ha_state: Option<String>,
    #[serde(rename = "LowRedundancyBlocks")]
    low_redundancy: u64,
    #[serde(rename = "PendingReconstructionBlocks")]
    pending_reconstruction: u64,
    #[serde(rename = "MissingBlocks")]
    missing: u64,
    #[serde(rename = "PostponedMisreplicatedBlocks", default)]
    postponed_misreplicated: u64,
}

/// Parses the body of [`FS_NAMESYSTEM_PATH`]: the block counts, if the namenode that
/// answered is the active one (`tag.HAState` is `active`).
pub fn parse_active_block_health(body: &str) -> Option<BlockHealth> {
    #[derive(Deserialize)]
    struct Beans {
        beans: Vec<FsNamesystemBean>,
    }
    let beans: Beans = serde_json::from_str(body).ok()?;
    let bean = beans.beans.into_iter().next()?;
    (bean.ha_state.as_deref() == Some("active")).then_some(BlockHealth {
        low_redundancy: bean.low_redundancy,
        pending_reconstruction: bean.pending_reconstruction,
        missing: bean.missing,
        postponed_misreplicated: bean.postponed_misreplicated,
    })
}

/// The block counts of the namenode at `address`, if it answers in `timeout` and is
/// the active one.
pub async fn active_block_health(address: &str, timeout: Duration) -> Option<BlockHealth> {
    let (status, body) = get(address, FS_NAMESYSTEM_PATH, timeout).await?;
    if status != 200 {
        return None;
    }
    parse_active_block_health(&body)
}

/// The host of a node list key, `<hostName>:<xferPort>`.
pub fn host_of(key: &str) -> &str {
    key.rsplit_once(':').map_or(key, |(host, _)| host)
}

fn insert(nodes: &mut BTreeMap<String, DataNodeReport>, host: String, report: DataNodeReport) {
    let merged = match nodes.remove(&host) {
        Some(known) => known.merge(report),
        None => report,
    };
    nodes.insert(host, merged);
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use rstest::rstest;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    const DN0: &str = "hdfs-datanode-default-0.hdfs-datanode-default.ns.svc.cluster.local";
    const DN1: &str = "hdfs-datanode-default-1.hdfs-datanode-default.ns.svc.cluster.local";
    const DN2: &str = "hdfs-datanode-default-2.hdfs-datanode-default.ns.svc.cluster.local";

    /// A `LiveNodes` entry with every field `FSNamesystem.getLiveNodes` writes.
    fn live_entry(ip: &str, admin_state: &str) -> String {
        format!(
            r#"{{"infoAddr":"{ip}:9864","infoSecureAddr":"{ip}:0","xferaddr":"{ip}:9866",
            "location":"/default-rack","lastContact":1,"usedSpace":24576,
            "adminState":"{admin_state}","nonDfsUsedSpace":4096,"capacity":10737418240,
            "numBlocks":3,"version":"3.4.1","used":24576,"remaining":10737389568,
            "blockScheduled":0,"blockPoolUsed":24576,"blockPoolUsedPercent":2.3E-4,
            "volfails":0,"lastBlockReport":4,"blockPoolUsedPercentStdDev":0.0}}"#
        )
    }

    /// A `DeadNodes` entry as `FSNamesystem.getDeadNodes` writes it.
    fn dead_entry(ip: &str, admin_state: &str) -> String {
        format!(
            r#"{{"lastContact":700,"decommissioned":{},"adminState":"{admin_state}",
            "xferaddr":"{ip}:9866","location":"/default-rack"}}"#,
            admin_state == "Decommissioned"
        )
    }

    /// The JMX answer of a namenode with these node lists.
    fn jmx(live: &[(&str, String)], dead: &[(&str, String)]) -> String {
        let list = |nodes: &[(&str, String)]| {
            let entries: Vec<String> = nodes
                .iter()
                .map(|(host, entry)| format!(r#""{host}:9866":{entry}"#))
                .collect();
            format!("{{{}}}", entries.join(","))
        };
        serde_json::json!({"beans": [{
            "name": "Hadoop:service=NameNode,name=NameNodeInfo",
            "modelerType": "org.apache.hadoop.hdfs.server.namenode.FSNamesystem",
            "ClusterId": "CID-5e7a3c7e-3f3a-4b8e-9d0c-2a1f0e6b7c11",
            "BlockPoolId": "BP-1-10.244.0.5-1700000000000",
            "Safemode": "",
            "LiveNodes": list(live),
            "DeadNodes": list(dead),
            "DecomNodes": "{}",
        }]})
        .to_string()
    }

    fn report(admin_state: AdminState, live: bool) -> DataNodeReport {
        DataNodeReport { admin_state, live }
    }

    #[test]
    fn live_and_dead_nodes_are_read_by_host() {
        let body = jmx(
            &[
                (DN0, live_entry("10.244.0.7", "In Service")),
                (DN1, live_entry("10.244.0.8", "Decommission In Progress")),
            ],
            &[(DN2, dead_entry("10.244.0.9", "Decommissioned"))],
        );
        let info = parse_namenode_info(&body).expect("parsed");
        assert_eq!(
            info,
            NameNodeInfo {
                cluster_id: Some("CID-5e7a3c7e-3f3a-4b8e-9d0c-2a1f0e6b7c11".to_owned()),
                nodes: BTreeMap::from([
                    (DN0.to_owned(), report(AdminState::InService, true)),
                    (
                        DN1.to_owned(),
                        report(AdminState::DecommissionInProgress, true)
                    ),
                    (DN2.to_owned(), report(AdminState::Decommissioned, false)),
                ]),
                out_of_sync_journals: None,
            }
        );
    }

    #[rstest::rstest]
    #[case::the_active_with_a_restarted_journalnode(
        "Writing segment beginning at txid 5. \n10.244.0.2:8485 (Written txid 4 (1 txns/0ms behind) (will try to re-sync on next segment)), 10.244.0.3:8485 (Written txid 5), 10.244.0.4:8485 (Written txid 5)",
        Some(vec!["10.244.0.2:8485"])
    )]
    #[case::the_active_in_sync(
        "Writing segment beginning at txid 5. \n10.244.0.2:8485 (Written txid 5), 10.244.0.3:8485 (Written txid 5), 10.244.0.4:8485 (Written txid 5)",
        Some(vec![])
    )]
    #[case::a_standby("open for read", None)]
    fn the_journal_status_names_the_journalnodes_the_active_does_not_write_to(
        #[case] stream: &str,
        #[case] expected: Option<Vec<&str>>,
    ) {
        let status = serde_json::json!([{
            "manager": "QJM to [10.244.0.2:8485, 10.244.0.3:8485, 10.244.0.4:8485]",
            "stream": stream,
            "disabled": "false",
            "required": "true"
        }])
        .to_string();
        let mut body: serde_json::Value = serde_json::from_str(&jmx(&[], &[])).expect("JSON");
        body["beans"][0]["NameJournalStatus"] = serde_json::Value::String(status);
        let info = parse_namenode_info(&body.to_string()).expect("parsed");
        assert_eq!(
            info.out_of_sync_journals,
            expected.map(|list| list.into_iter().map(str::to_owned).collect())
        );
    }

    #[test]
    fn a_host_listed_live_and_dead_keeps_the_state_that_is_not_decommissioned() {
        let body = jmx(
            &[(DN0, live_entry("10.244.0.7", "In Service"))],
            &[(DN0, dead_entry("10.244.0.3", "Decommissioned"))],
        );
        let info = parse_namenode_info(&body).expect("parsed");
        assert_eq!(info.nodes[DN0], report(AdminState::InService, true));
    }

    #[test]
    fn two_namenodes_merge_conservatively() {
        let mut first = parse_namenode_info(&jmx(
            &[(DN0, live_entry("10.244.0.7", "Decommissioned"))],
            &[],
        ))
        .expect("parsed");
        let second = parse_namenode_info(&jmx(
            &[
                (DN0, live_entry("10.244.0.7", "Decommission In Progress")),
                (DN1, live_entry("10.244.0.8", "In Service")),
            ],
            &[],
        ))
        .expect("parsed");
        first.merge(second);
        assert_eq!(
            first.nodes,
            BTreeMap::from([
                (
                    DN0.to_owned(),
                    report(AdminState::DecommissionInProgress, true)
                ),
                (DN1.to_owned(), report(AdminState::InService, true)),
            ])
        );
    }

    #[rstest]
    #[case::starting_namenode(r#"{"beans":[]}"#)]
    #[case::node_list_not_json(
        r#"{"beans":[{"ClusterId":"CID-1","LiveNodes":"oops","DeadNodes":"{}"}]}"#
    )]
    #[case::no_node_lists(r#"{"beans":[{"ClusterId":"CID-1"}]}"#)]
    #[case::not_json("<html>Error 500</html>")]
    fn anything_else_is_no_answer(#[case] body: &str) {
        assert_eq!(parse_namenode_info(body), None);
    }

    #[rstest]
    #[case::fqdn_and_port("dn-0.dn.ns.svc.cluster.local:9866", "dn-0.dn.ns.svc.cluster.local")]
    #[case::ip_and_port("10.244.0.7:9866", "10.244.0.7")]
    #[case::no_port("dn-0", "dn-0")]
    fn the_host_is_the_key_without_its_port(#[case] key: &str, #[case] host: &str) {
        assert_eq!(host_of(key), host);
    }

    /// An HTTP server on loopback answering every request with `response`.
    async fn server(response: String) -> std::io::Result<String> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?.to_string();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut request = [0_u8; 1024];
                let _read = stream.read(&mut request).await;
                let _written = stream.write_all(response.as_bytes()).await;
            }
        });
        Ok(address)
    }

    #[tokio::test]
    async fn the_bean_is_read_over_http() -> std::io::Result<()> {
        let body = jmx(&[(DN0, live_entry("10.244.0.7", "Decommissioned"))], &[]);
        let address = server(format!("HTTP/1.1 200 OK\r\n\r\n{body}")).await?;
        let info = namenode_info(&address, Duration::from_secs(2)).await;
        assert_eq!(
            info.map(|info| info.nodes),
            Some(BTreeMap::from([(
                DN0.to_owned(),
                report(AdminState::Decommissioned, true)
            )]))
        );
        Ok(())
    }

    #[tokio::test]
    async fn an_error_status_or_silence_is_no_answer() -> std::io::Result<()> {
        let failing = server("HTTP/1.1 500 Server Error\r\n\r\n{}".to_owned()).await?;
        assert_eq!(namenode_info(&failing, Duration::from_secs(2)).await, None);
        let silent = TcpListener::bind("127.0.0.1:0").await?;
        let address = silent.local_addr()?.to_string();
        assert_eq!(
            namenode_info(&address, Duration::from_millis(200)).await,
            None
        );
        Ok(())
    }
}
