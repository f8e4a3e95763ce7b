//! ADR030 on the real control plane: every product's PodDisruptionBudgets, as the real
//! disruption controller of kube-controller-manager counts them. With every pod Ready,
//! `status.disruptionsAllowed` is the budget's `maxUnavailable`, so one table shows each
//! product's default (and a user's own value, and a budget switched off) the way
//! `kubectl drain` will meet it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod real;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, ListParams, PatchParams};
use serde_json::{Value, json};
use strata_testing::control_plane::RunningOperator;
use xtask::operators::registered;

/// A cluster of one example, changed at some JSON pointers.
struct Cluster {
    example: &'static str,
    name: &'static str,
    changes: &'static [(&'static str, &'static str)],
}

const CLUSTERS: &[Cluster] = &[
    Cluster {
        example: "examples/zookeeper/simple-cluster.yaml",
        name: "zk",
        changes: &[("/spec/servers/roleGroups/default/replicas", "5")],
    },
    Cluster {
        example: "examples/hdfs/simple-hdfs.yaml",
        name: "hdfs",
        changes: &[
            ("/spec/clusterConfig/dfsReplication", "5"),
            ("/spec/dataNodes/roleGroups/default/replicas", "10"),
        ],
    },
    Cluster {
        example: "examples/trino/simple-trino.yaml",
        name: "trino",
        changes: &[("/spec/workers/roleGroups/default/replicas", "20")],
    },
    Cluster {
        example: "examples/trino/simple-trino.yaml",
        name: "trino-own-budget",
        changes: &[
            ("/spec/workers/roleGroups/default/replicas", "10"),
            (
                "/spec/workers/roleConfig",
                r#"{"podDisruptionBudget": {"maxUnavailable": 4}}"#,
            ),
            (
                "/spec/coordinators/roleConfig",
                r#"{"podDisruptionBudget": {"enabled": false}}"#,
            ),
        ],
    },
    Cluster {
        example: "examples/superset/simple-superset.yaml",
        name: "superset",
        changes: &[("/spec/nodes/roleGroups/default/replicas", "3")],
    },
];

/// Each budget the clusters above get: its name, the pods it covers, and the
/// disruptions it allows with all of them Ready.
const BUDGETS: &[(&str, i32, i32)] = &[
    // ZooKeeper servers: one at a time, whatever the ensemble's size.
    ("zk-server", 5, 1),
    // HDFS namenodes and journalnodes: one at a time.
    ("hdfs-namenode", 2, 1),
    ("hdfs-journalnode", 3, 1),
    // HDFS datanodes: max(min(dfsReplication - 2, datanodes - 2), 1) = min(3, 8).
    ("hdfs-datanode", 10, 3),
    // Trino: one coordinator at a time, a tenth of the workers.
    ("trino-coordinator", 1, 1),
    ("trino-worker", 20, 2),
    // A user's own maxUnavailable; the coordinators' budget switched off is absent.
    ("trino-own-budget-worker", 10, 4),
    // Superset web servers: one at a time.
    ("superset-node", 3, 1),
];

/// Applies `document` as the test's field manager.
async fn apply(client: &kube::Client, document: &Value) {
    real::apply(
        client,
        document,
        &PatchParams::apply("strata-pdb-check").force(),
    )
    .await
    .unwrap_or_else(|error| panic!("{} is applied: {error}", document["metadata"]["name"]));
}

/// Every budget in the namespace: name → (expected pods, disruptions allowed).
async fn budgets(client: &kube::Client) -> BTreeMap<String, (i32, i32)> {
    Api::<PodDisruptionBudget>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .map(|list| list.items)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|pdb| {
            let status = pdb.status?;
            Some((
                pdb.metadata.name?,
                (status.expected_pods?, status.disruptions_allowed?),
            ))
        })
        .collect()
}

#[tokio::test]
#[ignore = "needs the control plane (STRATA_CONTROL_PLANE_BIN); run by cargo xtask test"]
async fn every_products_budget_allows_its_default_disruptions_on_the_real_disruption_controller() {
    let (_control_plane, client) = real::with_every_crd().await;
    let _operators = [
        RunningOperator::start(
            client.clone(),
            zookeeper_operator::OPERATOR_NAME,
            |runtime| {
                let options = zookeeper_operator::controller::RunOptions::for_runtime(&runtime);
                zookeeper_operator::controller::run(runtime, options)
            },
        ),
        RunningOperator::start(
            client.clone(),
            hdfs_operator::OPERATOR_NAME,
            hdfs_operator::controller::run,
        ),
        RunningOperator::start(
            client.clone(),
            trino_operator::OPERATOR_NAME,
            trino_operator::controller::run,
        ),
        RunningOperator::start(
            client.clone(),
            superset_operator::OPERATOR_NAME,
            superset_operator::controller::run,
        ),
    ];

    for prerequisite in registered()
        .iter()
        .filter_map(|operator| operator.sandbox_prerequisite)
    {
        for document in real::documents(prerequisite) {
            apply(&client, &document).await;
        }
    }
    for cluster in CLUSTERS {
        let mut document = real::documents(cluster.example).remove(0);
        document["metadata"]["name"] = json!(cluster.name);
        for (pointer, value) in cluster.changes {
            let (parent, key) = pointer.rsplit_once('/').expect("a pointer");
            let value: Value = serde_json::from_str(value).expect("JSON");
            document
                .pointer_mut(parent)
                .and_then(Value::as_object_mut)
                .unwrap_or_else(|| panic!("{}: {parent} is an object", cluster.name))
                .insert(key.to_owned(), value);
        }
        apply(&client, &document).await;
    }

    let expected: BTreeMap<String, (i32, i32)> = BUDGETS
        .iter()
        .map(|(name, pods, allowed)| ((*name).to_owned(), (*pods, *allowed)))
        .collect();
    // The disruption controller counts a budget's pods once they are Ready; the
    // table holds when every budget has settled, and a budget that never does shows
    // in the comparison.
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut found = budgets(&client).await;
    while found != expected && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(500)).await;
        found = budgets(&client).await;
    }
    pretty_assertions::assert_eq!(found, expected, "name → (expectedPods, disruptionsAllowed)");
}
