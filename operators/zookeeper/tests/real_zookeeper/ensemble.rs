//! The 3-server example, as `zookeeper-operator render` prints it, runs as a real ensemble
//! that elects one leader and replicates writes.
//!
//! `zoo.cfg` comes from the rendered role-group ConfigMap and `myid` from running the
//! rendered init container's command with each pod's `HOSTNAME`; see
//! [`crate::support::loopback`] for the few loopback changes.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use zookeeper_operator::validate::DEFAULT_CLUSTER_DOMAIN;
use zookeeper_operator::znode_client::ZnodeClient;

use crate::support::loopback::{LoopbackGroup, bind_client_port_to_own_host, loopback_zoo_cfg};
use crate::support::rendered::{RenderedRoleGroup, property, render_manifest};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const ADDRESSES: [Ipv4Addr; 3] = [
    Ipv4Addr::new(127, 0, 0, 2),
    Ipv4Addr::new(127, 0, 0, 3),
    Ipv4Addr::new(127, 0, 0, 4),
];

fn simple_cluster_example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/zookeeper/simple-cluster.yaml")
}

fn rendered_simple_cluster() -> Result<RenderedRoleGroup, Box<dyn std::error::Error>> {
    let documents = render_manifest(&simple_cluster_example())?;
    Ok(RenderedRoleGroup::single(
        &documents,
        DEFAULT_CLUSTER_DOMAIN,
    )?)
}

#[test]
fn client_port_rewrite_only_touches_server_lines() {
    let rendered = "\
clientPort=2181
dataDir=/data
server.1=zk-0.zk.ns.svc.cluster.local:2888:3888;2181
server.2=zk-1.zk.ns.svc.cluster.local:2888:3888;10.0.0.1:2181
";
    let expected = "\
clientPort=2181
dataDir=/data
server.1=zk-0.zk.ns.svc.cluster.local:2888:3888;zk-0.zk.ns.svc.cluster.local:2181
server.2=zk-1.zk.ns.svc.cluster.local:2888:3888;10.0.0.1:2181
";
    assert_eq!(bind_client_port_to_own_host(rendered), expected);
}

#[test]
fn loopback_config_changes_only_data_dir_metrics_and_client_binding() -> TestResult {
    let rendered = "\
# comment
clientPort=2181
dataDir=/data
metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider
metricsProvider.httpPort=7000
tickTime=2000
server.1=zk-0.zk.ns.svc.cluster.local:2888:3888;2181
";
    let expected = "\
# comment
clientPort=2181
dataDir=/tmp/zk-0/data
tickTime=2000
server.1=zk-0.zk.ns.svc.cluster.local:2888:3888;zk-0.zk.ns.svc.cluster.local:2181
";
    assert_eq!(
        loopback_zoo_cfg(rendered, Path::new("/tmp/zk-0/data"))?,
        expected
    );
    assert!(loopback_zoo_cfg("clientPort=2181\n", Path::new("/d")).is_err());
    Ok(())
}

/// Needs only bash: the rendered init command gives each pod the id of its own
/// `server.N` line (`prepare` checks that) and ids follow the ordinals from 1.
#[test]
fn rendered_myid_command_gives_each_pod_its_server_line() -> TestResult {
    let group = rendered_simple_cluster()?;
    let pods: Vec<&str> = group.pods.iter().map(|pod| pod.name.as_str()).collect();
    assert_eq!(
        pods,
        [
            "simple-zk-server-default-0",
            "simple-zk-server-default-1",
            "simple-zk-server-default-2"
        ]
    );
    assert!(
        property(&group.zoo_cfg, "metricsProvider.className").is_some(),
        "the render should configure metrics; the loopback run drops them:\n{}",
        group.zoo_cfg
    );

    let prepared = LoopbackGroup::prepare(&group, &ADDRESSES)?;
    for ordinal in 0..3 {
        assert_eq!(prepared.myid(ordinal)?.trim(), (ordinal + 1).to_string());
        let zoo_cfg = prepared.zoo_cfg(ordinal)?;
        assert!(!zoo_cfg.contains("metricsProvider"), "{zoo_cfg}");
        assert_eq!(
            property(&zoo_cfg, "dataDir").map(Path::new),
            Some(
                prepared
                    .dir()
                    .join(&group.pods[ordinal].name)
                    .join("data")
                    .as_path()
            )
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Java and ZooKeeper (STRATA_JAVA, STRATA_ZOOKEEPER_CLASSPATH); run by cargo xtask test"]
async fn rendered_simple_cluster_forms_a_three_server_ensemble() -> TestResult {
    let started = Instant::now();
    let mut group = LoopbackGroup::start(&rendered_simple_cluster()?, &ADDRESSES)?;
    let context = format!("files in {}", group.dir().display());

    let mut modes = group.wait_until_serving(Duration::from_secs(60))?;
    let elected = started.elapsed();
    modes.sort();
    assert_eq!(modes, vec!["follower", "follower", "leader"], "{context}");

    // Each process took the identity the rendered init command gave its pod.
    for (index, server) in group.servers.iter().enumerate() {
        let conf = server.four_letter_word("conf")?;
        assert!(
            conf.lines()
                .any(|line| line == format!("serverId={}", index + 1)),
            "{conf}\n{context}"
        );
    }

    let path = "/strata-ensemble-test/written-through-server-1";
    let timeout = Duration::from_secs(5);
    let writer =
        ZnodeClient::connect(&group.servers[0].client_address().to_string(), timeout).await?;
    writer.ensure_path(path).await?;

    let reader =
        ZnodeClient::connect(&group.servers[2].client_address().to_string(), timeout).await?;
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut replicated = reader.exists(path).await?;
    while !replicated && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        replicated = reader.exists(path).await?;
    }
    assert!(replicated, "{path} not visible through server 3; {context}");

    eprintln!(
        "ensemble: leader elected after {elected:?}, test body took {:?}",
        started.elapsed()
    );
    Ok(())
}
