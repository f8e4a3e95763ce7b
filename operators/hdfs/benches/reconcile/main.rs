//! The reconcile benchmark of the HDFS operator: 1,000 HdfsClusters (the example's
//! 2 namenodes, 3 journalnodes and 3 datanodes each) against the in-memory API, and
//! `render` on its own (`strata_testing::bench`).
//!
//! The ZNode ConfigMap the clusters name is stored up front, and one simulated
//! namenode on loopback answers every JMX request with a cluster ID, as a formatted
//! namespace would: the operator asks once per cluster, records the ID in the status,
//! and a steady cluster is never asked again.
//!
//! Run with `cargo bench -p hdfs-operator --bench reconcile`; see BENCHMARKS.md.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use hdfs_operator::config::NameNodeAddress;
use hdfs_operator::controller::cluster::{ClusterContext, NAMENODE_CHECK};
use hdfs_operator::controller::namenodes::NameNodeHttp;
use hdfs_operator::controller::run_with;
use hdfs_operator::crd::HdfsCluster;
use hdfs_operator::validate::DEFAULT_CLUSTER_DOMAIN;
use hdfs_operator::{HdfsOperator, OPERATOR_NAME};
use k8s_openapi::api::core::v1::ConfigMap;
use strata_test_apiserver::TestApiServer;
use strata_testing::Harness;
use strata_testing::bench::{ReconcileBench, run};
use strata_testing::http::{Answer, serve};

fn main() -> ExitCode {
    run::<HdfsOperator, HdfsCluster>(ReconcileBench {
        title: "HDFS operator",
        example: concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/hdfs/simple-hdfs.yaml"
        ),
        name_prefix: "hdfs",
        stored_resources: &[
            "hdfsclusters.hdfs.strata.dev",
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

/// The namenode JMX answer of a formatted namespace with no datanode reported.
const NAMENODE_INFO: &str =
    r#"{"beans":[{"ClusterId":"CID-bench","LiveNodes":"{}","DeadNodes":"{}"}]}"#;

/// The operator, its namenodes answered by one loopback server. The bench calls it
/// inside its async runtime, where the server runs.
fn start(server: TestApiServer) -> Harness {
    server.register::<HdfsCluster>();
    let znode: ConfigMap = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "hdfs-znode", "namespace": "default"},
        "data": {"ZOOKEEPER": "zk-server-default-0.zk-server-default.default.svc.cluster.local:2181/znode-bench"}
    }))
    .unwrap_or_default();
    if let Err(error) = server.upsert(&znode) {
        eprintln!("storing the ZNode ConfigMap failed: {error}");
    }
    let address = serve(|_| Answer::new("200 OK", NAMENODE_INFO));
    let context = ClusterContext {
        cluster_domain: DEFAULT_CLUSTER_DOMAIN.to_owned(),
        namenodes: NameNodeHttp {
            timeout: Duration::from_secs(2),
            address: Arc::new(move |_: &NameNodeAddress| address.clone()),
        },
        namenode_check: NAMENODE_CHECK,
    };
    Harness::start(server, OPERATOR_NAME, move |runtime| {
        run_with(runtime, context)
    })
}
