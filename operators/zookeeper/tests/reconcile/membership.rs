//! Membership changes through the real controller: every step shows in Progressing,
//! every restart is a pod deletion with an Event, and specs that would hand server ids
//! to new, empty servers are refused.

use k8s_openapi::api::apps::v1::StatefulSet;
use pretty_assertions::assert_eq;
use serde_json::json;
use strata_status::{ConditionStatus, ConditionType};
use strata_test_apiserver::Verb;
use strata_testing::workloads::run_until_settled;

use crate::support::conditions::{status, wait_for_reason};
use crate::support::{patch_spec, single_group_spec, started, two_group_spec};

const STS: &str = "zk-server-default";

fn progressing_reason(harness: &strata_testing::Harness) -> Option<String> {
    status(harness, "zk")?
        .conditions
        .into_iter()
        .find(|condition| condition.type_ == ConditionType::Progressing)
        .filter(|condition| condition.status == ConditionStatus::True)
        .map(|condition| condition.reason)
}

#[tokio::test]
async fn growing_from_one_server_goes_one_server_and_one_restart_at_a_time() {
    let harness = started(single_group_spec(1), &["default"]).await;
    run_until_settled(&harness, || ()).await;
    harness.server.reset_requests();

    patch_spec(&harness, "zk", single_group_spec(3)).await;
    let mut replicas = vec![1];
    let mut reasons: Vec<String> = Vec::new();
    run_until_settled(&harness, || {
        let now = harness
            .server
            .get_typed::<StatefulSet>(harness.namespace, STS)
            .and_then(|sts| sts.spec.replicas)
            .unwrap_or_default();
        if replicas.last() != Some(&now) {
            replicas.push(now);
        }
        if let Some(reason) = progressing_reason(&harness)
            && reasons.last() != Some(&reason)
        {
            reasons.push(reason);
        }
    })
    .await;

    assert_eq!(replicas, [1, 2, 3], "one server joins at a time");
    let driven = [
        "AddingServer",
        "RemovingServer",
        "RestartingServer",
        "WaitingForQuorum",
    ];
    assert!(
        !reasons.is_empty()
            && reasons
                .iter()
                .all(|reason| driven.contains(&reason.as_str())),
        "Progressing shows the driven steps while the ensemble grows: {reasons:?}"
    );
    // Server 2 joins: server 1 restarts. Server 3 joins: servers 2 and 1 restart.
    assert_eq!(harness.server.count(Verb::Delete, "pods"), 3);
    let restarts: Vec<String> = harness
        .server
        .list_typed::<k8s_openapi::api::events::v1::Event>()
        .into_iter()
        .filter(|event| event.reason.as_deref() == Some("RestartingPod"))
        .filter_map(|event| event.note)
        .collect::<Vec<_>>();
    // Events with one reason form a series, so they are not counted one by one.
    assert!(
        !restarts.is_empty()
            && restarts
                .iter()
                .all(|note| note.starts_with("Restarting server")),
        "{restarts:?}"
    );
    assert_eq!(progressing_reason(&harness), None, "settled at the end");
}

#[tokio::test]
async fn renaming_a_role_group_is_refused_and_nothing_changes() {
    let harness = started(single_group_spec(3), &["default"]).await;
    run_until_settled(&harness, || ()).await;
    harness.server.reset_requests();

    patch_spec(
        &harness,
        "zk",
        json!({"servers": {"roleGroups": {"default": null, "renamed": {"replicas": 3}}}}),
    )
    .await;
    let degraded = wait_for_reason(
        &harness,
        "zk",
        ConditionType::Degraded,
        ConditionStatus::True,
        "ServerIdsInUse",
    )
    .await;
    assert!(
        degraded.message.contains("\"renamed\"") && degraded.message.contains("\"default\""),
        "{}",
        degraded.message
    );
    harness.settle().await;
    assert_eq!(
        harness
            .server
            .writes_excluding(&["zookeeperclusters", "events"]),
        vec![],
        "nothing is applied while the rename is refused"
    );
}

#[tokio::test]
async fn changing_the_myid_offset_of_running_servers_is_refused() {
    let harness = started(two_group_spec(), &["primary", "secondary"]).await;
    run_until_settled(&harness, || ()).await;

    patch_spec(
        &harness,
        "zk",
        json!({"servers": {"roleGroups": {"secondary": {"config": {"myidOffset": 20}}}}}),
    )
    .await;
    wait_for_reason(
        &harness,
        "zk",
        ConditionType::Degraded,
        ConditionStatus::True,
        "MyidOffsetChanged",
    )
    .await;
}
