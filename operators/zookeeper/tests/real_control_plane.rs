//! The ZooKeeper operator on the real control plane (`strata_testing::control_plane`):
//! its PodDisruptionBudget (ADR030) against the real disruption controller, the real
//! eviction API and the real `kubectl drain`; and a malformed cluster the API server
//! accepts, reported without stopping the others.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use strata_operator::cli::Operator;
use strata_testing::control_plane::{
    ControlPlane, ControlPlaneOptions, RunningOperator, pod_is_ready, wait_until,
};
use zookeeper_operator::controller::{RunOptions, run};
use zookeeper_operator::crd::ZookeeperCluster;
use zookeeper_operator::{OPERATOR_NAME, ZookeeperOperator};

const CLUSTER: &str = "simple-zk";
const TIMEOUT: Duration = Duration::from_secs(90);

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
    let control_plane = ControlPlane::start(ControlPlaneOptions {
        nodes: 2,
        ..ControlPlaneOptions::default()
    })
    .await
    .unwrap_or_else(|error| panic!("the control plane starts: {error}"));
    control_plane
        .install_crds(&ZookeeperOperator::crds())
        .await
        .expect("the CRDs are established");
    let client = control_plane.client().await.expect("a client");
    let _operator = RunningOperator::start(client.clone(), OPERATOR_NAME, |runtime| {
        let options = RunOptions::for_runtime(&runtime);
        run(runtime, options)
    });
    let cluster: ZookeeperCluster = serde_json::from_value(json!({
        "apiVersion": "zookeeper.strata.dev/v1alpha1", "kind": "ZookeeperCluster",
        "metadata": {"name": CLUSTER},
        "spec": {"servers": {"roleGroups": {"default": {"replicas": 3}}}}
    }))
    .expect("a ZookeeperCluster");
    Api::<ZookeeperCluster>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &cluster)
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
        ready_pods_by_node(&client)
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
            let by_node = ready_pods_by_node(&client).await;
            let ready: usize = by_node.values().map(Vec::len).sum();
            (ready == 3 && !by_node.contains_key(&node)).then_some(by_node)
        },
    )
    .await;
    assert_eq!(after.len(), 1, "{after:?}");
}

/// A cluster the API server accepts but the operator cannot read (a `podOverrides`
/// of the wrong shape, which the schema leaves open) is reported, Degraded with
/// `InvalidSpec` and an Event naming the field, and the other clusters are reconciled
/// as ever; fixed, it is reconciled too.
// Multi-threaded: `kubectl wait` blocks this thread while the operator runs on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane (STRATA_CONTROL_PLANE_BIN); run by cargo xtask test"]
async fn a_malformed_cluster_is_reported_and_does_not_stop_the_others() {
    let control_plane = ControlPlane::start(ControlPlaneOptions::default())
        .await
        .unwrap_or_else(|error| panic!("the control plane starts: {error}"));
    control_plane
        .install_crds(&ZookeeperOperator::crds())
        .await
        .expect("the CRDs are established");
    let client = control_plane.client().await.expect("a client");
    let clusters: Api<ZookeeperCluster> = Api::namespaced(client.clone(), "default");
    let malformed = control_plane.dir().join("malformed.yaml");
    std::fs::write(
        &malformed,
        "apiVersion: zookeeper.strata.dev/v1alpha1\nkind: ZookeeperCluster\n\
         metadata: {name: malformed, namespace: default}\n\
         spec:\n  servers:\n    podOverrides: {spec: {containers: not-a-list}}\n    \
         roleGroups: {default: {replicas: 1}}\n",
    )
    .unwrap();
    control_plane
        .kubectl(&["apply", "--server-side", "-f", &malformed.to_string_lossy()])
        .expect("the API server accepts the malformed cluster");
    let _operator = RunningOperator::start(client.clone(), OPERATOR_NAME, |runtime| {
        let options = RunOptions::for_runtime(&runtime);
        run(runtime, options)
    });
    let healthy: ZookeeperCluster = serde_json::from_value(json!({
        "apiVersion": "zookeeper.strata.dev/v1alpha1", "kind": "ZookeeperCluster",
        "metadata": {"name": "healthy"},
        "spec": {"servers": {"roleGroups": {"default": {"replicas": 1}}}}
    }))
    .expect("a ZookeeperCluster");
    clusters
        .create(&PostParams::default(), &healthy)
        .await
        .expect("the healthy cluster is created");

    control_plane
        .kubectl(&[
            "wait",
            "zookeepercluster/healthy",
            "--for=condition=Available=True",
            "--timeout=90s",
        ])
        .unwrap_or_else(|error| panic!("the healthy cluster becomes Available: {error}"));
    let degraded = control_plane
        .kubectl(&[
            "get",
            "zookeepercluster/malformed",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Degraded\")]}",
        ])
        .expect("the malformed cluster's Degraded condition");
    let degraded: serde_json::Value =
        serde_json::from_str(&degraded).unwrap_or_else(|_| panic!("a condition: {degraded:?}"));
    assert_eq!(degraded["status"], "True", "{degraded}");
    assert_eq!(degraded["reason"], "InvalidSpec", "{degraded}");
    let message = degraded["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("spec.servers.podOverrides.spec.containers"),
        "the condition names the field: {message}"
    );
    let events = wait_until("the InvalidObject Event", TIMEOUT, async || {
        let events = Api::<Event>::namespaced(client.clone(), "default")
            .list(&ListParams::default().fields("involvedObject.name=malformed"))
            .await
            .ok()?;
        events
            .items
            .into_iter()
            .find(|event| event.reason.as_deref() == Some("InvalidObject"))
    })
    .await;
    assert_eq!(events.type_.as_deref(), Some("Warning"));

    control_plane
        .kubectl(&[
            "patch",
            "zookeepercluster/malformed",
            "--type=json",
            "-p",
            r#"[{"op": "remove", "path": "/spec/servers/podOverrides"}]"#,
        ])
        .expect("the field is fixed");
    control_plane
        .kubectl(&[
            "wait",
            "zookeepercluster/malformed",
            "--for=condition=Available=True",
            "--timeout=90s",
        ])
        .unwrap_or_else(|error| panic!("the fixed cluster becomes Available: {error}"));
}
