//! Faults the real API server cannot be made to give, injected into the in-memory API
//! under a real kube-runtime `Controller` built from the shared crates: a 500 on apply,
//! conflicting status writes, slow answers. Everything else the shared runtime does
//! with Kubernetes (owner references, apply economy, drift repair, pruning, conditions
//! from pods, pause and stop, ownership, references) is proven on the real control
//! plane, in `widget_real/`. The test operator is in `support/widget.rs`.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

#[allow(dead_code)] // each test binary uses part of it
mod support;

use k8s_openapi::api::apps::v1::StatefulSet;
use strata_status::{ConditionStatus, ConditionType};
use strata_test_apiserver::Verb;
use strata_testing::wait::exists;
use support::wait::wait_for_condition;
use support::widget::widget;
use support::{create, start};

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
