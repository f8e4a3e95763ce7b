//! The rendered `core-site.xml` and `hdfs-site.xml` as the real Hadoop 3.4.2 client
//! reads them: `Configuration` loads them and `DFSUtilClient` resolves the nameservice,
//! every namenode's RPC and HTTP address and the failover proxy provider exactly as
//! rendered, for the discovery ConfigMap clients use and for every role group.
//!
//! Ignored by default (it needs Java and the Hadoop client jars); `cargo xtask test`
//! provisions both and runs it.

use std::collections::BTreeMap;

use hdfs_operator::build::{NameNodeState, build_cluster};
use hdfs_operator::config::zookeeper_tls::ZookeeperConnection;
use hdfs_operator::crd::HdfsCluster;
use hdfs_operator::validate::{DEFAULT_CLUSTER_DOMAIN, ValidatedCluster};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use pretty_assertions::assert_eq;
use rstest::rstest;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const QUORUM: &str =
    "simple-zk-server-default-0.simple-zk-server-default.default.svc.cluster.local:2181/znode-1234";
const NAMESERVICE: &str = "simple-hdfs";

fn example() -> Result<HdfsCluster, Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/hdfs/simple-hdfs.yaml"
    ))?;
    Ok(serde_yaml_ng::from_str(&text)?)
}

/// The facts the client must resolve for the example's two namenodes, written out
/// rather than derived from the operator's own topology.
fn expected_client_facts() -> BTreeMap<String, String> {
    let pod = |ordinal: u8| format!("simple-hdfs-namenode-default-{ordinal}");
    // Each namenode by its own Service (issue 21, item 10).
    let fqdn = |ordinal: u8| format!("{}.default.svc.cluster.local", pod(ordinal));
    let mut facts = BTreeMap::from([
        ("fs.defaultFS".to_owned(), format!("hdfs://{NAMESERVICE}")),
        ("logical".to_owned(), "true".to_owned()),
        ("nameservices".to_owned(), NAMESERVICE.to_owned()),
        (
            format!("namenodes.{NAMESERVICE}"),
            format!("{},{}", pod(0), pod(1)),
        ),
        (
            format!("failover.{NAMESERVICE}"),
            "org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider".to_owned(),
        ),
    ]);
    for ordinal in [0, 1] {
        facts.insert(
            format!("rpc.{NAMESERVICE}.{}", pod(ordinal)),
            format!("{}:8020", fqdn(ordinal)),
        );
        facts.insert(
            format!("http.{NAMESERVICE}.{}", pod(ordinal)),
            format!("{}:9870", fqdn(ordinal)),
        );
    }
    facts
}

/// The ConfigMap named `name` of the example, rendered with [`QUORUM`].
fn config_map(name: &str) -> Result<ConfigMap, Box<dyn std::error::Error>> {
    let cluster = ValidatedCluster::new(
        &example()?,
        DEFAULT_CLUSTER_DOMAIN,
        &ZookeeperConnection::plaintext(QUORUM),
    )?;
    let objects = build_cluster(&cluster, &NameNodeState::default());
    std::iter::once(objects.discovery_config_map)
        .chain(
            objects
                .role_groups
                .into_iter()
                .map(|group| group.config_map),
        )
        .find(|config_map| config_map.name_any() == name)
        .ok_or_else(|| format!("no ConfigMap {name}").into())
}

/// What the real client resolves from the two site files of `config_map`.
fn resolve(config_map: &ConfigMap) -> Result<BTreeMap<String, String>, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let data = config_map.data.clone().unwrap_or_default();
    for file in ["core-site.xml", "hdfs-site.xml"] {
        let text = data.get(file).ok_or_else(|| format!("no {file}"))?;
        std::fs::write(dir.path().join(file), text)?;
    }
    Ok(strata_testing::hadoop::resolve_client_config(dir.path())?)
}

#[test]
#[ignore = "needs Java and the Hadoop client (STRATA_JAVA, STRATA_HADOOP_CLIENT_CLASSPATH); run by cargo xtask test"]
fn the_discovery_config_map_works_for_a_client_as_it_is() -> TestResult {
    let facts = resolve(&config_map(NAMESERVICE)?)?;
    let mut expected = expected_client_facts();
    // Clients do not run failover controllers; Hadoop's default applies.
    expected.insert(
        format!("automatic-failover.{NAMESERVICE}"),
        "false".to_owned(),
    );
    assert_eq!(facts, expected);
    Ok(())
}

/// Every daemon resolves the same nameservice; only the namenodes, whose ZKFCs use
/// ZooKeeper, resolve the quorum (issue 21, item 15: a ZooKeeper move must not restart
/// journalnodes and datanodes).
#[rstest]
#[case::namenodes("simple-hdfs-namenode-default", Some(QUORUM))]
#[case::journalnodes("simple-hdfs-journalnode-default", None)]
#[case::datanodes("simple-hdfs-datanode-default", None)]
#[ignore = "needs Java and the Hadoop client (STRATA_JAVA, STRATA_HADOOP_CLIENT_CLASSPATH); run by cargo xtask test"]
fn every_daemon_resolves_the_same_nameservice_and_only_namenodes_the_quorum(
    #[case] name: &str,
    #[case] quorum: Option<&str>,
) -> TestResult {
    let facts = resolve(&config_map(name)?)?;
    let mut expected = expected_client_facts();
    expected.insert(
        format!("automatic-failover.{NAMESERVICE}"),
        "true".to_owned(),
    );
    if let Some(quorum) = quorum {
        expected.insert("ha.zookeeper.quorum".to_owned(), quorum.to_owned());
    }
    assert_eq!(facts, expected);
    Ok(())
}
