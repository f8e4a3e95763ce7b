//! The real control plane of `strata_testing::control_plane`: what it gives the other
//! end-to-end tests. A StatefulSet gets its pods scheduled on KWOK nodes and Ready,
//! its claims bound by the real binder; the nodes renew their Leases, and a pod marked
//! not ready comes back; a pod asked to fail waits in CrashLoopBackOff;
//! the real kubectl reports the pinned version; and no process outlives the value.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use strata_testing::control_plane::{
    ControlPlane, ControlPlaneOptions, SIMULATED_FAILURE_ANNOTATION, STORAGE_CLASS, pod_is_ready,
    wait_until,
};
use strata_testing::tools::{KUBECTL, tool};

fn stateful_set(name: &str, annotations: serde_json::Value) -> StatefulSet {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": 2,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}, "annotations": annotations},
                "spec": {"containers": [{"name": "main", "image": "example.invalid/main:1"}]}
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "1Gi"}}}
            }]
        }
    }))
    .expect("a StatefulSet")
}

/// How long each step may take.
const TIMEOUT: Duration = Duration::from_secs(60);

#[tokio::test]
#[ignore = "needs the control plane (STRATA_CONTROL_PLANE_BIN); run by cargo xtask test"]
async fn pods_run_on_kwok_nodes_claims_bind_and_every_process_stops_with_the_value() {
    let control_plane = ControlPlane::start(ControlPlaneOptions::default())
        .await
        .unwrap_or_else(|error| panic!("the control plane starts: {error}"));
    eprintln!(
        "control plane ready in {:.1} s",
        control_plane.started_in().as_secs_f64()
    );
    let client = control_plane.client().await.expect("an admin client");

    let version = std::process::Command::new(tool(KUBECTL))
        .arg("--kubeconfig")
        .arg(control_plane.kubeconfig())
        .args(["version", "-o", "json"])
        .output()
        .expect("kubectl runs");
    let version: serde_json::Value =
        serde_json::from_slice(&version.stdout).expect("kubectl version prints JSON");
    assert_eq!(version["serverVersion"]["gitVersion"], "v1.37.2");

    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    sets.create(&PostParams::default(), &stateful_set("healthy", json!({})))
        .await
        .expect("a StatefulSet");
    sets.create(
        &PostParams::default(),
        &stateful_set(
            "failing",
            json!({SIMULATED_FAILURE_ANNOTATION: "CrashLoopBackOff"}),
        ),
    )
    .await
    .expect("a failing StatefulSet");

    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    wait_until(
        "both healthy pods Ready on KWOK nodes",
        TIMEOUT,
        async || {
            let list = pods
                .list(&ListParams::default().labels("app=healthy"))
                .await
                .ok()?;
            let ready = list
                .items
                .iter()
                .filter(|pod| {
                    pod.spec
                        .as_ref()
                        .and_then(|spec| spec.node_name.as_deref())
                        .is_some_and(|node| node.starts_with("kwok-node-"))
                        && pod_is_ready(pod)
                })
                .count();
            (ready == 2).then_some(())
        },
    )
    .await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    wait_until(
        "every node's Lease renewed, so the node lifecycle controller keeps them Ready",
        TIMEOUT,
        async || {
            for node in control_plane.nodes() {
                leases.get_opt(node).await.ok()??.spec?.renew_time?;
            }
            Some(())
        },
    )
    .await;
    pods.patch_status(
        "healthy-0",
        &PatchParams::default(),
        &Patch::Strategic(json!({"status": {"conditions": [
            {"type": "Ready", "status": "False", "reason": "NodeNotReady"}
        ]}})),
    )
    .await
    .expect("healthy-0 marked not ready, as the node lifecycle controller does");
    wait_until("healthy-0 Ready again", TIMEOUT, async || {
        pod_is_ready(&pods.get("healthy-0").await.ok()?).then_some(())
    })
    .await;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    wait_until("the healthy pods' claims Bound", TIMEOUT, async || {
        let list = claims.list(&ListParams::default()).await.ok()?;
        let bound = list
            .items
            .iter()
            .filter(|claim| {
                claim
                    .metadata
                    .name
                    .as_deref()
                    .is_some_and(|name| name.starts_with("data-healthy-"))
            })
            .filter(|claim| {
                claim
                    .spec
                    .as_ref()
                    .and_then(|spec| spec.storage_class_name.as_deref())
                    == Some(STORAGE_CLASS)
                    && claim
                        .status
                        .as_ref()
                        .and_then(|status| status.phase.as_deref())
                        == Some("Bound")
            })
            .count();
        (bound == 2).then_some(())
    })
    .await;
    wait_until(
        "the failing pod waiting in CrashLoopBackOff",
        TIMEOUT,
        async || {
            let pod = pods.get_opt("failing-0").await.ok()??;
            let waiting = pod
                .status?
                .container_statuses?
                .first()?
                .state
                .as_ref()?
                .waiting
                .as_ref()?
                .reason
                .clone()?;
            (waiting == "CrashLoopBackOff").then_some(())
        },
    )
    .await;

    let pids: Vec<u32> = control_plane
        .components()
        .iter()
        .map(|component| component.pid())
        .collect();
    assert_eq!(
        pids.len(),
        5,
        "etcd, apiserver, controller manager, scheduler, kwok"
    );
    drop(control_plane);
    for pid in pids {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|stat| stat.contains(") Z ")),
            "process {pid} still runs after the control plane was dropped"
        );
    }
}

/// The premise of the operators' stuck-pod replacement, on the real StatefulSet
/// controller: with OrderedReady, a pod that crash-loops on a bad revision is never
/// replaced after the template is fixed (kubernetes/kubernetes#67250).
#[tokio::test]
#[ignore = "needs the control plane (STRATA_CONTROL_PLANE_BIN); run by cargo xtask test"]
async fn the_real_stateful_set_controller_never_replaces_a_pod_stuck_on_a_bad_revision() {
    let control_plane = ControlPlane::start(ControlPlaneOptions::default())
        .await
        .unwrap_or_else(|error| panic!("the control plane starts: {error}"));
    let client = control_plane.client().await.expect("an admin client");
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    sets.create(&PostParams::default(), &stateful_set("web", json!({})))
        .await
        .expect("a StatefulSet");
    let ready = async |name: &str| -> Option<bool> {
        let pod = pods.get_opt(name).await.ok()??;
        Some(
            pod.status?
                .conditions?
                .iter()
                .any(|condition| condition.type_ == "Ready" && condition.status == "True"),
        )
    };
    wait_until("web-1 Ready", TIMEOUT, async || {
        ready("web-1").await.filter(|ready| *ready)
    })
    .await;

    let template = |annotations: serde_json::Value| json!({"spec": {"template": {"metadata": {"annotations": annotations}}}});
    sets.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(template(
            json!({SIMULATED_FAILURE_ANNOTATION: "CrashLoopBackOff"}),
        )),
    )
    .await
    .expect("a bad template");
    wait_until(
        "web-1 crash-looping on the bad revision",
        TIMEOUT,
        async || {
            let pod = pods.get_opt("web-1").await.ok()??;
            let annotations = pod.metadata.annotations?;
            annotations
                .contains_key(SIMULATED_FAILURE_ANNOTATION)
                .then_some(())
        },
    )
    .await;
    let broken_revision = pods
        .get("web-1")
        .await
        .expect("web-1")
        .metadata
        .labels
        .and_then(|labels| labels.get("controller-revision-hash").cloned());

    sets.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(template(json!({SIMULATED_FAILURE_ANNOTATION: null}))),
    )
    .await
    .expect("the template fixed");
    tokio::time::sleep(Duration::from_secs(20)).await;
    let pod = pods.get("web-1").await.expect("web-1");
    assert_eq!(
        pod.metadata
            .labels
            .and_then(|labels| labels.get("controller-revision-hash").cloned()),
        broken_revision,
        "20 s after the fix, web-1 still runs the bad revision: the controller waits for it"
    );
    assert_eq!(ready("web-1").await, Some(false));
}
