//! The pod runner on the real kernel, with pods written the way the operators render
//! them: init containers, an emptyDir, ConfigMap and Secret volumes, env from the
//! downward API and a Secret, probes, restarts with their termination message, Service
//! names, and stop by deletion. The image is the host's own tools (a manifest with no
//! paths of its own). Needs root; `cargo xtask test` runs it.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use serde_json::json;
use strata_pod_runner::runner::PodRunner;
use strata_pod_runner::status::{PodStatus, State};
use support::{IMAGE, host_tools_runner, short_backoff};

fn runner(image_dir: &std::path::Path) -> PodRunner {
    host_tools_runner(image_dir, short_backoff(200))
}

fn web_pod() -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": "web-0", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "hostname": "web-0",
            "subdomain": "web",
            "securityContext": {"runAsUser": 1000, "runAsGroup": 100, "fsGroup": 100},
            "terminationGracePeriodSeconds": 5,
            "initContainers": [{
                "name": "prepare",
                "image": IMAGE,
                "command": ["sh", "-c", "echo \"$GREETING from $POD_NAME with $(cat /secret/password | wc -c) secret bytes\" > /site/index.html"],
                "env": [
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "GREETING", "valueFrom": {"configMapKeyRef": {"name": "web", "key": "greeting"}}}
                ],
                "volumeMounts": [{"name": "site", "mountPath": "/site"}, {"name": "secret", "mountPath": "/secret", "readOnly": true}]
            }],
            "containers": [{
                "name": "server",
                "image": IMAGE,
                "command": ["python3", "-m", "http.server", "8080", "--directory", "/site"],
                "ports": [{"name": "http", "containerPort": 8080}],
                "readinessProbe": {"httpGet": {"path": "/index.html", "port": "http"}, "periodSeconds": 1},
                "livenessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1, "failureThreshold": 30},
                "securityContext": {"readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false},
                "volumeMounts": [{"name": "site", "mountPath": "/site", "readOnly": true}]
            }, {
                "name": "flaky",
                "image": IMAGE,
                "command": ["sh", "-c", "echo started; if [ -e /state/once ]; then exec sleep 600; fi; touch /state/once; echo OutOfLuck > /dev/termination-log; exit 7"],
                "volumeMounts": [{"name": "state", "mountPath": "/state"}]
            }],
            "volumes": [
                {"name": "site", "emptyDir": {}},
                {"name": "state", "persistentVolumeClaim": {"claimName": "state-web-0"}},
                {"name": "secret", "secret": {"secretName": "web", "defaultMode": 288}}
            ]
        }
    }))
    .unwrap()
}

async fn wait_for(
    runner: &PodRunner,
    pod: &str,
    what: &str,
    test: impl Fn(&PodStatus) -> bool,
) -> PodStatus {
    for _ in 0..300 {
        if let Some(status) = runner.status("default", pod).filter(|status| test(status)) {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = |container: &str| {
        runner
            .log("default", pod, container, 0)
            .and_then(|path| std::fs::read_to_string(path).ok())
    };
    panic!(
        "pod {pod} never got {what}: {:#?}\nserver log: {:?}\nprepare log: {:?}",
        runner.status("default", pod),
        log("server"),
        log("prepare")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root; run by cargo xtask test"]
async fn a_rendered_pod_runs_turns_ready_restarts_a_failed_container_dies_on_kill_and_is_gone_on_delete()
 {
    let image_dir = tempfile::tempdir().unwrap();
    let mut runner = runner(image_dir.path());
    let config_map: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "web"}, "data": {"greeting": "hello"}}))
            .unwrap();
    let secret: Secret = serde_json::from_value(
        json!({"metadata": {"name": "web"}, "stringData": {"password": "s3cret"}}),
    )
    .unwrap();
    let service: Service = serde_json::from_value(json!({"metadata": {"name": "web-public"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 8080}]}})).unwrap();
    runner.apply_config_map(config_map).unwrap();
    runner.apply_secret(secret).unwrap();
    runner.apply_service(service).unwrap();

    runner.run(web_pod()).unwrap();
    let ready = wait_for(&runner, "web-0", "Ready", |status| {
        status.ready() || status.containers[1].restart_count > 0 && status.containers[0].ready
    })
    .await;
    assert_eq!(ready.phase, "Running");

    start_client(&mut runner).await;
    for url in [
        "http://web-public:8080/index.html",
        "http://web-0.web.default.svc.cluster.local:8080/index.html",
    ] {
        let fetched = curl(&runner, url, 5).await;
        assert_eq!(
            fetched,
            Some((0, "hello from web-0 with 6 secret bytes\n".to_owned())),
            "{url}"
        );
    }
    let outside = curl(&runner, "http://10.255.255.53:80/", 5).await;
    assert_ne!(
        outside.map(|(code, _)| code),
        Some(0),
        "a pod reached an address outside the pod network"
    );

    let restarted = wait_for(&runner, "web-0", "a restarted flaky container", |status| {
        status.containers[1].restart_count == 1
            && matches!(status.containers[1].state, State::Running(_))
    })
    .await;
    let last = restarted.containers[1]
        .last_state
        .clone()
        .expect("the first run's end");
    assert_eq!(
        (
            last.exit_code,
            last.reason.as_str(),
            last.message.as_deref()
        ),
        (7, "Error", Some("OutOfLuck\n"))
    );
    let kept = runner.claims().join("default/state-web-0/once");
    assert!(
        kept.exists(),
        "the persistent volume keeps the first run's file"
    );

    runner.kill("default", "web-0").unwrap();
    let killed = curl(&runner, "http://web-public:8080/", 2).await;
    assert_ne!(
        killed.map(|(code, _)| code),
        Some(0),
        "a killed pod still served"
    );
    assert!(!runner.status("default", "web-0").unwrap().ready());

    runner.delete("default", "web-0").await.unwrap();
    assert!(runner.status("default", "web-0").is_none());
    assert!(kept.exists(), "deleting a pod keeps its persistent volume");
    let gone = curl(&runner, "http://web-public:8080/", 2).await;
    assert_ne!(gone.map(|(code, _)| code), Some(0));
    runner.shutdown().await;
}

/// `curl` from the client pod: its exit code and output, `None` on timeout.
async fn curl(runner: &PodRunner, url: &str, max_seconds: u8) -> Option<(i32, String)> {
    let max_time = max_seconds.to_string();
    runner
        .exec(
            "default",
            "client",
            "main",
            &["curl", "-sS", "--max-time", &max_time, url],
            Duration::from_secs(10),
        )
        .await
        .unwrap()
}

/// A pod answering with the address its client connects from.
fn echo_pod() -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": "echo-0", "namespace": "default", "labels": {"app": "echo"}},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "server",
                "image": IMAGE,
                "command": ["python3", "-c", "import http.server as h\nclass E(h.BaseHTTPRequestHandler):\n    def do_GET(self):\n        self.send_response(200); self.end_headers(); self.wfile.write(self.client_address[0].encode())\nh.HTTPServer(('', 8080), E).serve_forever()"],
                "ports": [{"name": "http", "containerPort": 8080}],
                "readinessProbe": {"tcpSocket": {"port": "http"}, "periodSeconds": 1}
            }]
        }
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and nftables; run by cargo xtask test"]
async fn a_service_with_a_cluster_ip_resolves_while_its_pod_is_gone_and_leads_to_it_wherever_it_runs()
 {
    let image_dir = tempfile::tempdir().unwrap();
    let mut runner = runner(image_dir.path());
    let service: Service = serde_json::from_value(json!({
        "metadata": {"name": "echo"},
        "spec": {
            "clusterIP": "10.96.7.7",
            "selector": {"app": "echo"},
            "ports": [{"port": 80, "targetPort": "http"}]
        }
    }))
    .unwrap();
    runner.apply_service(service).unwrap();
    start_client(&mut runner).await;
    let client_address = runner.address("default", "client").unwrap().to_string();

    assert_eq!(
        resolve(&runner).await.as_deref(),
        Some("10.96.7.7"),
        "before its pod runs"
    );
    let refused = curl(&runner, "http://echo/", 5).await;
    assert_eq!(
        refused.map(|(code, _)| code),
        Some(7),
        "a Service without a pod refuses at once (curl: couldn't connect)"
    );

    for run in 0..2 {
        runner.run(echo_pod()).unwrap();
        wait_for(&runner, "echo-0", "Ready", PodStatus::ready).await;
        let pod_address = runner.address("default", "echo-0").unwrap();
        assert_eq!(
            curl(&runner, "http://echo/", 5).await,
            Some((0, client_address.clone())),
            "run {run} (pod address {pod_address}): the pod answers, and sees the client's own address"
        );
        runner.delete("default", "echo-0").await.unwrap();
        assert_eq!(
            resolve(&runner).await.as_deref(),
            Some("10.96.7.7"),
            "run {run}: the name resolves while the pod is gone"
        );
    }
    runner.shutdown().await;
}

/// What `echo.default.svc.cluster.local` resolves to in the client pod.
async fn resolve(runner: &PodRunner) -> Option<String> {
    runner
        .exec(
            "default",
            "client",
            "main",
            &["getent", "hosts", "echo.default.svc.cluster.local"],
            Duration::from_secs(10),
        )
        .await
        .unwrap()
        .map(|(_, output)| {
            output
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned()
        })
}

/// Starts the pod `client` (the host's tools, `sleep`) and waits until it is Ready.
async fn start_client(runner: &mut PodRunner) {
    let client: Pod = serde_json::from_value(json!({
        "metadata": {"name": "client"},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "main", "image": IMAGE, "command": ["sleep", "600"]}]
        }
    }))
    .unwrap();
    runner.run(client).unwrap();
    wait_for(runner, "client", "Ready", PodStatus::ready).await;
}
