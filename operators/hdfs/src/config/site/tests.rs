use pretty_assertions::assert_eq;
use rstest::rstest;

use super::*;
use crate::config::NameNodeAddress;

fn topology() -> Topology {
    Topology {
        nameservice: "hdfs".to_owned(),
        namenodes: ["nn-0", "nn-1"]
            .map(|id| NameNodeAddress {
                id: id.to_owned(),
                fqdn: format!("{id}.nn.default.svc.cluster.local"),
                host: format!("{id}.default.svc.cluster.local"),
            })
            .to_vec(),
        journalnodes: vec!["jn-0.jn.default.svc.cluster.local".to_owned()],
        journal_hosts: vec!["jn-0.default.svc.cluster.local".to_owned()],
    }
}

const NO_OVERRIDES: &BTreeMap<String, String> = &BTreeMap::new();

fn site(role: HdfsRole) -> ServerSite<'static> {
    let topology = Box::leak(Box::new(topology()));
    ServerSite {
        topology,
        role,
        dfs_replication: 3,
        zookeeper: Box::leak(Box::new(ZookeeperConnection::plaintext("zk:2181/chroot"))),
        core_overrides: NO_OVERRIDES,
        hdfs_overrides: NO_OVERRIDES,
    }
}

/// Every key the operator writes, as Hadoop 3.4's `core-default.xml` and
/// `hdfs-default.xml` spell it (`<ns>` and `<nn>` are the nameservice and namenode ids
/// the key ends in). Hadoop ignores unknown keys silently, so this list is the check
/// that nothing written is a typo; a new key must be looked up before it is added.
const HADOOP_KEYS: &[&str] = &[
    "fs.defaultFS",
    "ha.zookeeper.quorum",
    "hadoop.prometheus.endpoint.enabled",
    "dfs.nameservices",
    "dfs.ha.namenodes.<ns>",
    "dfs.namenode.rpc-address.<ns>.<nn>",
    "dfs.namenode.http-address.<ns>.<nn>",
    "dfs.client.failover.proxy.provider.<ns>",
    "dfs.replication",
    "dfs.namenode.shared.edits.dir",
    "dfs.ha.automatic-failover.enabled",
    "dfs.ha.fencing.methods",
    "dfs.namenode.datanode.registration.ip-hostname-check",
    "dfs.namenode.name.dir",
    "dfs.reformat.disabled",
    "dfs.hosts.exclude",
    "dfs.namenode.rpc-bind-host",
    "dfs.namenode.http-bind-host",
    "dfs.journalnode.edits.dir",
    "dfs.ha.namenode.id",
    "dfs.datanode.data.dir",
    "dfs.ha.zkfc.client.ssl.enabled",
    "hadoop.zk.ssl.keystore.location",
    "hadoop.zk.ssl.keystore.password",
    "hadoop.zk.ssl.truststore.location",
    "hadoop.zk.ssl.truststore.password",
];

fn generic(key: &str) -> String {
    key.replace(".hdfs.nn-0", ".<ns>.<nn>")
        .replace(".hdfs.nn-1", ".<ns>.<nn>")
        .replace("namenodes.hdfs", "namenodes.<ns>")
        .replace("provider.hdfs", "provider.<ns>")
}

/// Issue 21, item 15: only the ZKFCs use ZooKeeper, so a ZooKeeper move must not
/// restart journalnodes and datanodes.
#[rstest]
#[case::namenode(HdfsRole::NameNode, true)]
#[case::journalnode(HdfsRole::JournalNode, false)]
#[case::datanode(HdfsRole::DataNode, false)]
fn only_the_namenodes_name_the_zookeeper_quorum(#[case] role: HdfsRole, #[case] named: bool) {
    let properties = server_core_properties(&site(role));
    assert_eq!(
        properties.get("ha.zookeeper.quorum").map(String::as_str),
        named.then_some("zk:2181/chroot")
    );
}

#[rstest]
#[case::namenode(HdfsRole::NameNode)]
#[case::journalnode(HdfsRole::JournalNode)]
#[case::datanode(HdfsRole::DataNode)]
fn every_written_key_is_a_hadoop_key(#[case] role: HdfsRole) {
    let mut site = site(role);
    site.zookeeper = Box::leak(Box::new(ZookeeperConnection {
        tls: true,
        ..site.zookeeper.clone()
    }));
    let written: Vec<String> = server_core_properties(&site)
        .into_keys()
        .chain(server_hdfs_properties(&site).into_keys())
        .map(|key| generic(&key))
        .filter(|key| !HADOOP_KEYS.contains(&key.as_str()))
        .collect();
    assert_eq!(
        written,
        Vec::<String>::new(),
        "keys Hadoop 3.4 does not know"
    );
}

#[rstest]
#[case::namenode(HdfsRole::NameNode, "dfs.namenode.name.dir", "/data/name")]
#[case::journalnode(HdfsRole::JournalNode, "dfs.journalnode.edits.dir", "/data/journal")]
#[case::datanode(HdfsRole::DataNode, "dfs.datanode.data.dir", "/data/blocks")]
fn each_role_keeps_its_data_in_a_subdirectory_of_its_volume(
    #[case] role: HdfsRole,
    #[case] key: &str,
    #[case] dir: &str,
) {
    let properties = server_hdfs_properties(&site(role));
    assert_eq!(properties.get(key).map(String::as_str), Some(dir));
    assert!(dir.starts_with(&format!("{DATA_MOUNT}/")));
}

#[test]
fn namenodes_never_reformat_and_read_the_exclude_list() {
    let properties = server_hdfs_properties(&site(HdfsRole::NameNode));
    assert_eq!(
        properties.get("dfs.reformat.disabled").map(String::as_str),
        Some("true")
    );
    assert_eq!(
        properties.get("dfs.hosts.exclude").map(String::as_str),
        Some(EXCLUDE_FILE)
    );
}

#[test]
fn clients_get_the_nameservice_and_the_replication_and_nothing_of_the_servers() {
    let properties = client_hdfs_properties(&topology(), 2);
    assert_eq!(
        properties.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "dfs.client.failover.proxy.provider.hdfs",
            "dfs.ha.namenodes.hdfs",
            "dfs.namenode.http-address.hdfs.nn-0",
            "dfs.namenode.http-address.hdfs.nn-1",
            "dfs.namenode.rpc-address.hdfs.nn-0",
            "dfs.namenode.rpc-address.hdfs.nn-1",
            "dfs.nameservices",
            "dfs.replication",
        ]
    );
    assert_eq!(properties["dfs.replication"], "2");
    assert_eq!(
        properties["dfs.namenode.rpc-address.hdfs.nn-1"],
        "nn-1.default.svc.cluster.local:8020"
    );
    assert_eq!(properties["dfs.ha.namenodes.hdfs"], "nn-0,nn-1");
}

#[rstest]
#[case::exact_key("hdfs-site.xml", "dfs.nameservices", true)]
#[case::key_with_a_suffix("hdfs-site.xml", "dfs.namenode.rpc-address.hdfs.nn-0", true)]
#[case::longer_key_sharing_a_prefix("hdfs-site.xml", "dfs.namenode.name.dir.restore", true)]
#[case::unrelated_key("hdfs-site.xml", "dfs.blocksize", false)]
#[case::similar_but_other_key("hdfs-site.xml", "dfs.namenode.http-address-other", false)]
#[case::core_site_owned("core-site.xml", "ha.zookeeper.quorum", true)]
#[case::core_site_free("core-site.xml", "io.file.buffer.size", false)]
fn overrides_of_operator_keys_are_refused(
    #[case] file: &str,
    #[case] key: &str,
    #[case] refused: bool,
) {
    let overrides = BTreeMap::from([(key.to_owned(), "x".to_owned())]);
    let mut site = site(HdfsRole::NameNode);
    if file == "core-site.xml" {
        site.core_overrides = &overrides;
    } else {
        site.hdfs_overrides = &overrides;
    }
    let result = server_site(&site);
    assert_eq!(
        matches!(
            result,
            Err(SiteError::Overrides(
                OverrideError::ReservedConfigOverride { .. }
            ))
        ),
        refused,
        "{result:?}"
    );
}

#[test]
fn overrides_win_over_the_operators_other_keys() -> Result<(), SiteError> {
    let overrides = BTreeMap::from([(
        "dfs.ha.fencing.methods".to_owned(),
        "shell(/usr/local/bin/fence)".to_owned(),
    )]);
    let mut site = site(HdfsRole::DataNode);
    site.hdfs_overrides = &overrides;
    let files = server_site(&site)?;
    assert!(
        files.hdfs_site.contains(
            "<name>dfs.ha.fencing.methods</name>\n    <value>shell(/usr/local/bin/fence)</value>"
        ),
        "{}",
        files.hdfs_site
    );
    Ok(())
}

#[test]
fn an_override_value_may_span_lines_as_hadoop_rules_do() -> Result<(), SiteError> {
    let rules = "RULE:[2:$1@$0](nn@EXAMPLE.COM)s/.*/hdfs/\nDEFAULT";
    let overrides =
        BTreeMap::from([("hadoop.security.auth_to_local".to_owned(), rules.to_owned())]);
    let mut site = site(HdfsRole::NameNode);
    site.core_overrides = &overrides;
    let files = server_site(&site)?;
    assert!(files.core_site.contains(rules), "{}", files.core_site);
    Ok(())
}

/// Issue 21, item 10: Hadoop names each namenode and journalnode by its pod's own
/// Service, whose address is not the pod's, so a namenode finds its id by its pod's
/// name, and a journalnode binds where Hadoop's default says.
#[rstest]
#[case::namenode(HdfsRole::NameNode, Some("${env.POD_NAME}"))]
#[case::journalnode(HdfsRole::JournalNode, None)]
#[case::datanode(HdfsRole::DataNode, None)]
fn a_namenode_finds_its_id_by_its_pods_name(#[case] role: HdfsRole, #[case] id: Option<&str>) {
    let properties = server_hdfs_properties(&site(role));
    assert_eq!(properties.get("dfs.ha.namenode.id").map(String::as_str), id);
    assert_eq!(properties.get("dfs.journalnode.rpc-address"), None);
    assert_eq!(
        properties["dfs.namenode.shared.edits.dir"],
        "qjournal://jn-0.default.svc.cluster.local:8485/hdfs"
    );
    assert_eq!(
        properties["dfs.namenode.rpc-address.hdfs.nn-0"],
        "nn-0.default.svc.cluster.local:8020"
    );
}

/// A ZooKeeper that serves TLS (the Strata ZooKeeper default): the ZKFCs connect over
/// TLS with the discovery ConfigMap's CA, and nothing else changes.
#[rstest]
#[case::namenode(HdfsRole::NameNode, true)]
#[case::journalnode(HdfsRole::JournalNode, false)]
#[case::datanode(HdfsRole::DataNode, false)]
fn only_the_namenodes_zkfcs_connect_to_zookeeper_over_tls(
    #[case] role: HdfsRole,
    #[case] configured: bool,
) {
    let mut site = site(role);
    site.zookeeper = Box::leak(Box::new(ZookeeperConnection {
        quorum: "zk.zk.svc.cluster.local:2282/znode-1".to_owned(),
        tls: true,
        config_map: "hdfs-znode".to_owned(),
        client_secret: None,
    }));
    let core = server_core_properties(&site);
    let hdfs = server_hdfs_properties(&site);
    let expected_core = [
        (
            "hadoop.zk.ssl.keystore.location",
            "/strata/zookeeper-client/keystore.p12",
        ),
        ("hadoop.zk.ssl.keystore.password", "strata-zookeeper-client"),
        (
            "hadoop.zk.ssl.truststore.location",
            "/strata/zookeeper-ca/ca.pem",
        ),
        (
            "hadoop.zk.ssl.truststore.password",
            "strata-zookeeper-client",
        ),
    ];
    for (key, value) in expected_core {
        assert_eq!(
            core.get(key).map(String::as_str),
            configured.then_some(value),
            "{key}"
        );
    }
    assert_eq!(
        hdfs.get("dfs.ha.zkfc.client.ssl.enabled")
            .map(String::as_str),
        configured.then_some("true")
    );
    assert!(
        !core.contains_key("hadoop.zk.ssl.enabled"),
        "the switch for every Hadoop ZooKeeper client stays Hadoop's default"
    );
}
