//! `clusterConfig.service` on the real API server (issue 26, item 3): the node port the
//! real API server allocates reaches discovery; a load balancer without an address keeps
//! the cluster Progressing and discovery without an external address; the address a
//! load-balancer controller writes (the test plays one) reaches discovery and the
//! servers' certificates.

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use strata_certificates::facts::CertificateFacts;
use strata_testing::control_plane::{ControlPlane, ControlPlaneOptions, wait_until};
use strata_testing::manifests::secret_text;
use zookeeper_operator::crd::ZookeeperCluster;

use crate::{Cluster, TIMEOUT, condition, stored, zookeeper_cluster};

/// The cluster `simple`'s discovery ConfigMap's data.
fn discovery(control_plane: &ControlPlane) -> Value {
    stored(control_plane, "configmap/simple")
        .map(|config_map| config_map["data"].clone())
        .unwrap_or(Value::Null)
}

fn expose(control_plane: &ControlPlane, service: &Value) {
    control_plane
        .kubectl(&[
            "patch",
            "zookeepercluster/simple",
            "--type=merge",
            "-p",
            &json!({"spec": {"clusterConfig": {"service": service}}}).to_string(),
        ])
        .unwrap_or_else(|error| panic!("the cluster is patched: {error}"));
}

/// Whether the server certificate of the role group covers `name`.
async fn certificate_covers(client: &kube::Client, name: &str) -> bool {
    let Ok(secret) = Api::<Secret>::namespaced(client.clone(), "default")
        .get("simple-server-default-tls")
        .await
    else {
        return false;
    };
    secret_text(&secret, "tls.crt")
        .and_then(|pem| CertificateFacts::read("the server's", &pem).ok())
        .is_some_and(|facts| facts.missing_names(&[name.to_owned()]).is_empty())
}

// Multi-threaded: `kubectl` blocks this thread while the operator runs on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane (STRATA_CONTROL_PLANE_BIN); run by cargo xtask test"]
async fn node_ports_and_load_balancer_addresses_reach_discovery_once_they_exist() {
    let cluster = Cluster::start(ControlPlaneOptions::default()).await;
    let _operator = cluster.run_operator().await;
    let Cluster {
        control_plane,
        client,
    } = &cluster;
    let mut simple: ZookeeperCluster = zookeeper_cluster("simple", 1);
    simple.spec.cluster_config.service =
        serde_json::from_value(json!({"type": "NodePort"})).expect("an exposure");
    Api::<ZookeeperCluster>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &simple)
        .await
        .expect("the cluster is created");

    // NodePort: the port the real API server allocated, under the secure client port.
    let published = wait_until("the node port in discovery", TIMEOUT, async || {
        discovery(control_plane)["ZOOKEEPER_NODE_PORT"]
            .as_str()
            .map(str::to_owned)
    })
    .await;
    let service = stored(control_plane, "service/simple").expect("the client Service");
    let allocated = service["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|port| port["port"] == 2282)
        .and_then(|port| port["nodePort"].as_u64())
        .expect("a node port on 2282");
    assert_eq!(published, allocated.to_string());

    // LoadBalancer without an address: Progressing says so, discovery has no address.
    expose(control_plane, &json!({"type": "LoadBalancer"}));
    wait_until(
        "Progressing with WaitingForLoadBalancer",
        TIMEOUT,
        async || {
            let progressing = condition(control_plane, "Progressing");
            (progressing["status"] == "True" && progressing["reason"] == "WaitingForLoadBalancer")
                .then_some(())
        },
    )
    .await;
    let data = discovery(control_plane);
    assert!(data.get("ZOOKEEPER_NODE_PORT").is_none(), "{data}");
    assert!(data.get("ZOOKEEPER_EXTERNAL_HOST").is_none(), "{data}");

    // A load-balancer controller writes the address: discovery and the certificates
    // take it, and the cluster settles.
    control_plane
        .kubectl(&[
            "patch",
            "service/simple",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status": {"loadBalancer": {"ingress": [{"hostname": "zk.example.com"}]}}}"#,
        ])
        .unwrap_or_else(|error| panic!("the Service's status is patched: {error}"));
    wait_until("the external address in discovery", TIMEOUT, async || {
        let data = discovery(control_plane);
        (data["ZOOKEEPER_EXTERNAL_HOST"] == "zk.example.com"
            && data["ZOOKEEPER_EXTERNAL_PORT"] == "2282")
            .then_some(())
    })
    .await;
    wait_until("a certificate for the address", TIMEOUT, async || {
        certificate_covers(client, "zk.example.com")
            .await
            .then_some(())
    })
    .await;
    wait_until("Progressing to end", TIMEOUT, async || {
        (condition(control_plane, "Progressing")["reason"] != "WaitingForLoadBalancer")
            .then_some(())
    })
    .await;
}
