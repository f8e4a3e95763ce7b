//! The upgrade to TLS of a cluster created before TLS became the default, on the real
//! control plane with three real ZooKeeper 3.9.5 servers: the documented procedure
//! (docs/zookeeper.md, TLS). The running plaintext ensemble is not switched
//! (`TlsSwitchNeedsStop`: servers with and without quorum TLS cannot form a quorum);
//! stopped and started again, every server comes back on TLS with the operator's
//! certificates, and a znode written in plaintext before is still there.

#![allow(clippy::expect_used, clippy::panic)]

use std::time::Duration;

use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use strata_testing::control_plane::wait_until;
use strata_testing::tls::four_letter_word;
use zookeeper_operator::crd::ZookeeperCluster;
use zookeeper_operator::znode_client::ZnodeClient;

use crate::operated::{CLUSTER, NAMESPACE, Operated, server_fqdn, wait_settled};
use crate::support::pods::java_client;
use crate::tls::{client_config, mode};

const ZNODE: &str = "/written-in-plaintext";

/// The reason of the cluster's condition `kind` while it is True.
async fn true_with(clusters: &Api<ZookeeperCluster>, kind: &str) -> Option<String> {
    let cluster = clusters.get_status(CLUSTER).await.ok()?;
    let conditions = serde_json::to_value(cluster.status?).ok()?["conditions"].clone();
    conditions.as_array()?.iter().find_map(|condition| {
        (condition["type"] == kind && condition["status"] == "True")
            .then(|| condition["reason"].as_str().map(str::to_owned))
            .flatten()
    })
}

async fn annotate(clusters: &Api<ZookeeperCluster>, command: serde_json::Value) {
    let patch = json!({"metadata": {"annotations": {"operator-command": command}}});
    clusters
        .patch(CLUSTER, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|error| panic!("{error}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root, the control plane and the ZooKeeper image directory; run by cargo xtask test"]
async fn a_plaintext_ensemble_moves_to_tls_by_stop_and_start_and_keeps_its_znodes() {
    let operated = Operated::start().await;
    let client = operated.client.clone();
    let clusters: Api<ZookeeperCluster> = Api::namespaced(client.clone(), NAMESPACE);
    // As a cluster created before TLS became the default runs.
    operated
        .create_cluster(json!({
            "clusterConfig": {"tls": {"enabled": false}},
            "servers": {"roleGroups": {"default": {"replicas": 3}}}
        }))
        .await;
    wait_settled(&client, 3, Duration::from_secs(300)).await;
    let plaintext = operated
        .forwarded
        .port(&server_fqdn(0), 2181)
        .expect("server 0's client port is forwarded");
    let writer = wait_until("a plaintext session", Duration::from_secs(60), async || {
        ZnodeClient::connect(&plaintext, Duration::from_secs(5))
            .await
            .ok()
    })
    .await;
    writer
        .ensure_path(ZNODE)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    drop(writer);

    // The default takes over: the running ensemble is left as it is, and says why.
    let to_default = json!({"spec": {"clusterConfig": {"tls": null}}});
    clusters
        .patch(CLUSTER, &PatchParams::default(), &Patch::Merge(&to_default))
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    wait_until(
        "Degraded with TlsSwitchNeedsStop",
        Duration::from_secs(60),
        async || {
            (true_with(&clusters, "Degraded").await.as_deref() == Some("TlsSwitchNeedsStop"))
                .then_some(())
        },
    )
    .await;

    // The procedure: stop, then start again.
    annotate(&clusters, json!("Stopped")).await;
    wait_until("Stopped", Duration::from_secs(180), async || {
        true_with(&clusters, "Stopped").await.map(drop)
    })
    .await;
    annotate(&clusters, serde_json::Value::Null).await;
    wait_settled(&client, 3, Duration::from_secs(300)).await;

    let config = client_config(&operated.discovery_ca().await, None);
    for ordinal in 0..3 {
        let fqdn = server_fqdn(ordinal);
        let answer = wait_until(
            &format!("{fqdn} serving over TLS"),
            Duration::from_secs(60),
            async || {
                let address = operated.forwarded.port(&fqdn, 2282)?.parse().ok()?;
                let (config, name) = (config.clone(), fqdn.clone());
                let answer = tokio::task::spawn_blocking(move || {
                    four_letter_word(config, &name, address, "srvr")
                })
                .await
                .ok()?
                .ok()?
                .0;
                mode(&answer).is_some().then_some(answer)
            },
        )
        .await;
        assert!(answer.contains("Zookeeper version: 3.9.5"), "{answer}");
    }

    // The znode, read over TLS by ZooKeeper's own Java client in a server's pod: there
    // is no plaintext port any more.
    let runner = operated.agent.runner();
    let read = java_client(
        &*runner.lock().await,
        "simple-zk-server-default-1",
        &format!("stat {ZNODE}"),
    )
    .await
    .unwrap_or_else(|error| panic!("{error}"));
    let found = read.contains("cZxid") && !read.contains("does not exist");
    assert!(found, "{ZNODE} was lost on the way to TLS: {read}");
    operated.stop().await;
}
