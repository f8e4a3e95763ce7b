//! The reconcile benchmark of the ZooKeeper operator: 1,000 ZookeeperClusters against
//! the in-memory API, and `render` on its own (`strata_testing::bench`).
//!
//! Run with `cargo bench -p zookeeper-operator --bench reconcile`; see BENCHMARKS.md.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use strata_test_apiserver::TestApiServer;
use strata_testing::Harness;
use strata_testing::bench::{ReconcileBench, run};
use zookeeper_operator::controller::leader::PodDnsName;
use zookeeper_operator::controller::znode::ClientServiceAddress;
use zookeeper_operator::controller::{self, RunOptions};
use zookeeper_operator::crd::{ZookeeperCluster, ZookeeperZnode};
use zookeeper_operator::{OPERATOR_NAME, ZookeeperOperator, validate::DEFAULT_CLUSTER_DOMAIN};

fn main() -> ExitCode {
    run::<ZookeeperOperator, ZookeeperCluster>(ReconcileBench {
        title: "ZooKeeper operator",
        example: concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/zookeeper/simple-cluster.yaml"
        ),
        name_prefix: "zk",
        stored_resources: &[
            "zookeeperclusters.zookeeper.strata.dev",
            "configmaps",
            "services",
            "statefulsets.apps",
            "poddisruptionbudgets.policy",
            "events.events.k8s.io",
            "events",
        ],
        start,
    })
}

/// Both controllers, ensembles reached through their client Services.
fn start(server: TestApiServer) -> Harness {
    server
        .register::<ZookeeperCluster>()
        .register::<ZookeeperZnode>();
    let options = RunOptions {
        cluster_domain: DEFAULT_CLUSTER_DOMAIN.to_owned(),
        ensemble_address: Arc::new(ClientServiceAddress {
            cluster_domain: DEFAULT_CLUSTER_DOMAIN.to_owned(),
        }),
        zookeeper_timeout: Duration::from_secs(1),
        znode_check_period: controller::ZNODE_CHECK_PERIOD,
        server_address: Arc::new(PodDnsName),
    };
    Harness::start(server, OPERATOR_NAME, move |runtime| {
        controller::run(runtime, options)
    })
}
