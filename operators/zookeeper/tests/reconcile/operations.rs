//! `spec.clusterOperation` and the `operator-command` annotation: pausing freezes the
//! children but keeps the status current; stopping scales to zero and deletes nothing.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, Patch, PatchParams};
use pretty_assertions::assert_eq;
use rstest::rstest;
use serde_json::{Value, json};
use strata_status::{ConditionStatus, ConditionType};
use strata_test_apiserver::Verb;
use strata_testing::workloads::run_until_settled;
use zookeeper_operator::crd::ZookeeperCluster;

use crate::support::conditions::{pause, wait_for_condition, wait_for_reason};
use crate::support::inspect::{expected_server_lines, properties, server_lines, zoo_cfg};
use crate::support::started;
use crate::support::workload::{create_claims, run_group, stored_claims};
use crate::support::{
    ExpectedObjects, Harness, cluster, create, patch_spec, single_group_spec, start, stored,
    stored_objects, two_group_spec, wait_for, wait_for_objects,
};

const STS: &str = "zk-server-default";

fn replicas(sts: &StatefulSet) -> Option<i32> {
    sts.spec.replicas
}

async fn annotate(harness: &Harness, name: &str, annotations: Value) {
    Api::<ZookeeperCluster>::namespaced(harness.server.client(), harness.namespace)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": annotations}})),
        )
        .await
        .expect("the cluster is annotated");
}

#[tokio::test]
async fn a_paused_cluster_keeps_its_children_but_its_status_moves_on() {
    let harness = started(single_group_spec(3), &["default"]).await;
    harness.settle().await;

    pause(&harness, "zk").await;

    // The status still follows the workloads while paused.
    run_group(&harness, STS, 3);
    wait_for_condition(
        &harness,
        "zk",
        ConditionType::Available,
        ConditionStatus::True,
    )
    .await;
    wait_for_reason(
        &harness,
        "zk",
        ConditionType::Upgradable,
        ConditionStatus::False,
        "ReconciliationPaused",
    )
    .await;
    harness.settle().await;

    // Drift and spec changes are left alone: no child is written or deleted.
    harness.server.reset_requests();
    harness
        .server
        .modify::<StatefulSet>(harness.namespace, STS, |sts| {
            sts.spec.replicas = Some(9);
        })
        .expect("drift");
    let before = harness.reconciles();
    patch_spec(
        &harness,
        "zk",
        json!({"servers": {
            "config": {"tickTime": 3000},
            "roleConfig": {"podDisruptionBudget": {"enabled": false}},
            "roleGroups": {"default": {"replicas": 5}}
        }}),
    )
    .await;
    assert!(
        harness.wait_for_reconcile_after(before).await,
        "the spec change triggered no reconcile"
    );
    harness.settle().await;
    assert_eq!(
        harness
            .server
            .writes_excluding(&["zookeeperclusters", "events"]),
        vec![],
        "a paused cluster's children are neither written nor deleted"
    );
    assert_eq!(replicas(&stored::<StatefulSet>(&harness, STS)), Some(9));
    assert_eq!(
        properties(&zoo_cfg(&harness, STS))["tickTime"],
        "2000",
        "the old config stays while paused"
    );
    assert!(
        harness
            .server
            .get_typed::<PodDisruptionBudget>(harness.namespace, "zk-server")
            .is_some(),
        "nothing is pruned while paused"
    );

    // Resuming applies everything that waited: the drift is undone at once, and the
    // ensemble grows to the spec's 5 servers one at a time as the pods come up.
    patch_spec(
        &harness,
        "zk",
        json!({"clusterOperation": {"reconciliationPaused": false}}),
    )
    .await;
    wait_for::<StatefulSet>(&harness, STS, "the drift undone", |sts| {
        replicas(sts) == Some(3)
    })
    .await;
    run_until_settled(&harness, || ()).await;
    assert_eq!(replicas(&stored::<StatefulSet>(&harness, STS)), Some(5));
    harness
        .server
        .wait_for_deletion::<PodDisruptionBudget>(
            harness.namespace,
            "zk-server",
            crate::support::TIMEOUT,
        )
        .await
        .expect("the disabled PDB is removed after resuming");
    assert_eq!(properties(&zoo_cfg(&harness, STS))["tickTime"], "3000");
    wait_for_condition(
        &harness,
        "zk",
        ConditionType::Paused,
        ConditionStatus::False,
    )
    .await;
}

/// How a test stops the cluster.
#[derive(Clone, Copy, Debug)]
enum Stop {
    Spec,
    Annotation,
}

#[rstest]
#[case::by_spec(Stop::Spec)]
#[case::by_operator_command_annotation(Stop::Annotation)]
#[tokio::test]
async fn a_stopped_cluster_scales_to_zero_and_deletes_nothing(#[case] stop: Stop) {
    let harness = start();
    create(&harness, &cluster("zk", two_group_spec())).await;
    let expected = ExpectedObjects::new("zk", &["primary", "secondary"]);
    wait_for_objects(&harness, &expected).await;
    let mut claims = create_claims(&harness, "zk-server-primary", 3);
    claims.extend(create_claims(&harness, "zk-server-secondary", 2));
    claims.sort();
    run_group(&harness, "zk-server-primary", 3);
    run_group(&harness, "zk-server-secondary", 2);
    wait_for_condition(
        &harness,
        "zk",
        ConditionType::Available,
        ConditionStatus::True,
    )
    .await;
    harness.settle().await;
    harness.server.reset_requests();

    match stop {
        Stop::Spec => {
            patch_spec(
                &harness,
                "zk",
                json!({"clusterOperation": {"stopped": true}}),
            )
            .await;
        }
        Stop::Annotation => annotate(&harness, "zk", json!({"operator-command": "Stopped"})).await,
    }
    for sts in ["zk-server-primary", "zk-server-secondary"] {
        let stopped = wait_for::<StatefulSet>(&harness, sts, "scaled to zero", |sts| {
            replicas(sts) == Some(0)
        })
        .await;
        let templates = stopped.spec.volume_claim_templates.unwrap_or_default();
        assert_eq!(
            templates
                .iter()
                .map(|template| template.metadata.name.clone().unwrap_or_default())
                .collect::<Vec<_>>(),
            vec!["data".to_owned()],
            "{sts} keeps its claim template"
        );
    }
    wait_for_condition(
        &harness,
        "zk",
        ConditionType::Stopped,
        ConditionStatus::True,
    )
    .await;
    wait_for_reason(
        &harness,
        "zk",
        ConditionType::Available,
        ConditionStatus::False,
        "ClusterStopped",
    )
    .await;
    harness.settle().await;

    assert_eq!(
        harness.server.count(Verb::Delete, "persistentvolumeclaims"),
        0
    );
    let deletes: Vec<_> = harness
        .server
        .requests()
        .into_iter()
        .filter(|request| matches!(request.verb, Verb::Delete | Verb::DeleteCollection))
        .collect();
    assert_eq!(deletes, vec![], "stopping deletes nothing");
    assert_eq!(stored_objects(&harness), expected.all());
    assert_eq!(stored_claims(&harness), claims, "every claim is kept");
    assert_eq!(
        server_lines(&zoo_cfg(&harness, "zk-server-primary")),
        expected_server_lines("zk", &[("primary", 3, 1), ("secondary", 2, 10)]),
        "zoo.cfg keeps every server, so starting again restores the ensemble"
    );

    // Starting again restores the replicas.
    match stop {
        Stop::Spec => {
            patch_spec(
                &harness,
                "zk",
                json!({"clusterOperation": {"stopped": false}}),
            )
            .await;
        }
        Stop::Annotation => annotate(&harness, "zk", json!({"operator-command": null})).await,
    }
    for (sts, count) in [("zk-server-primary", 3), ("zk-server-secondary", 2)] {
        wait_for::<StatefulSet>(&harness, sts, "scaled up again", |sts| {
            replicas(sts) == Some(count)
        })
        .await;
    }
    wait_for_condition(
        &harness,
        "zk",
        ConditionType::Stopped,
        ConditionStatus::False,
    )
    .await;
}
