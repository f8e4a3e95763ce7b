//! The Helm chart's RBAC rules against what the operator really does.
//!
//! The real operator runs against the in-memory API through a scenario that
//! exercises both controllers: create a cluster, change it, disable its PDB
//! (a prune), create a ZNode whose ensemble is unreachable (it still reads
//! clusters, adds its finalizer, writes status and publishes Events), then
//! delete the cluster and the ZNode (the finalizer is released). Every request
//! it made, as RBAC sees it (group, resource[/subresource], verb), must be
//! granted; and the rules must grant nothing the registration does not
//! declare.
//!
//! One test checks the requests against `rbac::rules(&registration())`; the
//! other renders the generated chart with the real Helm (`STRATA_HELM`, run by
//! `cargo xtask test`) and checks the ClusterRole and the Role it produces.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::PolicyRule;
use serde_json::{Value, json};
use strata_operator::rbac::{self, GroupResource, Verb};
use strata_test_apiserver::{RequestRecord, TestApiServer};
use strata_testing::Harness;
use strata_testing::wait::eventually;
use zookeeper_operator::OPERATOR_NAME;
use zookeeper_operator::controller::ZNODE_CHECK_PERIOD;
use zookeeper_operator::controller::registration;
use zookeeper_operator::controller::znode::{EnsembleAddress, FINALIZER};
use zookeeper_operator::controller::{self, RunOptions};
use zookeeper_operator::crd::{ZookeeperCluster, ZookeeperZnode};

/// Points the ZNode controller at a closed loopback port: connecting fails fast.
struct Unreachable;

impl EnsembleAddress for Unreachable {
    fn hosts(&self, _cluster: &ZookeeperCluster) -> String {
        "127.0.0.1:1".to_owned()
    }
}

/// Permissions the registration grants although the scenario never sends a
/// request with exactly that verb, each with the reason it is still needed.
const GRANTED_BUT_NOT_SEEN: &[(&str, &str, Verb, &str)] = &[
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
    server.upsert(&cluster(servers(5, true))).expect("scale");
    harness.settle().await;
    server.upsert(&cluster(servers(5, false))).expect("disable");
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

/// Every (group, resource, verb) the rules grant, expanded; fails on wildcards.
fn expand(rules: &[PolicyRule]) -> BTreeMap<GroupResource, BTreeSet<Verb>> {
    let mut expanded: BTreeMap<GroupResource, BTreeSet<Verb>> = BTreeMap::new();
    for rule in rules {
        for group in rule.api_groups.iter().flatten() {
            for resource in rule.resources.iter().flatten() {
                for verb in &rule.verbs {
                    assert!(
                        ![group, resource, verb].contains(&&"*".to_owned()),
                        "wildcard in {rule:?}"
                    );
                    expanded
                        .entry(GroupResource::new(group.clone(), resource.clone()))
                        .or_default()
                        .insert(verb.parse().unwrap_or_else(|_| panic!("verb {verb}")));
                }
            }
        }
    }
    expanded
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

fn chart_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../helm/zookeeper-operator")
}

/// `helm template` of the generated chart with `--set` values, as parsed documents.
fn helm_template(set: &[&str]) -> Vec<Value> {
    let helm = std::env::var("STRATA_HELM")
        .ok()
        .filter(|helm| !helm.is_empty())
        .unwrap_or_else(|| {
            panic!(
                "STRATA_HELM is not set: this test needs Helm; run it through `cargo xtask test`, \
                 or export the variables printed by `cargo xtask tools`"
            )
        });
    let mut command = Command::new(helm);
    command
        .args(["template", "rbac-test"])
        .arg(chart_dir())
        .args(["--namespace", "operators"]);
    for value in set {
        command.args(["--set", value]);
    }
    let output = command.output().expect("helm starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "helm template failed: {}\n{stdout}{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    strata_operator::render::parse_documents(&stdout).expect("helm output is YAML")
}

/// Whether `document` is the leader-election Role, which every chart has in the
/// release namespace whatever `watchNamespace` says.
fn is_leader_election(document: &Value) -> bool {
    document["metadata"]["name"]
        .as_str()
        .is_some_and(|name| name.ends_with("-leader-election"))
}

/// The rules of every object of `kind` in `documents` but the leader-election
/// Role, with its namespace.
fn rules_of(documents: &[Value], kind: &str) -> Vec<(Option<String>, Vec<PolicyRule>)> {
    documents
        .iter()
        .filter(|document| document["kind"] == kind && !is_leader_election(document))
        .map(|document| {
            let namespace = document["metadata"]["namespace"]
                .as_str()
                .map(str::to_owned);
            let rules = serde_json::from_value(document["rules"].clone()).expect("PolicyRules");
            (namespace, rules)
        })
        .collect()
}

fn kinds(documents: &[Value]) -> BTreeSet<String> {
    documents
        .iter()
        .filter(|document| !is_leader_election(document))
        .filter_map(|document| document["kind"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
#[ignore = "needs helm; run by cargo xtask test"]
async fn the_rendered_chart_grants_every_request_and_nothing_beyond_the_registration() {
    let declared = rbac::permissions(&registration());
    let all_namespaces = helm_template(&[]);
    let one_namespace = helm_template(&["watchNamespace=default"]);

    let cluster_roles = rules_of(&all_namespaces, "ClusterRole");
    assert_eq!(cluster_roles.len(), 1, "one ClusterRole by default");
    assert!(
        !kinds(&all_namespaces).contains("Role"),
        "no Role by default"
    );
    let roles = rules_of(&one_namespace, "Role");
    assert_eq!(roles.len(), 1, "one Role with watchNamespace");
    assert_eq!(
        roles[0].0.as_deref(),
        Some("default"),
        "Role in the watched namespace"
    );
    let one_namespace_kinds = kinds(&one_namespace);
    assert!(
        !one_namespace_kinds.contains("ClusterRole")
            && !one_namespace_kinds.contains("ClusterRoleBinding"),
        "no cluster-wide grant with watchNamespace: {one_namespace_kinds:?}"
    );

    let used = used(&scenario().await);
    for (source, rules) in [
        ("the chart's ClusterRole", &cluster_roles[0].1),
        ("the chart's Role", &roles[0].1),
    ] {
        assert_eq!(
            expand(rules),
            declared,
            "{source} differs from rbac::permissions(&registration())"
        );
        assert_granted(rules, &used, source);
    }
    for documents in [&all_namespaces, &one_namespace] {
        let lease_roles: Vec<&Value> = documents
            .iter()
            .filter(|document| is_leader_election(document))
            .collect();
        let kinds: BTreeSet<&str> = lease_roles
            .iter()
            .filter_map(|document| document["kind"].as_str())
            .collect();
        assert_eq!(
            kinds,
            BTreeSet::from(["Role", "RoleBinding"]),
            "a leader-election Role and its binding"
        );
        for document in lease_roles {
            assert_eq!(
                document["metadata"]["namespace"], "operators",
                "the leader-election grant is in the release namespace"
            );
            if document["kind"] == "Role" {
                let rules: Vec<PolicyRule> =
                    serde_json::from_value(document["rules"].clone()).expect("PolicyRules");
                assert_eq!(
                    rules,
                    rbac::lease_rules(),
                    "the leader-election Role's rules"
                );
            }
        }
    }
}
