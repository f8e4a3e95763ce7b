//! The runner as a node of the real control plane (kube-apiserver, etcd,
//! kube-controller-manager, kube-scheduler): the scheduler binds a StatefulSet's pods to
//! it, the runner runs them and reports their status, and the real StatefulSet
//! controller counts them ready, replaces a deleted pod, and scales down. Needs root and
//! the control-plane binaries; `cargo xtask test` runs it.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Pod, Service, ServiceAccount, Taint};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;
use strata_pod_runner::agent::{NodeAgent, NodeOptions};
use strata_pod_runner::runner::PodRunner;
use strata_testing::control_plane::{ControlPlane, ControlPlaneOptions};
use support::{IMAGE, host_tools_runner, short_backoff};

const NODE: &str = "strata-runner-0";

fn runner(image_dir: &std::path::Path) -> PodRunner {
    host_tools_runner(image_dir, short_backoff(500))
}

async fn eventually<T>(
    client: &Client,
    what: &str,
    timeout: Duration,
    mut check: impl AsyncFnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(found) = check().await {
            return found;
        }
        if Instant::now() > deadline {
            panic!("waited {timeout:?} for {what}:\n{}", describe(client).await);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The pods, claims and nodes as the API server holds them, for a failure message.
async fn describe(client: &Client) -> String {
    let mut text = String::new();
    for pod in Api::<Pod>::all(client.clone())
        .list(&Default::default())
        .await
        .map(|list| list.items)
        .unwrap_or_default()
    {
        text.push_str(&format!(
            "pod {:?} node {:?} status {}\n",
            pod.metadata.name,
            pod.spec.and_then(|spec| spec.node_name),
            serde_json::to_string(&pod.status).unwrap_or_default()
        ));
    }
    for claim in Api::<k8s_openapi::api::core::v1::PersistentVolumeClaim>::all(client.clone())
        .list(&Default::default())
        .await
        .map(|list| list.items)
        .unwrap_or_default()
    {
        text.push_str(&format!(
            "claim {:?} {:?} {}\n",
            claim.metadata.name,
            claim.metadata.annotations,
            serde_json::to_string(&claim.status).unwrap_or_default()
        ));
    }
    for node in Api::<k8s_openapi::api::core::v1::Node>::all(client.clone())
        .list(&Default::default())
        .await
        .map(|list| list.items)
        .unwrap_or_default()
    {
        text.push_str(&format!(
            "node {:?} taints {}\n",
            node.metadata.name,
            serde_json::to_string(&node.spec.and_then(|spec| spec.taints)).unwrap_or_default()
        ));
    }
    text
}

async fn ready_replicas(sets: &Api<StatefulSet>) -> i32 {
    sets.get_status("web")
        .await
        .ok()
        .and_then(|set| set.status)
        .and_then(|status| status.ready_replicas)
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the control-plane binaries; run by cargo xtask test"]
async fn the_statefulset_controller_drives_pods_the_runner_runs_for_real() {
    let control_plane = ControlPlane::start(ControlPlaneOptions {
        nodes: 0,
        ..ControlPlaneOptions::default()
    })
    .await
    .unwrap_or_else(|error| panic!("{error}"));
    let client: Client = control_plane.client().await.unwrap();
    let image_dir = tempfile::tempdir().unwrap();
    let agent = NodeAgent::start(client.clone(), NODE, runner(image_dir.path()))
        .await
        .unwrap_or_else(|error| panic!("{error}"));

    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let service: Service = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"clusterIP": "None", "selector": {"app": "web"}, "ports": [{"port": 8080}]}
    }))
    .unwrap();
    services
        .create(&PostParams::default(), &service)
        .await
        .unwrap();
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    let set: StatefulSet = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "serviceName": "web",
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "terminationGracePeriodSeconds": 20,
                    "automountServiceAccountToken": false,
                    "securityContext": {"runAsUser": 1000, "runAsGroup": 100, "fsGroup": 100},
                    "containers": [{
                        "name": "server",
                        "image": IMAGE,
                        "command": ["sh", "-c", "echo \"$HOSTNAME\" > /data/name && exec python3 -m http.server 8080 --directory /data"],
                        "ports": [{"name": "http", "containerPort": 8080}],
                        "readinessProbe": {"httpGet": {"path": "/name", "port": "http"}, "periodSeconds": 1},
                        // A drain that would outlast any grace period.
                        "lifecycle": {"preStop": {"exec": {"command": ["sleep", "60"]}}},
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}]
                    }]
                }
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
            }]
        }
    }))
    .unwrap();
    sets.create(&PostParams::default(), &set).await.unwrap();
    eventually(
        &client,
        "2 ready replicas counted by the StatefulSet controller",
        Duration::from_secs(120),
        async || (ready_replicas(&sets).await == 2).then_some(()),
    )
    .await;

    // The pods' status is the runner's: an address on the pod network, Ready.
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod = pods.get("web-1").await.unwrap();
    let status = pod.status.clone().unwrap();
    assert_eq!(pod.spec.unwrap().node_name.as_deref(), Some(NODE));
    assert!(status.pod_ip.unwrap_or_default().starts_with("10.244."));
    // A forward reaches the pod from the host, by its FQDN.
    let forwarded = agent
        .forwarded("web-1.web.default.svc.cluster.local:8080")
        .expect("a forward of web-1:8080");
    let body = tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(forwarded).unwrap();
        stream.write_all(b"GET /name HTTP/1.0\r\n\r\n").unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        text
    })
    .await
    .unwrap();
    assert!(body.ends_with("\r\n\r\nweb-1\n"), "{body}");

    // A deleted pod is stopped, confirmed, and replaced by the controller; its claim
    // keeps its data. The deletion's own grace period of 1 s wins over the pod's 20 s:
    // the preStop hook gets 1 s, SIGTERM the kubelet's minimum of 2 s.
    let old_uid = pods.get("web-0").await.unwrap().metadata.uid;
    let deleted = Instant::now();
    pods.delete(
        "web-0",
        &DeleteParams {
            grace_period_seconds: Some(1),
            ..DeleteParams::default()
        },
    )
    .await
    .unwrap();
    eventually(
        &client,
        "web-0's deletion confirmed",
        Duration::from_secs(60),
        async || {
            let uid = pods
                .get_opt("web-0")
                .await
                .ok()?
                .and_then(|pod| pod.metadata.uid);
            (uid != old_uid).then_some(())
        },
    )
    .await;
    let stopped_in = deleted.elapsed();
    assert!(
        stopped_in < Duration::from_secs(10),
        "stopped within the deletion's grace period, not the pod's: {stopped_in:?}"
    );
    eventually(
        &client,
        "web-0 replaced and ready again",
        Duration::from_secs(120),
        async || {
            let pod = pods.get("web-0").await.ok()?;
            let ready = pod
                .status
                .as_ref()?
                .conditions
                .as_ref()?
                .iter()
                .any(|condition| condition.type_ == "Ready" && condition.status == "True");
            (pod.metadata.uid != old_uid && ready).then_some(())
        },
    )
    .await;

    // Scaling down stops the last pod's processes; the deletion is confirmed only
    // once they have ended and the pod's forwards are gone.
    sets.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 1}})),
    )
    .await
    .unwrap();
    let runner = agent.runner();
    eventually(
        &client,
        "web-1 gone from the runner and from the API",
        Duration::from_secs(120),
        async || {
            let stopped = runner.lock().await.status("default", "web-1").is_none();
            let confirmed = pods.get_opt("web-1").await.ok()?.is_none();
            (stopped && confirmed).then_some(())
        },
    )
    .await;
    assert!(
        agent
            .forwarded("web-1.web.default.svc.cluster.local:8080")
            .is_none()
    );
    agent.shutdown().await;
    drop(control_plane);
}

/// A pod reads the API server as an in-cluster client does: at
/// `$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`, trusting the projected
/// `ca.crt`, with the projected token of its ServiceAccount, bound to the pod. A pod
/// that does not tolerate the node's taint is not scheduled there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the control-plane binaries; run by cargo xtask test"]
async fn a_pod_reaches_the_api_server_with_its_projected_service_account_token() {
    let control_plane = ControlPlane::start(ControlPlaneOptions {
        nodes: 0,
        ..ControlPlaneOptions::default()
    })
    .await
    .unwrap_or_else(|error| panic!("{error}"));
    let client: Client = control_plane.client().await.unwrap();
    let api_server = control_plane
        .server()
        .trim_start_matches("https://")
        .parse()
        .expect("the API server's address");
    let taint: Taint = serde_json::from_value(
        json!({"key": "strata.dev/pod-runner", "value": "true", "effect": "NoSchedule"}),
    )
    .unwrap();
    let options = NodeOptions {
        labels: [("strata.dev/pod-runner".to_owned(), "true".to_owned())].into(),
        taints: vec![taint],
        api_server: Some(api_server),
    };
    let image_dir = tempfile::tempdir().unwrap();
    let agent = NodeAgent::start_with(client.clone(), NODE, runner(image_dir.path()), options)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    accounts
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "reader"}})).unwrap(),
        )
        .await
        .unwrap();

    let secrets = "/var/run/secrets/kubernetes.io/serviceaccount";
    let review = r#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#;
    let script = format!(
        "curl -sS --fail --cacert {secrets}/ca.crt -H \"Authorization: Bearer $(cat {secrets}/token)\" \
         -H 'Content-Type: application/json' -d '{review}' \
         \"https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/apis/authentication.k8s.io/v1/selfsubjectreviews\" \
         > /dev/termination-log 2>&1"
    );
    let pod = |name: &str, tolerates: bool| -> Pod {
        let tolerations = if tolerates {
            json!([{"key": "strata.dev/pod-runner", "operator": "Exists", "effect": "NoSchedule"}])
        } else {
            json!([])
        };
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {
                "serviceAccountName": "reader",
                "restartPolicy": "Never",
                "nodeSelector": {"strata.dev/pod-runner": "true"},
                "tolerations": tolerations,
                "securityContext": {"runAsUser": 1000, "runAsGroup": 100},
                "containers": [{"name": "client", "image": IMAGE, "command": ["sh", "-c", script]}]
            }
        }))
        .unwrap()
    };
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    pods.create(&PostParams::default(), &pod("in-cluster", true))
        .await
        .unwrap();
    pods.create(&PostParams::default(), &pod("intolerant", false))
        .await
        .unwrap();
    let message = eventually(
        &client,
        "the in-cluster pod to succeed",
        Duration::from_secs(60),
        async || {
            let status = pods.get("in-cluster").await.ok()?.status?;
            (status.phase.as_deref() == Some("Succeeded")).then_some(())?;
            status
                .container_statuses?
                .first()?
                .state
                .as_ref()?
                .terminated
                .as_ref()?
                .message
                .clone()
        },
    )
    .await;
    let review: serde_json::Value = serde_json::from_str(&message).expect("the review's JSON");
    let user = &review["status"]["userInfo"];
    assert_eq!(user["username"], "system:serviceaccount:default:reader");
    assert_eq!(
        user["extra"]["authentication.kubernetes.io/pod-name"],
        json!(["in-cluster"]),
        "the token is bound to the pod: {review}"
    );
    let intolerant = pods.get("intolerant").await.unwrap();
    assert_eq!(
        intolerant.spec.unwrap().node_name,
        None,
        "the taint keeps it off"
    );
    agent.shutdown().await;
    drop(control_plane);
}
