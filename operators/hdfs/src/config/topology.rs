//! Where every daemon of the cluster is: the namenode ids with their RPC and HTTP
//! addresses, and the journalnodes of the shared edit log. Every file that names another
//! pod is rendered from one [`Topology`], so the namenodes, the failover controllers,
//! the datanodes and the discovery ConfigMap agree.

/// Namenode RPC port (`dfs.namenode.rpc-address`).
pub const NAMENODE_RPC_PORT: u16 = 8020;
/// Namenode HTTP port (`dfs.namenode.http-address`): web UI, JMX, `/isActive`, `/prom`.
pub const NAMENODE_HTTP_PORT: u16 = 9870;
/// ZKFC RPC port (`dfs.ha.zkfc.port`).
pub const ZKFC_PORT: u16 = 8019;
/// Journalnode RPC port (`dfs.journalnode.rpc-address`).
pub const JOURNALNODE_RPC_PORT: u16 = 8485;
/// Journalnode HTTP port (`dfs.journalnode.http-address`).
pub const JOURNALNODE_HTTP_PORT: u16 = 8480;
/// Datanode data transfer port (`dfs.datanode.address`).
pub const DATANODE_DATA_PORT: u16 = 9866;
/// Datanode IPC port (`dfs.datanode.ipc.address`).
pub const DATANODE_IPC_PORT: u16 = 9867;
/// Datanode HTTP port (`dfs.datanode.http.address`).
pub const DATANODE_HTTP_PORT: u16 = 9864;

/// One namenode: its id in the nameservice (its pod name) and its pod's stable DNS name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameNodeAddress {
    /// `dfs.ha.namenodes.<nameservice>` entry; the pod name.
    pub id: String,
    /// `<pod>.<headless service>.<namespace>.svc.<domain>`.
    pub fqdn: String,
}

impl NameNodeAddress {
    /// `fqdn:8020`.
    pub fn rpc_address(&self) -> String {
        format!("{}:{NAMENODE_RPC_PORT}", self.fqdn)
    }

    /// `fqdn:9870`.
    pub fn http_address(&self) -> String {
        format!("{}:{NAMENODE_HTTP_PORT}", self.fqdn)
    }
}

/// The cluster's HA layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    /// `dfs.nameservices`: the cluster's name, so `hdfs://<cluster>/` is its URI.
    pub nameservice: String,
    /// Every namenode of every namenode role group, in role group and ordinal order.
    pub namenodes: Vec<NameNodeAddress>,
    /// FQDNs of every journalnode.
    pub journalnodes: Vec<String>,
}

impl Topology {
    /// `hdfs://<nameservice>`: `fs.defaultFS`.
    pub fn default_fs(&self) -> String {
        format!("hdfs://{}", self.nameservice)
    }

    /// `qjournal://jn1:8485;jn2:8485;.../<nameservice>`: the shared edit log, with the
    /// nameservice as the journal id.
    pub fn shared_edits_dir(&self) -> String {
        let nodes: Vec<String> = self
            .journalnodes
            .iter()
            .map(|fqdn| format!("{fqdn}:{JOURNALNODE_RPC_PORT}"))
            .collect();
        format!("qjournal://{}/{}", nodes.join(";"), self.nameservice)
    }

    /// The namenode ids, comma separated: `dfs.ha.namenodes.<nameservice>`.
    pub fn namenode_ids(&self) -> String {
        let ids: Vec<&str> = self.namenodes.iter().map(|nn| nn.id.as_str()).collect();
        ids.join(",")
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn shared_edits_name_every_journalnode_and_the_journal_id() {
        let topology = Topology {
            nameservice: "hdfs".to_owned(),
            namenodes: vec![],
            journalnodes: vec!["jn-0.jn".to_owned(), "jn-1.jn".to_owned()],
        };
        assert_eq!(
            topology.shared_edits_dir(),
            "qjournal://jn-0.jn:8485;jn-1.jn:8485/hdfs"
        );
        assert_eq!(topology.default_fs(), "hdfs://hdfs");
    }
}
