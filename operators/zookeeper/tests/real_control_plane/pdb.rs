//! ADR030 for real: the servers' PodDisruptionBudget against the real disruption
//! controller, the real eviction API and the real `kubectl drain`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, ListParams, PostParams};
use strata_testing::control_plane::{ControlPlaneOptions, pod_is_ready, wait_until};
use zookeeper_operator::crd::ZookeeperCluster;

use crate::{Cluster, TIMEOUT, zookeeper_cluster};

const CLUSTER: &str = "simple-zk";

/// The Ready pods of the cluster by node.
async fn ready_pods_by_node(client: &kube::Client) -> BTreeMap<String, Vec<String>> {
    let pods = Api::<Pod>::namespaced(client.clone(), "default")
        .list(&ListParams::default().labels(&format!("app.kubernetes.io/instance={CLUSTER}")))
        .await
        .expect("pods");
    let mut by_node: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for pod in pods.items {
        let ready = pod_is_ready(&pod);
        if let (true, Some(node)) = (ready, pod.spec.and_then(|spec| spec.node_name)) {
            by_node
                .entry(node)
                .or_default()
                .push(pod.metadata.name.unwrap_or_default());
        }
    }
    by_node
}

#[tokio::test]
#[ignore = "needs the control plane (STRATA_CONTROL_PLANE_BIN); run by cargo xtask test"]
async fn a_drain_evicts_only_what_the_pod_disruption_budget_allows() {
    // Two nodes for three servers: one node runs two of them.
    let cluster = Cluster::start(ControlPlaneOptions {
        nodes: 2,
        ..ControlPlaneOptions::default()
    })
    .await;
    let _operator = cluster.run_operator().await;
    let Cluster {
        control_plane,
        client,
    } = &cluster;
    Api::<ZookeeperCluster>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &zookeeper_cluster(CLUSTER, 3))
        .await
        .expect("the cluster is created");

    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), "default");
    // ADR030's default for ZooKeeper servers is maxUnavailable 1: with all three
    // Ready, the real disruption controller allows one disruption.
    let allowed = wait_until(
        "the PDB allowing one disruption of three",
        TIMEOUT,
        async || {
            let status = pdbs.get_opt("simple-zk-server").await.ok()??.status?;
            (status.expected_pods == Some(3) && status.current_healthy == Some(3))
                .then_some(status.disruptions_allowed)
        },
    )
    .await;
    assert_eq!(allowed, Some(1));

    let (node, pods) = wait_until("a node running two servers", TIMEOUT, async || {
        ready_pods_by_node(client)
            .await
            .into_iter()
            .find(|(_, pods)| pods.len() == 2)
    })
    .await;

    // KWOK makes a replacement Ready at once, so that the budget is refused for a
    // moment only. With the other node cordoned, the evicted server's replacement
    // stays Pending, and the budget stays spent until it is back.
    let other = control_plane
        .nodes()
        .iter()
        .find(|candidate| **candidate != node)
        .expect("a second node")
        .clone();
    control_plane
        .kubectl(&["cordon", &other])
        .expect("the other node cordoned");
    let refused = control_plane
        .kubectl(&[
            "drain",
            &node,
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--timeout=20s",
        ])
        .expect_err("the drain cannot finish while the budget is spent");
    assert!(
        refused.contains("would violate the pod's disruption budget"),
        "the eviction API refused the second of {pods:?}:\n{refused}"
    );
    let spent = pdbs
        .get("simple-zk-server")
        .await
        .expect("the PDB")
        .status
        .expect("a status");
    assert_eq!(
        (spent.current_healthy, spent.disruptions_allowed),
        (Some(2), Some(0)),
        "one server away, no disruption allowed"
    );

    control_plane
        .kubectl(&["uncordon", &other])
        .expect("the other node uncordoned");
    let drained = control_plane
        .kubectl(&[
            "drain",
            &node,
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--timeout=120s",
        ])
        .unwrap_or_else(|output| {
            panic!("the drain finishes once the first server is back:\n{output}")
        });
    assert!(drained.contains("drained"), "{drained}");
    let after = wait_until(
        "three servers Ready off the drained node",
        TIMEOUT,
        async || {
            let by_node = ready_pods_by_node(client).await;
            let ready: usize = by_node.values().map(Vec::len).sum();
            (ready == 3 && !by_node.contains_key(&node)).then_some(by_node)
        },
    )
    .await;
    assert_eq!(after.len(), 1, "{after:?}");
}
