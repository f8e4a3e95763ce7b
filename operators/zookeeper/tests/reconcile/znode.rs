//! The ZNode controller against the in-memory API, with an ensemble that cannot be
//! reached: the path is recorded before it is used, failures are reported, and a ZNode
//! whose cluster is gone can still be deleted.

use std::net::TcpListener;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, PostParams};
use pretty_assertions::assert_eq;
use zookeeper_operator::controller::znode::{EnsembleAddress, FINALIZER, KEEP_PATH_ANNOTATION};
use zookeeper_operator::crd::{ClusterRef, ZookeeperCluster, ZookeeperZnode, ZookeeperZnodeSpec};

use crate::support::{
    ExpectedObjects, Harness, TIMEOUT, cluster, create, delete_cluster, single_group_spec,
    start_with, wait_for, wait_for_event, wait_for_objects,
};

/// A finalizer of some other controller.
const OTHER_FINALIZER: &str = "backup.example.com/keep";

/// Every ensemble lives at a loopback port nothing listens on.
struct Unreachable {
    hosts: String,
}

impl EnsembleAddress for Unreachable {
    fn hosts(&self, _cluster: &ZookeeperCluster, _port: u16) -> String {
        self.hosts.clone()
    }
}

fn closed_loopback_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local address").port()
}

/// The ZNode `app` of cluster `zk` in the harness namespace.
fn app_znode(harness: &Harness) -> ZookeeperZnode {
    let mut znode = ZookeeperZnode::new(
        "app",
        ZookeeperZnodeSpec {
            cluster_ref: ClusterRef {
                name: "zk".to_owned(),
                namespace: None,
            },
        },
    );
    znode.metadata.namespace = Some(harness.namespace.to_owned());
    znode
}

async fn wait_for_znode_reason(harness: &Harness, name: &str, reason: &str) {
    strata_testing::wait::wait_for_degraded::<ZookeeperZnode>(harness, name, reason).await;
}

#[tokio::test]
async fn a_znode_reports_what_blocks_it_and_is_released_when_its_cluster_is_gone() {
    let port = closed_loopback_port();
    let harness = start_with(Arc::new(Unreachable {
        hosts: format!("127.0.0.1:{port}"),
    }));
    let znodes: Api<ZookeeperZnode> = Api::namespaced(harness.server.client(), harness.namespace);
    let mut znode = app_znode(&harness);
    // Another controller's finalizer, as backup tools add: ours must sit next to it and
    // be released without touching it.
    znode.metadata.finalizers = Some(vec![OTHER_FINALIZER.to_owned()]);
    let created = znodes
        .create(&PostParams::default(), &znode)
        .await
        .expect("the ZNode is created");

    // No cluster yet.
    wait_for_znode_reason(&harness, "app", "ClusterNotFound").await;
    let stored = harness
        .server
        .get_typed::<ZookeeperZnode>(harness.namespace, "app")
        .expect("the ZNode exists");
    assert_eq!(
        stored.finalizers(),
        [OTHER_FINALIZER.to_owned(), FINALIZER.to_owned()]
    );

    // The cluster exists, its ensemble does not answer.
    create(&harness, &cluster("zk", single_group_spec(1))).await;
    wait_for_objects(&harness, &ExpectedObjects::new("zk", &["default"])).await;
    wait_for_znode_reason(&harness, "app", "EnsembleUnreachable").await;
    let path = harness
        .server
        .get_typed::<ZookeeperZnode>(harness.namespace, "app")
        .and_then(|znode| znode.status)
        .and_then(|status| status.znode_path);
    assert_eq!(
        path,
        Some(format!("/znode-{}", created.uid().expect("uid"))),
        "the path is recorded before it is created"
    );
    assert!(
        harness
            .server
            .get_typed::<ConfigMap>(harness.namespace, "app")
            .is_none(),
        "no discovery ConfigMap for a path that does not exist"
    );

    // Deleting the ZNode waits for the path to be removed...
    znodes
        .delete("app", &DeleteParams::default())
        .await
        .expect("the ZNode deletion is accepted");
    harness.settle().await;
    assert!(
        harness
            .server
            .get_typed::<ZookeeperZnode>(harness.namespace, "app")
            .is_some_and(|znode| znode.metadata.deletion_timestamp.is_some()),
        "the finalizer holds the ZNode while the ensemble is unreachable"
    );
    strata_testing::wait::eventually(
        "a Warning Event of the path removal naming the keep-path annotation",
        || {
            strata_testing::wait::events_about(&harness, "app")
                .into_iter()
                .find(|event| {
                    event["type"] == "Warning"
                        && event["action"] == "RemovePath"
                        && event["note"]
                            .as_str()
                            .is_some_and(|note| note.contains(KEEP_PATH_ANNOTATION))
                })
        },
        || strata_testing::wait::events_about(&harness, "app"),
    )
    .await;

    // ...unless the cluster itself is gone: then there is nothing to remove it from.
    delete_cluster(&harness, "zk").await;
    wait_for::<ZookeeperZnode>(
        &harness,
        "app",
        "the operator's finalizer released once the cluster is gone",
        |znode| znode.finalizers() == [OTHER_FINALIZER.to_owned()],
    )
    .await;
    let event = wait_for_event(&harness, "app", "Warning", "ClusterGone").await;
    assert!(
        event["note"]
            .as_str()
            .is_some_and(|note| note.contains("/znode-")),
        "the Event names the path left behind: {event:#}"
    );

    // The other controller finishes too; the ZNode is gone.
    harness
        .server
        .modify::<ZookeeperZnode>(harness.namespace, "app", |znode| {
            znode.metadata.finalizers = None;
        })
        .expect("the other controller removes its finalizer");
    harness
        .server
        .wait_for_deletion::<ZookeeperZnode>(harness.namespace, "app", TIMEOUT)
        .await
        .expect("the ZNode is deleted");
}

#[tokio::test]
async fn a_znode_of_a_stopped_cluster_says_so_and_the_annotation_keeps_its_path() {
    let port = closed_loopback_port();
    let harness = start_with(Arc::new(Unreachable {
        hosts: format!("127.0.0.1:{port}"),
    }));
    create(&harness, &cluster("zk", single_group_spec(1))).await;
    wait_for_objects(&harness, &ExpectedObjects::new("zk", &["default"])).await;
    let znodes: Api<ZookeeperZnode> = Api::namespaced(harness.server.client(), harness.namespace);
    znodes
        .create(&PostParams::default(), &app_znode(&harness))
        .await
        .expect("the ZNode is created");
    wait_for_znode_reason(&harness, "app", "EnsembleUnreachable").await;

    crate::support::patch_spec(
        &harness,
        "zk",
        serde_json::json!({"clusterOperation": {"stopped": true}}),
    )
    .await;
    znodes
        .delete("app", &DeleteParams::default())
        .await
        .expect("the ZNode deletion is accepted");
    wait_for_znode_reason(&harness, "app", "ClusterStopped").await;
    wait_for_event(&harness, "app", "Warning", "ClusterStopped").await;

    harness
        .server
        .modify::<ZookeeperZnode>(harness.namespace, "app", |znode| {
            znode
                .metadata
                .annotations
                .get_or_insert_default()
                .insert(KEEP_PATH_ANNOTATION.to_owned(), "true".to_owned());
        })
        .expect("the user annotates the ZNode");
    harness
        .server
        .wait_for_deletion::<ZookeeperZnode>(harness.namespace, "app", TIMEOUT)
        .await
        .expect("the annotation releases the finalizer");
    wait_for_event(&harness, "app", "Normal", "PathKept").await;
}
