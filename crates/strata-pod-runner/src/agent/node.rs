//! The Node object and its Lease, as a kubelet keeps them.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;

use super::{AgentError, NodeOptions};

/// The address the node reports; the pods' bridge.
pub(super) const HOST_IP: &str = "10.244.0.1";
/// How long the node's Lease is valid, and how often it is renewed (a kubelet's).
const LEASE_SECONDS: i32 = 40;
const RENEW_EVERY: Duration = Duration::from_secs(10);

/// Registers the Node `node` as `options` say, Ready.
pub(super) async fn register(
    client: &Client,
    node: &str,
    options: &NodeOptions,
) -> Result<(), AgentError> {
    let nodes: Api<Node> = Api::all(client.clone());
    let mut labels: BTreeMap<String, String> = [
        ("kubernetes.io/hostname", node),
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
        ("type", "strata-pod-runner"),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_owned(), value.to_owned()))
    .collect();
    labels.extend(options.labels.clone());
    let object: Node = serde_json::from_value(json!({
        "metadata": {"name": node, "labels": labels},
        "spec": {"taints": options.taints}
    }))
    .unwrap_or_default();
    match nodes.create(&PostParams::default(), &object).await {
        Ok(_) => {}
        Err(kube::Error::Api(response)) if response.code == 409 => {
            // A Node left by an earlier agent: this one's labels and taints win.
            let wanted =
                json!({"metadata": {"labels": labels}, "spec": {"taints": options.taints}});
            nodes
                .patch(node, &PatchParams::default(), &Patch::Merge(&wanted))
                .await
                .map_err(|source| AgentError {
                    doing: format!("update the Node {node}"),
                    source,
                })?;
        }
        Err(source) => {
            return Err(AgentError {
                doing: format!("create the Node {node}"),
                source,
            });
        }
    }
    let now = Timestamp::now().to_string();
    let status = json!({"status": {
        "capacity": {"cpu": "64", "memory": "256Gi", "pods": "110"},
        "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"},
        "addresses": [{"type": "InternalIP", "address": HOST_IP}, {"type": "Hostname", "address": node}],
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "the strata pod runner serves this node",
             "lastHeartbeatTime": now, "lastTransitionTime": now},
            {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory", "lastHeartbeatTime": now, "lastTransitionTime": now},
            {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure", "lastHeartbeatTime": now, "lastTransitionTime": now},
            {"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID", "lastHeartbeatTime": now, "lastTransitionTime": now}
        ],
        "nodeInfo": {"kubeletVersion": "strata-pod-runner", "containerRuntimeVersion": "strata-pod-runner://0",
            "architecture": "amd64", "operatingSystem": "linux", "kernelVersion": "", "osImage": "", "kubeProxyVersion": "",
            "machineID": "", "systemUUID": "", "bootID": ""}
    }});
    nodes
        .patch_status(node, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .map(drop)
        .map_err(|source| AgentError {
            doing: format!("report the status of the Node {node}"),
            source,
        })
}

/// Renews the node's Lease in `kube-node-lease`, creating it first, as the kubelet does.
pub(super) async fn renew_lease(client: Client, node: String) {
    let leases: Api<Lease> = Api::namespaced(client, "kube-node-lease");
    loop {
        let now = Timestamp::now().to_string();
        let lease: Lease = serde_json::from_value(json!({
            "metadata": {"name": node},
            "spec": {"holderIdentity": node, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": now}
        }))
        .unwrap_or_default();
        let renewed = leases
            .patch(
                &node,
                &PatchParams::apply("strata-pod-runner").force(),
                &Patch::Apply(&lease),
            )
            .await;
        if let Err(error) = renewed {
            eprintln!("strata-pod-runner: cannot renew the Lease of node {node}: {error}");
        }
        tokio::time::sleep(RENEW_EVERY).await;
    }
}
