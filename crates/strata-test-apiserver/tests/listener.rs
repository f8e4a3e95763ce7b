//! The in-memory API over real HTTP: a kube client built from a kubeconfig, as
//! an operator process would build it, reads, writes and watches through the
//! listener.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::net::SocketAddr;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::{WatchStreamExt, watcher};
use strata_test_apiserver::{ListenError, TestApiServer, Verb};

fn config_map(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

async fn client_of(kubeconfig: &str) -> kube::Client {
    let kubeconfig = Kubeconfig::from_yaml(kubeconfig).expect("a valid kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("a client config");
    kube::Client::try_from(config).expect("a client")
}

fn loopback_any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

#[tokio::test]
async fn a_client_from_a_kubeconfig_writes_reads_and_watches_over_http() {
    let server = TestApiServer::new();
    let listener = server.listen(loopback_any_port()).await.expect("listening");
    let client = client_of(&listener.kubeconfig("operator", "operator-token", "team-a")).await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);

    api.create(&PostParams::default(), &config_map("first"))
        .await
        .expect("create over HTTP");
    assert!(server.object("configmaps", "team-a", "first").is_some());
    let listed = api.list(&Default::default()).await.expect("list over HTTP");
    assert_eq!(listed.items.len(), 1);

    let mut names = watcher(api.clone(), watcher::Config::default())
        .applied_objects()
        .map_ok(|object| object.metadata.name.unwrap_or_default())
        .boxed();
    assert_eq!(
        names.try_next().await.expect("watch").as_deref(),
        Some("first")
    );
    api.create(&PostParams::default(), &config_map("second"))
        .await
        .expect("create");
    let next = tokio::time::timeout(Duration::from_secs(10), names.try_next())
        .await
        .expect("the watch streams the new object within 10 s")
        .expect("watch");
    assert_eq!(next.as_deref(), Some("second"));

    let requests = server.requests();
    assert!(
        requests
            .iter()
            .all(|request| request.user.as_deref() == Some("operator-token")),
        "every request carries the bearer token as its user: {requests:#?}"
    );
    assert!(
        requests.iter().any(|request| request.verb == Verb::Watch),
        "the watcher used a watch: {requests:#?}"
    );
}

#[tokio::test]
async fn only_loopback_addresses_are_served() {
    let server = TestApiServer::new();
    let error = server
        .listen("0.0.0.0:0".parse().unwrap())
        .await
        .expect_err("not loopback");
    assert!(matches!(error, ListenError::NotLoopback(_)), "{error}");
}

#[tokio::test]
async fn a_port_in_use_is_named_with_a_way_out() {
    let server = TestApiServer::new();
    let first = server.listen(loopback_any_port()).await.expect("listening");
    let error = server
        .listen(first.address)
        .await
        .expect_err("the port is taken");
    let message = error.to_string();
    assert!(
        message.contains(&first.address.to_string()) && message.contains("another port"),
        "{message}"
    );
}

#[tokio::test]
async fn dropping_the_listener_stops_serving() {
    let server = TestApiServer::new();
    let listener = server.listen(loopback_any_port()).await.expect("listening");
    let address = listener.address;
    drop(listener);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while tokio::net::TcpStream::connect(address).await.is_ok() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "still serving after drop"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs a provisioned tool (`STRATA_KUBECTL`, `STRATA_HELM`) against `kubeconfig`
/// with `envs` and `stdin`; returns its stdout, or panics with its output.
fn run_tool(
    variable: &str,
    kubeconfig: &std::path::Path,
    args: &[&str],
    envs: &[(&str, std::path::PathBuf)],
    stdin: Option<&str>,
) -> String {
    use std::io::Write as _;
    let mut child = std::process::Command::new(strata_testing::tools::tool(variable))
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .envs(envs.iter().map(|(name, value)| (*name, value)))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("{variable} starts: {error}"));
    if let Some(text) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(text.as_bytes())
            .expect("write stdin");
    } else {
        drop(child.stdin.take());
    }
    let output = child.wait_with_output().expect("the tool ends");
    assert!(
        output.status.success(),
        "{variable} {args:?} failed ({}): {}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Runs the real `kubectl` (from `cargo xtask tools`) against `kubeconfig`.
fn kubectl(kubeconfig: &std::path::Path, args: &[&str], stdin: Option<&str>) -> String {
    run_tool(strata_testing::tools::KUBECTL, kubeconfig, args, &[], stdin)
}

/// Writes a kubeconfig for `listener` into `dir`, as `user`.
fn kubeconfig_file(
    listener: &strata_test_apiserver::Listener,
    dir: &std::path::Path,
    user: &str,
) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        listener.kubeconfig(user, &format!("{user}-token"), "default"),
    )
    .expect("kubeconfig");
    path
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs kubectl (STRATA_KUBECTL); run by cargo xtask test"]
async fn the_real_kubectl_discovers_reads_and_applies_through_the_listener() {
    let server = TestApiServer::new();
    let mut existing = config_map("seen-by-kubectl");
    existing.metadata.namespace = Some("default".to_owned());
    server.upsert(&existing).expect("store");
    let listener = server.listen(loopback_any_port()).await.expect("listening");
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = kubeconfig_file(&listener, dir.path(), "user");

    let resources = tokio::task::spawn_blocking({
        let kubeconfig = kubeconfig.clone();
        move || kubectl(&kubeconfig, &["api-resources", "-o", "name"], None)
    })
    .await
    .expect("kubectl api-resources");
    for resource in [
        "configmaps",
        "statefulsets.apps",
        "leases.coordination.k8s.io",
    ] {
        assert!(
            resources.lines().any(|line| line == resource),
            "{resource} not discovered:\n{resources}"
        );
    }

    let listed = tokio::task::spawn_blocking({
        let kubeconfig = kubeconfig.clone();
        move || kubectl(&kubeconfig, &["get", "configmaps", "-o", "json"], None)
    })
    .await
    .expect("kubectl get");
    let listed: serde_json::Value = serde_json::from_str(&listed).expect("JSON");
    assert_eq!(listed["items"][0]["metadata"]["name"], "seen-by-kubectl");

    tokio::task::spawn_blocking(move || {
        kubectl(
            &kubeconfig,
            &["apply", "--server-side", "-f", "-"],
            Some("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied-by-kubectl\ndata:\n  key: value\n"),
        )
    })
    .await
    .expect("kubectl apply");
    let applied = server
        .get_typed::<ConfigMap>("default", "applied-by-kubectl")
        .expect("kubectl's server-side apply reached the store");
    assert_eq!(applied.data.expect("data")["key"], "value");
}

/// What the kubectl tests below share: `server` listening on loopback, a kubeconfig
/// for it, and the real kubectl's `apply` of the ZooKeeper CRD (waited for until
/// Established) and of the ZooKeeper example.
struct KubectlSession {
    _listener: strata_test_apiserver::Listener,
    _dir: tempfile::TempDir,
    kubeconfig: std::path::PathBuf,
}

async fn zookeeper_example_applied(server: &TestApiServer) -> KubectlSession {
    let listener = server.listen(loopback_any_port()).await.expect("listening");
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = kubeconfig_file(&listener, dir.path(), "user");
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let crd = workspace.join("crds/zookeeperclusters.zookeeper.strata.dev.yaml");
    let example = workspace.join("examples/zookeeper/simple-cluster.yaml");
    let session_kubeconfig = kubeconfig.clone();
    tokio::task::spawn_blocking(move || {
        let file = |path: &std::path::Path| path.to_string_lossy().into_owned();
        kubectl(&kubeconfig, &["apply", "--server-side", "-f", &file(&crd)], None);
        kubectl(
            &kubeconfig,
            &[
                "wait",
                "--for=condition=Established",
                "--timeout=10s",
                "customresourcedefinitions.apiextensions.k8s.io/zookeeperclusters.zookeeper.strata.dev",
            ],
            None,
        );
        kubectl(&kubeconfig, &["apply", "--server-side", "-f", &file(&example)], None);
    })
    .await
    .expect("kubectl apply");
    KubectlSession {
        _listener: listener,
        _dir: dir,
        kubeconfig: session_kubeconfig,
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs kubectl (STRATA_KUBECTL); run by cargo xtask test"]
async fn a_crd_applied_with_kubectl_makes_its_kind_servable_at_once() {
    let server = TestApiServer::new();
    let session = zookeeper_example_applied(&server).await;
    let listed = tokio::task::spawn_blocking(move || {
        kubectl(
            &session.kubeconfig,
            &["get", "zookeeperclusters", "-o", "json"],
            None,
        )
    })
    .await
    .expect("kubectl");
    let listed: serde_json::Value = serde_json::from_str(&listed).expect("JSON");
    assert_eq!(listed["items"][0]["metadata"]["name"], "simple-zk");
    assert_eq!(listed["items"][0]["kind"], "ZookeeperCluster");
}

/// `kubectl get` of a custom resource, by its short name, prints the CRD's printer
/// columns, evaluated on the object's status, as with a real API server.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs kubectl (STRATA_KUBECTL); run by cargo xtask test"]
async fn kubectl_get_prints_the_crds_printer_columns() {
    let server = TestApiServer::new();
    let session = zookeeper_example_applied(&server).await;
    server
        .patch_status_direct::<zookeeper_kind::ZookeeperCluster>(
            "default",
            "simple-zk",
            serde_json::json!({
                "conditions": [
                    {"type": "Available", "status": "True", "reason": "AsExpected",
                     "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                    {"type": "Degraded", "status": "False", "reason": "AsExpected",
                     "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}
                ],
                "deployedProductVersion": "3.9.4"
            }),
        )
        .expect("the status is written");
    let printed = tokio::task::spawn_blocking(move || {
        // `zk` is the CRD's short name, which kubectl learns from discovery.
        kubectl(&session.kubeconfig, &["get", "zk"], None)
    })
    .await
    .expect("kubectl get");
    let lines: Vec<Vec<&str>> = printed
        .lines()
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines[0][..4],
        ["NAME", "AVAILABLE", "DEGRADED", "VERSION"],
        "{printed}"
    );
    assert_eq!(
        lines[1][..4],
        ["simple-zk", "True", "False", "3.9.4"],
        "{printed}"
    );
}

/// An Event published through `events.k8s.io/v1`, as the operators do, is what
/// `kubectl describe` lists through core `v1` Events, as with a real API server.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs kubectl (STRATA_KUBECTL); run by cargo xtask test"]
async fn kubectl_describe_lists_the_events_the_operators_publish() {
    use k8s_openapi::api::events::v1::Event;
    let server = TestApiServer::new();
    let listener = server.listen(loopback_any_port()).await.expect("listening");
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = kubeconfig_file(&listener, dir.path(), "user");
    let client = client_of(&listener.kubeconfig("user", "user", "default")).await;
    let config_map = Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &config_map("settings"))
        .await
        .expect("the ConfigMap is created");
    let event: Event = serde_json::from_value(serde_json::json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "settings.1", "namespace": "default"},
        "eventTime": "2026-11-25T10:00:00.000000Z",
        "reportingController": "test-operator", "reportingInstance": "test-operator-0",
        "action": "StatusChange", "reason": "SecretMissing", "type": "Warning",
        "note": "the Secret default/db does not exist",
        "regarding": {"apiVersion": "v1", "kind": "ConfigMap", "name": "settings",
                      "namespace": "default", "uid": config_map.metadata.uid}
    }))
    .expect("the Event deserialises");
    Api::<Event>::namespaced(client, "default")
        .create(&PostParams::default(), &event)
        .await
        .expect("the Event is created");
    let described = tokio::task::spawn_blocking(move || {
        kubectl(&kubeconfig, &["describe", "configmap", "settings"], None)
    })
    .await
    .expect("kubectl describe");
    let events = described
        .split_once("Events:")
        .map(|(_, events)| events)
        .unwrap_or_default();
    assert!(
        events.contains("Warning")
            && events.contains("SecretMissing")
            && events.contains("test-operator")
            && events.contains("the Secret default/db does not exist"),
        "{described}"
    );
}

/// The kind of the ZooKeeper CRD, for typed direct writes in these tests only.
mod zookeeper_kind {
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// Stand-in spec: the tests write only the status.
    #[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
    #[kube(
        group = "zookeeper.strata.dev",
        version = "v1alpha1",
        kind = "ZookeeperCluster",
        namespaced
    )]
    pub struct ZookeeperClusterSpec {}
}

/// Runs the real `helm` (from `cargo xtask tools`) against `kubeconfig`, with its
/// caches and configuration under `home`.
fn helm(kubeconfig: &std::path::Path, home: &std::path::Path, args: &[&str]) -> String {
    let envs = [
        ("HELM_CACHE_HOME", home.join("cache")),
        ("HELM_CONFIG_HOME", home.join("config")),
        ("HELM_DATA_HOME", home.join("data")),
    ];
    run_tool(strata_testing::tools::HELM, kubeconfig, args, &envs, None)
}

/// `helm install` of the real operator chart, with no flag turned off: Helm
/// installs the CRDs from the chart's `crds/` (their kinds become servable),
/// applies the templates, and stores its release as a protobuf Secret, which
/// `helm list` reads back.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs helm (STRATA_HELM); run by cargo xtask test"]
async fn the_real_helm_installs_the_operator_chart_through_the_listener() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Secret;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

    let server = TestApiServer::new();
    let listener = server.listen(loopback_any_port()).await.expect("listening");
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = kubeconfig_file(&listener, dir.path(), "admin");
    let chart = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../helm/zookeeper-operator")
        .to_string_lossy()
        .into_owned();
    let home = dir.path().to_owned();
    let listed = tokio::task::spawn_blocking(move || {
        helm(
            &kubeconfig,
            &home,
            &[
                "install",
                "zookeeper-operator",
                &chart,
                "--namespace",
                "strata-operators",
                "--create-namespace",
            ],
        );
        helm(
            &kubeconfig,
            &home,
            &[
                "list",
                "--namespace",
                "strata-operators",
                "--output",
                "json",
            ],
        )
    })
    .await
    .expect("helm");

    let releases: serde_json::Value = serde_json::from_str(&listed).expect("JSON");
    assert_eq!(releases[0]["name"], "zookeeper-operator");
    assert_eq!(releases[0]["status"], "deployed");
    let crds: Vec<String> = server
        .list_typed::<CustomResourceDefinition>()
        .into_iter()
        .filter_map(|crd| crd.metadata.name)
        .collect();
    assert!(
        crds.contains(&"zookeeperclusters.zookeeper.strata.dev".to_owned()),
        "{crds:?}"
    );
    assert!(
        server
            .get_typed::<Deployment>("strata-operators", "zookeeper-operator")
            .is_some(),
        "the operator Deployment is applied"
    );
    let release = server
        .list_typed::<Secret>()
        .into_iter()
        .find(|secret| secret.type_.as_deref() == Some("helm.sh/release.v1"))
        .expect("Helm stored its release");
    assert_eq!(
        release.metadata.namespace.as_deref(),
        Some("strata-operators")
    );
}
