//! `core-site.xml` and `hdfs-site.xml`: what every daemon and every client reads.
//!
//! Every key written here exists in Hadoop 3.4 (`core-default.xml`, `hdfs-default.xml`):
//! Hadoop ignores unknown keys silently, so a misspelled key would be a setting that is
//! never applied. The table test in this module lists them all; `docs/hdfs.md` explains
//! each.

use std::collections::BTreeMap;

use strata_model::files::hadoop_xml::{self, HadoopXmlError};
use strata_model::files::overrides::{self, OverrideError, OwnedKey};

use super::topology::Topology;
use super::zookeeper_tls::{self, ZookeeperConnection};
use crate::crd::HdfsRole;

/// Mount point of every role's data volume.
pub const DATA_MOUNT: &str = "/data";
/// The namenode's name directory: a subdirectory, because a fresh volume may hold
/// `lost+found`, which a format would count as existing data.
pub const NAME_DIR: &str = "/data/name";
/// The journalnode's edit log directory.
pub const JOURNAL_DIR: &str = "/data/journal";
/// The datanode's block directory.
pub const BLOCK_DIR: &str = "/data/blocks";
/// The datanodes the namenodes take out of service, one host per line; kept by the
/// operator in a ConfigMap mounted at this path's directory.
pub const EXCLUDE_FILE: &str = "/strata/state/datanodes";
/// The client-side failover: try the namenodes in order until one is active.
pub const FAILOVER_PROXY_PROVIDER: &str =
    "org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider";
/// The variable holding a pod's name in every namenode pod's container, which Hadoop
/// substitutes into `dfs.ha.namenode.id`.
pub const POD_NAME_VARIABLE: &str = "POD_NAME";
/// Fencing without ssh: the journalnodes accept one writer only, so a namenode that
/// lost the active role cannot corrupt the edit log, and fencing needs to do nothing.
pub const FENCING_METHOD: &str = "shell(/bin/true)";

/// Keys of `core-site.xml` the operator owns: an override would split the cluster.
const CORE_SITE_OWNED: [OwnedKey; 2] = [
    OwnedKey::with_subkeys(
        "fs.defaultFS",
        "clients and daemons find the nameservice by it",
    ),
    OwnedKey::with_subkeys(
        "ha.zookeeper.quorum",
        "it is the ZNode of spec.clusterConfig.zookeeperConfigMapName",
    ),
];
/// The nameservice and its namenodes, which every client's configuration names.
const NAMESERVICE: &str = "it defines the nameservice and its namenodes";
/// A directory on the role's volume.
const ON_THE_VOLUME: &str = "it is a directory on the role's persistent volume";
/// Keys (and the keys below them) of `hdfs-site.xml` the operator owns: the
/// nameservice, the directories on the volumes, and format safety.
const HDFS_SITE_OWNED: [OwnedKey; 13] = [
    OwnedKey::with_subkeys("dfs.nameservices", NAMESERVICE),
    OwnedKey::with_subkeys("dfs.ha.namenodes", NAMESERVICE),
    OwnedKey::with_subkeys("dfs.namenode.rpc-address", NAMESERVICE),
    OwnedKey::with_subkeys("dfs.namenode.http-address", NAMESERVICE),
    OwnedKey::with_subkeys("dfs.namenode.shared.edits.dir", "it names the journalnodes"),
    OwnedKey::with_subkeys("dfs.namenode.name.dir", ON_THE_VOLUME),
    OwnedKey::with_subkeys("dfs.journalnode.edits.dir", ON_THE_VOLUME),
    OwnedKey::with_subkeys("dfs.datanode.data.dir", ON_THE_VOLUME),
    OwnedKey::with_subkeys(
        "dfs.reformat.disabled",
        "it keeps a namenode from formatting over existing metadata",
    ),
    OwnedKey::with_subkeys(
        "dfs.hosts.exclude",
        "it is the decommissioning list the operator keeps",
    ),
    OwnedKey::with_subkeys(
        "dfs.ha.automatic-failover.enabled",
        "the ZKFC containers fail over the namenodes",
    ),
    OwnedKey::exact(
        "dfs.ha.namenode.id",
        "each namenode finds its own id by its pod's name",
    ),
    OwnedKey::exact(
        "dfs.replication",
        "it is spec.clusterConfig.dfsReplication, which the datanode scale-down guard and \
         the discovery ConfigMap's clients go by",
    ),
];

/// Why a site file could not be rendered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SiteError {
    /// An override of a key the operator owns, or of more than one line.
    #[error(transparent)]
    Overrides(#[from] OverrideError),
    /// The file cannot be written.
    #[error("{file}: {source}")]
    Xml {
        /// The file.
        file: &'static str,
        /// What is wrong.
        source: HadoopXmlError,
    },
}

impl SiteError {
    /// The condition reason.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Overrides(error) => error.reason(),
            Self::Xml { .. } => "InvalidConfigOverride",
        }
    }
}

/// The two files of one role group or of the discovery ConfigMap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteFiles {
    /// `core-site.xml`.
    pub core_site: String,
    /// `hdfs-site.xml`.
    pub hdfs_site: String,
}

/// What a role group's files are rendered from.
#[derive(Clone, Copy, Debug)]
pub struct ServerSite<'a> {
    /// Where the daemons are.
    pub topology: &'a Topology,
    /// The role whose daemons read the files.
    pub role: HdfsRole,
    /// `dfs.replication`.
    pub dfs_replication: u16,
    /// `ha.zookeeper.quorum` (hosts and chroot) and TLS, from the ZNode discovery
    /// ConfigMap.
    pub zookeeper: &'a ZookeeperConnection,
    /// `configOverrides` of `core-site.xml`.
    pub core_overrides: &'a BTreeMap<String, String>,
    /// `configOverrides` of `hdfs-site.xml`.
    pub hdfs_overrides: &'a BTreeMap<String, String>,
}

/// What a client needs in `core-site.xml`: the nameservice as the default file system.
pub fn client_core_properties(topology: &Topology) -> BTreeMap<String, String> {
    BTreeMap::from([("fs.defaultFS".to_owned(), topology.default_fs())])
}

/// What a client needs in `hdfs-site.xml` to find the active namenode (the nameservice,
/// every namenode's RPC and HTTP address, the failover proxy provider) and to write
/// files as the spec asks: `dfs.replication` is read by the client that creates a file,
/// not by the namenode, so without it every client writes Hadoop's default of 3.
pub fn client_hdfs_properties(
    topology: &Topology,
    dfs_replication: u16,
) -> BTreeMap<String, String> {
    let ns = &topology.nameservice;
    let mut properties = BTreeMap::from([
        ("dfs.replication".to_owned(), dfs_replication.to_string()),
        ("dfs.nameservices".to_owned(), ns.clone()),
        (format!("dfs.ha.namenodes.{ns}"), topology.namenode_ids()),
        (
            format!("dfs.client.failover.proxy.provider.{ns}"),
            FAILOVER_PROXY_PROVIDER.to_owned(),
        ),
    ]);
    for namenode in &topology.namenodes {
        properties.insert(
            format!("dfs.namenode.rpc-address.{ns}.{}", namenode.id),
            namenode.rpc_address(),
        );
        properties.insert(
            format!("dfs.namenode.http-address.{ns}.{}", namenode.id),
            namenode.http_address(),
        );
    }
    properties
}

/// The daemons' `core-site.xml` properties before overrides. Only the namenodes' ZKFCs
/// talk to ZooKeeper, so only their file names it: a ZooKeeper move then restarts the
/// namenodes alone, not every journalnode and datanode (and a journalnode restart is
/// the riskiest step of a roll, see `crate::journal_sync`).
pub fn server_core_properties(site: &ServerSite<'_>) -> BTreeMap<String, String> {
    let mut properties = client_core_properties(site.topology);
    if site.role == HdfsRole::NameNode {
        properties.insert(
            "ha.zookeeper.quorum".to_owned(),
            site.zookeeper.quorum.clone(),
        );
        if site.zookeeper.tls {
            properties.extend(zookeeper_tls::core_properties());
        }
    }
    properties.insert(
        "hadoop.prometheus.endpoint.enabled".to_owned(),
        "true".to_owned(),
    );
    properties
}

/// The daemons' `hdfs-site.xml` properties before overrides.
pub fn server_hdfs_properties(site: &ServerSite<'_>) -> BTreeMap<String, String> {
    let mut properties = client_hdfs_properties(site.topology, site.dfs_replication);
    let mut set = |key: &str, value: String| {
        properties.insert(key.to_owned(), value);
    };
    set(
        "dfs.namenode.shared.edits.dir",
        site.topology.shared_edits_dir(),
    );
    set("dfs.ha.automatic-failover.enabled", "true".to_owned());
    set("dfs.ha.fencing.methods", FENCING_METHOD.to_owned());
    // Datanodes register by pod IP, whose reverse lookup Kubernetes DNS does not
    // guarantee.
    set(
        "dfs.namenode.datanode.registration.ip-hostname-check",
        "false".to_owned(),
    );
    match site.role {
        HdfsRole::NameNode => {
            if site.zookeeper.tls {
                set(zookeeper_tls::ZKFC_TLS_PROPERTY, "true".to_owned());
            }
            set("dfs.namenode.name.dir", NAME_DIR.to_owned());
            set("dfs.reformat.disabled", "true".to_owned());
            set("dfs.hosts.exclude", EXCLUDE_FILE.to_owned());
            // Listen on every interface, advertise the pod's own Service: its address
            // is not the pod's, so the namenode (and its ZKFC, which binds where the
            // namenode's RPC does) could neither bind it nor find its own id among
            // the addresses; the id comes from the pod's name instead.
            set("dfs.namenode.rpc-bind-host", "0.0.0.0".to_owned());
            set("dfs.namenode.http-bind-host", "0.0.0.0".to_owned());
            set(
                "dfs.ha.namenode.id",
                format!("${{env.{POD_NAME_VARIABLE}}}"),
            );
        }
        HdfsRole::JournalNode => {
            // The JournalNodeSyncer leaves out of its peers only the address its RPC
            // server is bound to. The shared edits directory names each journalnode by
            // its own Service, whose address is never the bound one, so each syncer also
            // lists itself and checks each real peer every third interval: the price of
            // names that always resolve (a peer that does not resolve when the syncer
            // starts turns syncing off until the journalnode restarts).
            set("dfs.journalnode.edits.dir", JOURNAL_DIR.to_owned());
        }
        HdfsRole::DataNode => set("dfs.datanode.data.dir", BLOCK_DIR.to_owned()),
    }
    properties
}

/// Renders a role group's files: the operator's properties, then the overrides, which
/// win except on the keys the operator owns.
pub fn server_site(site: &ServerSite<'_>) -> Result<SiteFiles, SiteError> {
    let core = with_overrides(
        "core-site.xml",
        server_core_properties(site),
        site.core_overrides,
        &CORE_SITE_OWNED,
    )?;
    let hdfs = with_overrides(
        "hdfs-site.xml",
        server_hdfs_properties(site),
        site.hdfs_overrides,
        &HDFS_SITE_OWNED,
    )?;
    Ok(SiteFiles {
        core_site: write("core-site.xml", &core)?,
        hdfs_site: write("hdfs-site.xml", &hdfs)?,
    })
}

/// Renders the discovery ConfigMap's files, which an in-cluster client uses as they are.
pub fn client_site(topology: &Topology, dfs_replication: u16) -> Result<SiteFiles, SiteError> {
    Ok(SiteFiles {
        core_site: write("core-site.xml", &client_core_properties(topology))?,
        hdfs_site: write(
            "hdfs-site.xml",
            &client_hdfs_properties(topology, dfs_replication),
        )?,
    })
}

fn with_overrides(
    file: &'static str,
    mut properties: BTreeMap<String, String>,
    overrides: &BTreeMap<String, String>,
    owned: &[OwnedKey],
) -> Result<BTreeMap<String, String>, SiteError> {
    overrides::check_multiline_values(file, overrides, owned)?;
    properties.extend(overrides.clone());
    Ok(properties)
}

fn write(file: &'static str, properties: &BTreeMap<String, String>) -> Result<String, SiteError> {
    hadoop_xml::write(
        properties
            .iter()
            .map(|(key, value)| (key.as_str(), value.as_str())),
    )
    .map_err(|source| SiteError::Xml { file, source })
}

#[cfg(test)]
mod tests;
