//! A cluster the API server accepts but the operator cannot read.

use kube::api::{Api, PostParams};
use strata_testing::control_plane::ControlPlaneOptions;
use zookeeper_operator::crd::ZookeeperCluster;

use crate::{Cluster, event_with_reason, zookeeper_cluster};

/// A cluster the API server accepts but the operator cannot read (a `podOverrides`
/// of the wrong shape, which the schema leaves open) is reported, Degraded with
/// `InvalidSpec` and an Event naming the field, and the other clusters are reconciled
/// as ever; fixed, it is reconciled too.
// Multi-threaded: `kubectl wait` blocks this thread while the operator runs on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane (STRATA_CONTROL_PLANE_BIN); run by cargo xtask test"]
async fn a_malformed_cluster_is_reported_and_does_not_stop_the_others() {
    let cluster = Cluster::start(ControlPlaneOptions::default()).await;
    let Cluster {
        control_plane,
        client,
    } = &cluster;
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
    let _operator = cluster.run_operator().await;
    let healthy = zookeeper_cluster("healthy", 1);
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
    let events = event_with_reason(client, "malformed", "InvalidObject").await;
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
