//! Reconcile tests of the HDFS operator against the in-memory API: the operator runs
//! as it would in a cluster, and the tests act as the user (creating and patching
//! clusters and ConfigMaps) and as Kubernetes' own controllers (running pods).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod active_namenode;
mod creation;
mod decommission;
mod exposure;
mod journal_quorum;
mod operations;
mod pod_states;
mod pod_user;
mod roll_order;
mod zookeeper_client_certificate;
mod zookeeper_reference;

use std::sync::Arc;
use std::time::Duration;

use hdfs_operator::OPERATOR_NAME;
use hdfs_operator::config::NameNodeAddress;
use hdfs_operator::controller::cluster::ClusterContext;
use hdfs_operator::controller::namenode_http::NAMENODE_INFO_PATH;
use hdfs_operator::controller::namenodes::NameNodeHttp;
use hdfs_operator::controller::run_with;
use hdfs_operator::crd::HdfsCluster;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};
use strata_test_apiserver::TestApiServer;
use strata_testing::Harness;

/// The cluster's name in every test.
pub const CLUSTER: &str = "simple-hdfs";
/// The ZNode discovery ConfigMap the cluster names.
pub const ZNODE_CONFIG_MAP: &str = "hdfs-znode";
/// Its `ZOOKEEPER` value.
pub const QUORUM: &str =
    "zk-server-default-0.zk-server-default.default.svc.cluster.local:2181/znode-1";

/// Starts the operator on a fresh in-memory API; `active` maps namenode ids to the
/// loopback address of a fake namenode HTTP server (absent ids do not answer).
pub fn start_with_namenodes(active: Vec<(String, String)>) -> Harness {
    let server = TestApiServer::new();
    server.register::<HdfsCluster>();
    let namenodes = NameNodeHttp {
        timeout: Duration::from_millis(300),
        address: Arc::new(move |namenode: &NameNodeAddress| {
            active
                .iter()
                .find(|(id, _)| id == &namenode.id)
                .map_or_else(|| "127.0.0.1:1".to_owned(), |(_, address)| address.clone())
        }),
    };
    Harness::start(server, OPERATOR_NAME, move |runtime| {
        let context = ClusterContext {
            cluster_domain: "cluster.local".to_owned(),
            namenodes,
            namenode_check: Duration::from_millis(200),
        };
        run_with(runtime, context)
    })
}

/// Starts the operator with the first namenode active: it answers `/isActive` with
/// 200 and nothing else (no JMX). The second is a standby out of safe mode: 405, and a
/// `NameNodeInfo` bean with only an empty `Safemode`.
pub fn start() -> Harness {
    let active = strata_testing::http::serve(|request| {
        if request.starts_with("GET /isActive") {
            strata_testing::http::Answer::new("200 OK", "I am Active!")
        } else {
            strata_testing::http::Answer::new("404 Not Found", "")
        }
    });
    let standby = strata_testing::http::serve(|request| standby_answer(request, ""));
    start_with_namenodes(vec![
        (FIRST_NAMENODE.to_owned(), active),
        (SECOND_NAMENODE.to_owned(), standby),
    ])
}

/// A standby namenode's answer to `request`: 405 to `/isActive`, and its safe mode
/// (`Safemode`, empty when off) in the `NameNodeInfo` bean.
pub fn standby_answer(request: &str, safe_mode: &str) -> strata_testing::http::Answer {
    if request.starts_with(&format!("GET {NAMENODE_INFO_PATH} ")) {
        let bean = json!({"beans": [{"Safemode": safe_mode}]});
        strata_testing::http::Answer::new("200 OK", bean.to_string())
    } else {
        strata_testing::http::Answer::new("405 Method Not Allowed", "I am Standby")
    }
}

/// The first namenode's id: its pod's name.
pub const FIRST_NAMENODE: &str = "simple-hdfs-namenode-default-0";
/// The second namenode's id.
pub const SECOND_NAMENODE: &str = "simple-hdfs-namenode-default-1";

/// The example layout: 2 namenodes, 3 journalnodes, 3 datanodes, with `patch` merged
/// over the spec (one level deep).
pub fn spec(patch: Value) -> Value {
    let mut spec = json!({
        "clusterConfig": {"zookeeperConfigMapName": ZNODE_CONFIG_MAP},
        "nameNodes": {"roleGroups": {"default": {"replicas": 2}}},
        "journalNodes": {"roleGroups": {"default": {"replicas": 3}}},
        "dataNodes": {"roleGroups": {"default": {"replicas": 3}}}
    });
    if let (Some(spec), Value::Object(patch)) = (spec.as_object_mut(), patch) {
        spec.extend(patch);
    }
    spec
}

/// Creates the cluster through the API, as `kubectl apply` would.
pub async fn create_cluster(harness: &Harness, spec: Value) {
    strata_testing::manifests::create::<HdfsCluster>(harness, CLUSTER, spec).await;
}

/// Merges `spec` into the cluster's spec.
pub async fn patch_spec(harness: &Harness, spec: Value) {
    strata_testing::manifests::patch_spec::<HdfsCluster>(harness, CLUSTER, spec).await;
}

/// Creates or replaces the ZNode discovery ConfigMap with `ZOOKEEPER` = `quorum`, as
/// the ZooKeeper operator publishes it.
pub async fn publish_znode(harness: &Harness, quorum: &str) {
    publish_znode_with(harness, quorum, json!({})).await;
}

/// [`publish_znode`] with more keys.
pub async fn publish_znode_with(harness: &Harness, quorum: &str, more: Value) {
    let mut data = json!({"ZOOKEEPER": quorum});
    if let (Some(data), Value::Object(more)) = (data.as_object_mut(), more) {
        data.extend(more);
    }
    let config_map: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": ZNODE_CONFIG_MAP, "namespace": harness.namespace},
        "data": data
    }))
    .expect("the ConfigMap deserialises");
    Api::<ConfigMap>::namespaced(harness.server.client(), harness.namespace)
        .patch(
            ZNODE_CONFIG_MAP,
            &PatchParams::apply("zookeeper-operator").force(),
            &Patch::Apply(&config_map),
        )
        .await
        .expect("the ZNode ConfigMap is applied");
}

/// A stored ConfigMap's entry.
pub fn config_map_entry(harness: &Harness, name: &str, key: &str) -> Option<String> {
    harness
        .server
        .get_typed::<ConfigMap>(harness.namespace, name)
        .and_then(|config_map| config_map.data)
        .and_then(|data| data.get(key).cloned())
}
