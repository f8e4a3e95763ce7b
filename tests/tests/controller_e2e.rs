//! A real kube-runtime `Controller`, built from the shared crates, reconciling
//! a small test resource against the in-memory API.
//!
//! This is the foundation's acceptance test: owner references and labels,
//! apply economy, drift repair, pruning that spares PVCs, status conditions
//! following the ADR027 cases, pause and stop. The test operator is in
//! `support/widget.rs`.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Service};
use kube::ResourceExt;
use strata_status::{ConditionStatus, ConditionType};
use strata_test_apiserver::Verb;
use strata_testing::wait::exists;
use strata_testing::workloads::{set_pod, set_stateful_set_status};
use support::TIMEOUT;
use support::wait::{edit_replicas, pod, wait_for_condition, wait_for_reason};
use support::widget::{OPERATOR, Widget, create, patch_spec, start, widget};

#[tokio::test]
async fn children_are_created_with_owner_references_and_labels() {
    let harness = start();
    let created = create(&harness, &widget("w", 3)).await;
    let sts = exists::<StatefulSet>(&harness, "w").await;
    exists::<ConfigMap>(&harness, "w-config").await;
    exists::<Service>(&harness, "w").await;

    let owner = &sts.owner_references()[0];
    assert_eq!(owner.uid, created.uid().expect("uid"));
    assert_eq!(owner.kind, "Widget");
    assert_eq!(owner.controller, Some(true));
    let labels = sts.labels();
    assert_eq!(labels["app.kubernetes.io/managed-by"], OPERATOR);
    assert_eq!(labels["app.kubernetes.io/instance"], "w");
    assert_eq!(labels["app.kubernetes.io/name"], "widget");
    assert_eq!(sts.spec.replicas, Some(3));
    let managers = harness
        .server
        .field_owners("statefulsets.apps", "default", "w");
    assert!(
        managers
            .get(".spec.replicas")
            .is_some_and(|owners| owners.iter().any(|m| m == OPERATOR)),
        "replicas must be owned by the operator's field manager: {managers:?}"
    );
}

#[tokio::test]
async fn a_reconcile_with_nothing_changed_writes_nothing_and_lists_nothing() {
    let harness = start();
    create(&harness, &widget("w", 1)).await;
    exists::<StatefulSet>(&harness, "w").await;
    harness.settle().await;

    harness.server.reset_requests();
    let before = harness.reconciles();
    harness
        .server
        .modify::<Widget>("default", "w", |widget| {
            widget
                .annotations_mut()
                .insert("touched".into(), "by-test".into());
        })
        .expect("touch");
    assert!(
        harness.wait_for_reconcile_after(before).await,
        "no reconcile happened"
    );
    harness.settle().await;

    assert!(harness.reconciles() > before);
    assert_eq!(
        harness.server.writes(),
        vec![],
        "steady state must not write"
    );
    assert_eq!(
        harness.server.lists(),
        vec![],
        "steady state must read from caches"
    );
    assert_eq!(harness.server.count(Verb::Get, "statefulsets"), 0);
}

#[tokio::test]
async fn an_edited_child_is_restored() {
    let harness = start();
    create(&harness, &widget("w", 3)).await;
    exists::<StatefulSet>(&harness, "w").await;
    harness.settle().await;

    edit_replicas(&harness, 7);
    harness
        .server
        .wait_for::<StatefulSet>("default", "w", |sts| sts.spec.replicas == Some(3), TIMEOUT)
        .await
        .expect("replicas restored");

    harness
        .server
        .modify::<ConfigMap>("default", "w-config", |cm| {
            cm.data = Some(BTreeMap::from([(
                "version".to_owned(),
                "edited".to_owned(),
            )]));
        })
        .expect("drift");
    harness
        .server
        .wait_for::<ConfigMap>(
            "default",
            "w-config",
            |cm| {
                cm.data
                    .as_ref()
                    .is_some_and(|data| data["version"] == "1.0.0")
            },
            TIMEOUT,
        )
        .await
        .expect("config restored");
}

#[tokio::test]
async fn children_no_longer_desired_are_pruned_but_never_pvcs() {
    let harness = start();
    let mut with_extra = widget("w", 1);
    with_extra.spec.extra = true;
    create(&harness, &with_extra).await;
    exists::<ConfigMap>(&harness, "w-extra").await;
    exists::<PersistentVolumeClaim>(&harness, "w-scratch").await;
    harness.settle().await;

    patch_spec(&harness, "w", serde_json::json!({"extra": false})).await;
    harness
        .server
        .wait_for_deletion::<ConfigMap>("default", "w-extra", TIMEOUT)
        .await
        .expect("extra ConfigMap pruned");
    harness.settle().await;

    assert!(
        harness
            .server
            .get_typed::<PersistentVolumeClaim>("default", "w-scratch")
            .is_some(),
        "a PVC must never be pruned"
    );
    assert_eq!(
        harness.server.count(Verb::Delete, "persistentvolumeclaims"),
        0
    );
    assert!(
        harness
            .server
            .get_typed::<StatefulSet>("default", "w")
            .is_some()
    );
}

#[tokio::test]
async fn conditions_follow_the_workload_and_its_pods() {
    let harness = start();
    create(&harness, &widget("w", 2)).await;
    exists::<StatefulSet>(&harness, "w").await;

    // No pods yet: replicas missing, nothing failed.
    set_stateful_set_status(&harness, "w", 0, 0);
    wait_for_condition(
        &harness,
        "w",
        ConditionType::Available,
        ConditionStatus::False,
    )
    .await;
    wait_for_condition(
        &harness,
        "w",
        ConditionType::Progressing,
        ConditionStatus::True,
    )
    .await;
    wait_for_condition(
        &harness,
        "w",
        ConditionType::Degraded,
        ConditionStatus::False,
    )
    .await;

    // All replicas available.
    set_pod(&harness, "w", 0, pod("Running", None));
    set_pod(&harness, "w", 1, pod("Running", None));
    set_stateful_set_status(&harness, "w", 2, 2);
    let reason = wait_for_condition(
        &harness,
        "w",
        ConditionType::Available,
        ConditionStatus::True,
    )
    .await;
    assert_eq!(reason, "AsExpected");
    wait_for_condition(
        &harness,
        "w",
        ConditionType::Progressing,
        ConditionStatus::False,
    )
    .await;
    wait_for_condition(
        &harness,
        "w",
        ConditionType::Degraded,
        ConditionStatus::False,
    )
    .await;
    wait_for_condition(
        &harness,
        "w",
        ConditionType::Upgradable,
        ConditionStatus::True,
    )
    .await;
    harness
        .server
        .wait_for::<Widget>(
            "default",
            "w",
            |w| {
                w.status
                    .as_ref()
                    .and_then(|s| s.deployed_product_version.as_deref())
                    == Some("1.0.0")
            },
            TIMEOUT,
        )
        .await
        .expect("deployed version reported once all pods run it");

    // One pod failed: Degraded, not Progressing.
    set_pod(&harness, "w", 1, pod("Failed", None));
    set_stateful_set_status(&harness, "w", 2, 1);
    wait_for_condition(
        &harness,
        "w",
        ConditionType::Degraded,
        ConditionStatus::True,
    )
    .await;
    wait_for_condition(
        &harness,
        "w",
        ConditionType::Progressing,
        ConditionStatus::False,
    )
    .await;
    wait_for_condition(
        &harness,
        "w",
        ConditionType::Available,
        ConditionStatus::False,
    )
    .await;

    // One pod in phase Unknown: Available is Unknown.
    set_pod(&harness, "w", 1, pod("Unknown", None));
    wait_for_condition(
        &harness,
        "w",
        ConditionType::Available,
        ConditionStatus::Unknown,
    )
    .await;

    // A crash-looping container in a Running pod counts as failing.
    set_pod(&harness, "w", 1, pod("Running", Some("CrashLoopBackOff")));
    wait_for_reason(
        &harness,
        "w",
        ConditionType::Degraded,
        ConditionStatus::True,
        "PodsFailing",
    )
    .await;

    // Recovery.
    set_pod(&harness, "w", 1, pod("Running", None));
    set_stateful_set_status(&harness, "w", 2, 2);
    wait_for_condition(
        &harness,
        "w",
        ConditionType::Available,
        ConditionStatus::True,
    )
    .await;
    wait_for_condition(
        &harness,
        "w",
        ConditionType::Degraded,
        ConditionStatus::False,
    )
    .await;
}

#[tokio::test]
async fn pause_stops_writes_to_children_and_stop_scales_to_zero() {
    let harness = start();
    let mut with_extra = widget("w", 3);
    with_extra.spec.extra = true;
    create(&harness, &with_extra).await;
    exists::<StatefulSet>(&harness, "w").await;
    harness.settle().await;

    patch_spec(
        &harness,
        "w",
        serde_json::json!({"clusterOperation": {"reconciliationPaused": true}}),
    )
    .await;
    wait_for_condition(&harness, "w", ConditionType::Paused, ConditionStatus::True).await;
    harness.settle().await;
    harness.server.reset_requests();

    // While paused, drift is left alone and nothing but status is written.
    edit_replicas(&harness, 9);
    let before = harness.reconciles();
    patch_spec(
        &harness,
        "w",
        serde_json::json!({"replicas": 4, "extra": false}),
    )
    .await;
    assert!(
        harness.wait_for_reconcile_after(before).await,
        "no reconcile happened"
    );
    harness.settle().await;
    let child_writes: Vec<_> = harness
        .server
        .writes()
        .into_iter()
        .filter(|request| request.resource != "widgets" && request.resource != "events")
        .collect();
    assert_eq!(
        child_writes,
        vec![],
        "a paused cluster's children must not be written"
    );
    let sts = harness
        .server
        .get_typed::<StatefulSet>("default", "w")
        .expect("sts");
    assert_eq!(sts.spec.replicas, Some(9));
    assert!(
        harness
            .server
            .get_typed::<ConfigMap>("default", "w-extra")
            .is_some(),
        "no pruning while paused"
    );

    // Stopping scales to zero and keeps the PVCs.
    patch_spec(
        &harness,
        "w",
        serde_json::json!({"clusterOperation": {"reconciliationPaused": false, "stopped": true}}),
    )
    .await;
    harness
        .server
        .wait_for::<StatefulSet>("default", "w", |sts| sts.spec.replicas == Some(0), TIMEOUT)
        .await
        .expect("scaled to zero");
    wait_for_condition(&harness, "w", ConditionType::Stopped, ConditionStatus::True).await;
    wait_for_condition(&harness, "w", ConditionType::Paused, ConditionStatus::False).await;
    let reason = wait_for_condition(
        &harness,
        "w",
        ConditionType::Available,
        ConditionStatus::False,
    )
    .await;
    assert_eq!(reason, "ClusterStopped");
    assert!(
        harness
            .server
            .get_typed::<PersistentVolumeClaim>("default", "w-scratch")
            .is_some()
    );
}

#[tokio::test]
async fn the_operator_command_annotation_pauses_too() {
    let harness = start();
    let mut annotated = widget("w", 1);
    annotated
        .annotations_mut()
        .insert("operator-command".into(), "Paused".into());
    create(&harness, &annotated).await;
    wait_for_condition(&harness, "w", ConditionType::Paused, ConditionStatus::True).await;
    harness.settle().await;
    assert!(
        harness
            .server
            .get_typed::<StatefulSet>("default", "w")
            .is_none(),
        "a cluster paused from the start gets no children"
    );
}

#[tokio::test]
async fn a_transient_api_failure_is_reported_and_retried() {
    let harness = start();
    harness.server.inject(
        strata_test_apiserver::Fault::status(500)
            .verb(Verb::Patch)
            .resource("statefulsets")
            .times(2),
    );
    create(&harness, &widget("w", 1)).await;
    let reason = wait_for_condition(
        &harness,
        "w",
        ConditionType::Degraded,
        ConditionStatus::True,
    )
    .await;
    assert_eq!(reason, "ApplyFailed");
    exists::<StatefulSet>(&harness, "w").await;
    wait_for_condition(
        &harness,
        "w",
        ConditionType::Degraded,
        ConditionStatus::False,
    )
    .await;
    let events = harness.server.objects("events.events.k8s.io");
    assert!(
        events
            .iter()
            .any(|event| event["reason"] == "ApplyFailed" && event["type"] == "Warning"),
        "a Warning Event names the failure: {events:#?}"
    );
}

#[tokio::test]
async fn a_new_cluster_is_never_reported_without_workloads() {
    let harness = start();
    create(&harness, &widget("w", 2)).await;
    exists::<StatefulSet>(&harness, "w").await;
    wait_for_condition(
        &harness,
        "w",
        ConditionType::Progressing,
        ConditionStatus::True,
    )
    .await;
    harness.settle().await;

    let events = harness.server.objects("events.events.k8s.io");
    assert!(
        events.iter().all(|event| event["reason"] != "NoWorkloads"),
        "the first status must observe the workload the same reconcile created: {events:#?}"
    );
    assert!(
        events.iter().all(|event| event["type"] != "Warning"),
        "starting up is not a warning: {events:#?}"
    );
    let status_writes = harness.server.count(Verb::Patch, "widgets/status");
    assert_eq!(
        status_writes, 1,
        "one status write for a cluster whose pods have not started"
    );
}

#[tokio::test]
async fn a_conflicting_status_write_is_retried() {
    let harness = start();
    harness.server.inject(
        strata_test_apiserver::Fault::conflict()
            .verb(Verb::Patch)
            .resource("widgets/status")
            .times(2),
    );
    create(&harness, &widget("w", 1)).await;
    exists::<StatefulSet>(&harness, "w").await;
    wait_for_condition(
        &harness,
        "w",
        ConditionType::Progressing,
        ConditionStatus::True,
    )
    .await;
    assert!(
        harness.server.count(Verb::Patch, "widgets/status") >= 3,
        "two conflicts, then a successful write"
    );
}

#[tokio::test]
async fn slow_api_responses_delay_but_do_not_break_reconciles() {
    let harness = start();
    harness.server.inject(
        strata_test_apiserver::Fault::delay(std::time::Duration::from_millis(300))
            .verb(Verb::Patch)
            .always(),
    );
    create(&harness, &widget("w", 1)).await;
    exists::<StatefulSet>(&harness, "w").await;
    wait_for_condition(
        &harness,
        "w",
        ConditionType::Progressing,
        ConditionStatus::True,
    )
    .await;
    harness.server.clear_faults();
    harness.settle().await;
    let events = harness.server.objects("events.events.k8s.io");
    assert!(
        events.iter().all(|event| event["type"] != "Warning"),
        "a slow API is not a failure: {events:#?}"
    );
}
