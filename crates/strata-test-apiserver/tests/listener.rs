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
