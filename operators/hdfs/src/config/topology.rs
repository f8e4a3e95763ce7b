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

/// One namenode: its id in the nameservice (its pod name), its pod's DNS name, and the
/// name of its own Service, which Hadoop's configuration uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameNodeAddress {
    /// `dfs.ha.namenodes.<nameservice>` entry; the pod name.
    pub id: String,
    /// `<pod>.<headless service>.<namespace>.svc.<domain>`: resolves while the pod has
    /// an address.
    pub fqdn: String,
    /// `<pod>.<namespace>.svc.<domain>`, the pod's own Service: resolves always. A
    /// namenode, a ZKFC or `-bootstrapStandby` that cannot resolve a peer's name fails
    /// (see `docs/hdfs.md`, Names that always resolve).
    pub host: String,
}

impl NameNodeAddress {
    /// `host:8020`.
    pub fn rpc_address(&self) -> String {
        format!("{}:{NAMENODE_RPC_PORT}", self.host)
    }

    /// `host:9870`.
    pub fn http_address(&self) -> String {
        format!("{}:{NAMENODE_HTTP_PORT}", self.host)
    }

    /// `fqdn:9870`: where the operator reads a namenode's state. It asks the pod
    /// itself, by the name that exists only while the pod has an address, since the
    /// answer is about that pod.
    pub fn pod_http_address(&self) -> String {
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
    /// FQDNs of every journalnode (behind its group's headless Service): how the
    /// operator names and tracks them.
    pub journalnodes: Vec<String>,
    /// The names of the journalnodes' own Services (`<pod>.<namespace>.svc.<domain>`),
    /// in the same order: what the namenodes' shared edits directory names, since a
    /// namenode that cannot resolve one of them does not start, and dies at its next
    /// transition to active.
    pub journal_hosts: Vec<String>,
}

impl Topology {
    /// `hdfs://<nameservice>`: `fs.defaultFS`.
    pub fn default_fs(&self) -> String {
        format!("hdfs://{}", self.nameservice)
    }

    /// `qjournal://jn1:8485;jn2:8485;.../<nameservice>`: the shared edit log, by the
    /// journalnodes' own Services, with the nameservice as the journal id.
    pub fn shared_edits_dir(&self) -> String {
        let nodes: Vec<String> = self
            .journal_hosts
            .iter()
            .map(|host| format!("{host}:{JOURNALNODE_RPC_PORT}"))
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
            journalnodes: vec!["jn-0.jn.ns".to_owned(), "jn-1.jn.ns".to_owned()],
            journal_hosts: vec!["jn-0.ns".to_owned(), "jn-1.ns".to_owned()],
        };
        assert_eq!(
            topology.shared_edits_dir(),
            "qjournal://jn-0.ns:8485;jn-1.ns:8485/hdfs"
        );
        assert_eq!(topology.default_fs(), "hdfs://hdfs");
    }
}
