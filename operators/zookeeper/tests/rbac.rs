//! The Helm chart's RBAC rules against what the operator really does.
//!
//! The real operator runs against the in-memory API through a scenario that
//! exercises both controllers: create a cluster, change the config of its
//! running servers (one pod is restarted), scale it, disable its PDB
//! (a prune), create a ZNode whose ensemble is unreachable (it still reads
//! clusters, adds its finalizer, writes status and publishes Events), then
//! delete the cluster and the ZNode (the finalizer is released). Every request
//! it made, as RBAC sees it (group, resource[/subresource], verb), must be
//! granted; and the rules must grant nothing the registration does not
//! declare.
//!
//! The requests are checked against `rbac::rules(&registration())`; that the
//! chart, as the real Helm renders it, grants exactly those rules is one of the
//! shared operator checks (`strata_testing::checks`), which `cargo xtask test`
//! runs for every registered operator.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::PolicyRule;
use serde_json::{Value, json};
use strata_operator::rbac::{self, GroupResource, Verb};
use strata_test_apiserver::{RequestRecord, TestApiServer};
use strata_testing::Harness;
use strata_testing::wait::eventually;
use strata_testing::workloads::{run_group, set_stateful_set_status};
use zookeeper_operator::OPERATOR_NAME;
use zookeeper_operator::controller::ZNODE_CHECK_PERIOD;
use zookeeper_operator::controller::leader::FixedServerAddress;
use zookeeper_operator::controller::registration;
use zookeeper_operator::controller::znode::{EnsembleAddress, FINALIZER};
use zookeeper_operator::controller::{self, RunOptions};
use zookeeper_operator::crd::{ZookeeperCluster, ZookeeperZnode};

/// Points the ZNode controller at a closed loopback port: connecting fails fast.
struct Unreachable;

impl EnsembleAddress for Unreachable {
    fn hosts(&self, _cluster: &ZookeeperCluster, _port: u16) -> String {
        "127.0.0.1:1".to_owned()
    }
}

/// Permissions the registration grants although the scenario never sends a
/// request with exactly that verb, each with the reason it is still needed.
const GRANTED_BUT_NOT_SEEN: &[(&str, &str, Verb, &str)] = &[
    (
        "monitoring.coreos.com",
        "servicemonitors",
        Verb::Get,
        "the scenario's API serves no Prometheus Operator kinds; real_control_plane/monitoring.rs uses them on the real API server",
    ),
    (
        "monitoring.coreos.com",
        "servicemonitors",
        Verb::List,
        "the scenario's API serves no Prometheus Operator kinds; real_control_plane/monitoring.rs uses them on the real API server",
    ),
    (
        "monitoring.coreos.com",
        "servicemonitors",
        Verb::Watch,
        "the scenario's API serves no Prometheus Operator kinds; real_control_plane/monitoring.rs uses them on the real API server",
    ),
    (
        "monitoring.coreos.com",
        "servicemonitors",
        Verb::Create,
        "the scenario's API serves no Prometheus Operator kinds; real_control_plane/monitoring.rs uses them on the real API server",
    ),
    (
        "monitoring.coreos.com",
        "servicemonitors",
        Verb::Patch,
        "the scenario's API serves no Prometheus Operator kinds; real_control_plane/monitoring.rs uses them on the real API server",
    ),
    (
        "monitoring.coreos.com",
        "servicemonitors",
        Verb::Delete,
        "the scenario's API serves no Prometheus Operator kinds; real_control_plane/monitoring.rs uses them on the real API server",
    ),
    (
        "monitoring.coreos.com",
        "prometheusrules",
        Verb::Get,
        "the scenario's API serves no Prometheus Operator kinds; real_control_plane/monitoring.rs uses them on the real API server",
    ),
    (
        "monitoring.coreos.com",
        "prometheusrules",
        Verb::List,
        "the scenario's API serves no Prometheus Operator kinds; real_control_plane/monitoring.rs uses them on the real API server",
    ),
    (
        "monitoring.coreos.com",
        "prometheusrules",
        Verb::Watch,
        "the scenario's API serves no Prometheus Operator kinds; real_control_plane/monitoring.rs uses them on the real API server",
    ),
    (
        "monitoring.coreos.com",
        "prometheusrules",
        Verb::Create,
        "the scenario's API serves no Prometheus Operator kinds; real_control_plane/monitoring.rs uses them on the real API server",
    ),
    (
        "monitoring.coreos.com",
        "prometheusrules",
        Verb::Patch,
        "the scenario's API serves no Prometheus Operator kinds; real_control_plane/monitoring.rs uses them on the real API server",
    ),
    (
        "monitoring.coreos.com",
        "prometheusrules",
        Verb::Delete,
        "the scenario's API serves no Prometheus Operator kinds; real_control_plane/monitoring.rs uses them on the real API server",
    ),
    (
        "",
        "configmaps",
        Verb::Create,
        "server-side apply that creates needs create; the log records it as patch",
    ),
    ("", "services", Verb::Create, "as for configmaps"),
    ("apps", "statefulsets", Verb::Create, "as for configmaps"),
    (
        "policy",
        "poddisruptionbudgets",
        Verb::Create,
        "as for configmaps",
    ),
    (
        "",
        "secrets",
        Verb::Delete,
        "pruning a role group's certificate Secret once the group or TLS is gone",
    ),
    (
        "",
        "configmaps",
        Verb::Delete,
        "pruning a ConfigMap that is no longer desired, e.g. a removed role group",
    ),
    (
        "",
        "services",
        Verb::Delete,
        "pruning the Services of a removed role group",
    ),
    (
        "apps",
        "statefulsets",
        Verb::Delete,
        "pruning the StatefulSet of a removed role group",
    ),
];

fn cluster(spec: Value) -> ZookeeperCluster {
    serde_json::from_value(json!({
        "apiVersion": "zookeeper.strata.dev/v1alpha1",
        "kind": "ZookeeperCluster",
        "metadata": {"name": "zk", "namespace": "default"},
        "spec": spec,
    }))
    .expect("a valid ZookeeperCluster")
}

fn znode() -> ZookeeperZnode {
    serde_json::from_value(json!({
        "apiVersion": "zookeeper.strata.dev/v1alpha1",
        "kind": "ZookeeperZnode",
        "metadata": {"name": "app", "namespace": "default"},
        "spec": {"clusterRef": {"name": "zk"}},
    }))
    .expect("a valid ZookeeperZnode")
}

fn servers(replicas: i32, pdb_enabled: bool) -> Value {
    json!({"servers": {
        "roleConfig": {"podDisruptionBudget": {"enabled": pdb_enabled}},
        "roleGroups": {"default": {"replicas": replicas}},
    }})
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    eventually(what, || done().then_some(()), || ()).await;
}

/// Runs the scenario and returns every request the operator sent. The test
/// changes objects directly on the server, which is not logged.
async fn scenario() -> Vec<RequestRecord> {
    let server = TestApiServer::new();
    server.register::<ZookeeperCluster>();
    server.register::<ZookeeperZnode>();
    let options = RunOptions {
        cluster_domain: "cluster.local".to_owned(),
        ensemble_address: Arc::new(Unreachable),
        zookeeper_timeout: Duration::from_millis(200),
        znode_check_period: ZNODE_CHECK_PERIOD,
        server_address: Arc::new(FixedServerAddress("127.0.0.1:1".to_owned())),
    };
    let harness = Harness::start(server, OPERATOR_NAME, move |runtime| {
        controller::run(runtime, options)
    });
    let server = &harness.server;
    let pdb = |server: &TestApiServer| {
        server
            .get_typed::<PodDisruptionBudget>("default", "zk-server")
            .is_some()
    };

    server.upsert(&cluster(servers(3, true))).expect("create");
    wait_until("the PDB exists", || pdb(server)).await;

    // A config change on a running ensemble: the operator restarts one pod.
    let group = "zk-server-default";
    run_group(&harness, group, 3);
    let template = || {
        server
            .get_typed::<StatefulSet>("default", group)
            .map(|stateful_set| stateful_set.spec.template)
    };
    let before = template();
    let mut changed = servers(3, true);
    changed["servers"]["config"] = json!({"tickTime": 3000});
    server.upsert(&cluster(changed)).expect("change");
    wait_until("the template changes", || template() != before).await;
    set_stateful_set_status(&harness, group, 3, 3);
    wait_until("one pod is restarted", || {
        server
            .get_typed::<Pod>("default", "zk-server-default-2")
            .is_none()
    })
    .await;
    let mut scaled = servers(5, true);
    scaled["servers"]["config"] = json!({"tickTime": 3000});
    server.upsert(&cluster(scaled)).expect("scale");
    harness.settle().await;
    let mut disabled = servers(5, false);
    disabled["servers"]["config"] = json!({"tickTime": 3000});
    server.upsert(&cluster(disabled)).expect("disable");
    wait_until("the PDB is pruned", || !pdb(server)).await;

    server.upsert(&znode()).expect("create ZNode");
    wait_until("the ZNode has its finalizer and a status", || {
        server
            .get_typed::<ZookeeperZnode>("default", "app")
            .is_some_and(|znode| {
                znode.metadata.finalizers == Some(vec![FINALIZER.to_owned()])
                    && znode
                        .status
                        .is_some_and(|status| !status.resource.conditions.is_empty())
            })
    })
    .await;
    server
        .delete_direct::<ZookeeperCluster>("default", "zk")
        .expect("delete cluster");
    harness.settle().await;
    server
        .delete_direct::<ZookeeperZnode>("default", "app")
        .expect("delete ZNode");
    wait_until("the finalizer is released and the ZNode gone", || {
        server
            .get_typed::<ZookeeperZnode>("default", "app")
            .is_none()
    })
    .await;
    harness.settle().await;
    server.requests()
}

/// The RBAC view of one request: group, resource with subresource, verb.
fn permission(request: &RequestRecord) -> (GroupResource, String) {
    let resource = match &request.subresource {
        Some(sub) => format!("{}/{sub}", request.resource),
        None => request.resource.clone(),
    };
    (
        GroupResource::new(request.group.clone(), resource),
        request.verb.to_string(),
    )
}

fn used(requests: &[RequestRecord]) -> BTreeSet<(GroupResource, String)> {
    requests.iter().map(permission).collect()
}

fn assert_granted(rules: &[PolicyRule], used: &BTreeSet<(GroupResource, String)>, source: &str) {
    let denied: Vec<String> = used
        .iter()
        .filter(|(resource, verb)| !rbac::allows(rules, &resource.group, &resource.resource, verb))
        .map(|(resource, verb)| format!("{verb} {}.{}", resource.resource, resource.group))
        .collect();
    assert!(
        denied.is_empty(),
        "{source} does not grant: {denied:#?}\nrules: {rules:#?}"
    );
}

#[tokio::test]
async fn every_request_is_granted_and_every_grant_is_used_or_explained() {
    let used = used(&scenario().await);
    let rules = rbac::rules(&registration());
    assert_granted(&rules, &used, "rbac::rules(&registration())");

    for expected in [
        ("policy", "poddisruptionbudgets", "delete"),
        ("zookeeper.strata.dev", "zookeeperznodes", "patch"),
        ("zookeeper.strata.dev", "zookeeperznodes/status", "patch"),
        ("zookeeper.strata.dev", "zookeeperclusters/status", "patch"),
        ("events.k8s.io", "events", "create"),
        ("events.k8s.io", "events", "patch"),
    ] {
        let (group, resource, verb) = expected;
        assert!(
            used.contains(&(GroupResource::new(group, resource), verb.to_owned())),
            "the scenario never sent {verb} {resource}.{group}: {used:#?}"
        );
    }

    let explained: BTreeSet<(GroupResource, String)> = GRANTED_BUT_NOT_SEEN
        .iter()
        .map(|(group, resource, verb, _)| (GroupResource::new(*group, *resource), verb.to_string()))
        .collect();
    let stale: Vec<&(GroupResource, String)> = explained.intersection(&used).collect();
    assert!(
        stale.is_empty(),
        "explained as unused but sent by the scenario: {stale:#?}"
    );
    let unused: Vec<String> = rbac::permissions(&registration())
        .into_iter()
        .flat_map(|(resource, verbs)| verbs.into_iter().map(move |verb| (resource.clone(), verb)))
        .map(|(resource, verb)| (resource, verb.to_string()))
        .filter(|grant| !used.contains(grant) && !explained.contains(grant))
        .map(|(resource, verb)| format!("{verb} {}.{}", resource.resource, resource.group))
        .collect();
    assert!(
        unused.is_empty(),
        "granted but neither used by the scenario nor explained: {unused:#?}"
    );
}
