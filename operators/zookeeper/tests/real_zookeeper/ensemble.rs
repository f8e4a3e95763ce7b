//! A 3-node ensemble started from the rendered `zoo.cfg` elects one leader and replicates
//! writes.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use zookeeper_operator::config::{PodDns, RoleGroupServers};
use zookeeper_operator::znode_client::ZnodeClient;

use crate::support::loopback::{LoopbackGroup, bind_client_port_to_own_host};
use crate::support::server::mode_of;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn three_server_group() -> RoleGroupServers {
    RoleGroupServers {
        role_group: "default".to_owned(),
        replicas: 3,
        myid_offset: 1,
        pod_dns: PodDns {
            statefulset: "simple-zk-server-default".to_owned(),
            service: "simple-zk-server-default".to_owned(),
            namespace: "default".to_owned(),
            cluster_domain: "cluster.local".to_owned(),
        },
    }
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Debian zookeeper package; run by cargo xtask test"]
async fn rendered_config_forms_a_three_node_ensemble() -> TestResult {
    let started = Instant::now();
    let addresses = [
        Ipv4Addr::new(127, 0, 0, 2),
        Ipv4Addr::new(127, 0, 0, 3),
        Ipv4Addr::new(127, 0, 0, 4),
    ];
    let mut group = LoopbackGroup::start(&three_server_group(), &addresses)?;
    let context = format!("files in {}", group.dir().display());

    let mut modes = group.wait_until_serving(Duration::from_secs(60))?;
    let elected = started.elapsed();
    modes.sort();
    assert_eq!(modes, vec!["follower", "follower", "leader"], "{context}");

    // Each process took the identity the myid script gave its pod.
    for (index, server) in group.servers.iter().enumerate() {
        let conf = server.four_letter_word("conf")?;
        assert!(
            conf.lines()
                .any(|line| line == format!("serverId={}", index + 1)),
            "{conf}\n{context}"
        );
        let srvr = server.four_letter_word("srvr")?;
        assert!(mode_of(&srvr).is_some(), "{srvr}");
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
