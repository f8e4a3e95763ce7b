//! Invalid specs: a condition and a Warning Event that say what is wrong, nothing
//! applied, no panic, and recovery once the spec is fixed.

use k8s_openapi::api::apps::v1::StatefulSet;
use pretty_assertions::assert_eq;
use rstest::rstest;
use serde_json::{Value, json};
use strata_status::{ConditionStatus, ConditionType};

use crate::support::conditions::{wait_for_condition, wait_for_reason};
use crate::support::inspect::template_config_hash;
use crate::support::{
    ExpectedObjects, Harness, cluster, create, patch_spec, single_group_spec, start,
    stored_objects, two_group_spec, wait_for, wait_for_event, wait_for_objects,
};

/// Two groups whose id ranges [1, 4) and [2, 4) overlap in ids 2 and 3.
fn overlapping_spec() -> Value {
    json!({"servers": {"roleGroups": {
        "primary": {"replicas": 3},
        "secondary": {"replicas": 2, "config": {"myidOffset": 2}}
    }}})
}

/// Writes to anything but the cluster itself and Events.
fn child_writes(harness: &Harness) -> Vec<strata_test_apiserver::RequestRecord> {
    harness
        .server
        .writes_excluding(&["zookeeperclusters", "events"])
}

/// Proves the operator is still alive: a valid cluster created now gets its objects.
async fn a_valid_cluster_still_reconciles(harness: &Harness) {
    create(harness, &cluster("healthy", single_group_spec(1))).await;
    wait_for::<StatefulSet>(
        harness,
        "healthy-server-default",
        "created after the invalid cluster",
        |_| true,
    )
    .await;
}

#[tokio::test]
async fn overlapping_server_ids_are_rejected_before_anything_is_applied() {
    let harness = start();
    create(&harness, &cluster("zk", overlapping_spec())).await;

    let degraded = wait_for_reason(
        &harness,
        "zk",
        ConditionType::Degraded,
        ConditionStatus::True,
        "OverlappingServerIds",
    )
    .await;
    for part in ["\"primary\"", "\"secondary\"", "2, 3"] {
        assert!(
            degraded.message.contains(part),
            "the message names {part}: {}",
            degraded.message
        );
    }
    let event = wait_for_event(&harness, "zk", "Warning", "OverlappingServerIds").await;
    assert!(
        event["note"]
            .as_str()
            .is_some_and(|note| note.contains("myidOffset")),
        "the Event tells the user what to change: {event:#}"
    );
    wait_for_condition(
        &harness,
        "zk",
        ConditionType::Available,
        ConditionStatus::False,
    )
    .await;
    harness.settle().await;
    assert_eq!(
        stored_objects(&harness),
        Default::default(),
        "no child object exists"
    );
    assert_eq!(
        child_writes(&harness),
        vec![],
        "no child object was applied"
    );

    // Fixing the spec recovers.
    patch_spec(
        &harness,
        "zk",
        json!({"servers": {"roleGroups": {"secondary": {"config": {"myidOffset": 10}}}}}),
    )
    .await;
    wait_for_objects(
        &harness,
        &ExpectedObjects::new("zk", &["primary", "secondary"]),
    )
    .await;
    wait_for_condition(
        &harness,
        "zk",
        ConditionType::Degraded,
        ConditionStatus::False,
    )
    .await;
}

#[tokio::test]
async fn an_invalid_change_leaves_the_running_objects_alone() {
    let harness = start();
    create(&harness, &cluster("zk", two_group_spec())).await;
    let expected = ExpectedObjects::new("zk", &["primary", "secondary"]);
    wait_for_objects(&harness, &expected).await;
    harness.settle().await;
    let hash = template_config_hash(&harness, "zk-server-secondary");
    harness.server.reset_requests();

    patch_spec(
        &harness,
        "zk",
        json!({"servers": {"roleGroups": {"secondary": {"config": {"myidOffset": 3}}}}}),
    )
    .await;
    wait_for_reason(
        &harness,
        "zk",
        ConditionType::Degraded,
        ConditionStatus::True,
        "OverlappingServerIds",
    )
    .await;
    wait_for_event(&harness, "zk", "Warning", "OverlappingServerIds").await;
    harness.settle().await;

    assert_eq!(
        child_writes(&harness),
        vec![],
        "nothing is applied or pruned"
    );
    assert_eq!(stored_objects(&harness), expected.all());
    assert_eq!(
        template_config_hash(&harness, "zk-server-secondary"),
        hash,
        "the running servers keep their config"
    );
}

#[rstest]
#[case::cluster_name_too_long(
    "a-cluster-name-that-is-far-too-long-to-fit",
    single_group_spec(3),
    "NameTooLong",
    "at most 52"
)]
#[case::role_group_name_not_a_dns_label(
    "zk",
    json!({"servers": {"roleGroups": {"Default": {}}}}),
    "InvalidRoleGroupName",
    "\"Default\""
)]
#[case::no_role_groups(
    "zk",
    json!({"servers": {"roleGroups": {}}}),
    "NoRoleGroups",
    "spec.servers.roleGroups"
)]
#[case::zero_tick_time(
    "zk",
    json!({"servers": {"config": {"tickTime": 0}, "roleGroups": {"default": {}}}}),
    "InvalidTimingSetting",
    "tickTime"
)]
#[case::myid_offset_zero(
    "zk",
    json!({"servers": {"roleGroups": {"default": {"config": {"myidOffset": 0}}}}}),
    "InvalidMyidOffset",
    "myidOffset 0"
)]
#[case::data_dir_outside_the_volume(
    "zk",
    json!({"servers": {"configOverrides": {"zoo.cfg": {"dataDir": "/tmp/zk"}}, "roleGroups": {"default": {}}}}),
    "InvalidDataDir",
    "/tmp/zk"
)]
#[case::memory_below_the_minimum(
    "zk",
    json!({"servers": {"config": {"resources": {"memory": {"limit": "64Mi"}}}, "roleGroups": {"default": {}}}}),
    "MemoryLimitTooLow",
    "64Mi"
)]
#[case::unparsable_shutdown_timeout(
    "zk",
    json!({"servers": {"config": {"gracefulShutdownTimeout": "soon"}, "roleGroups": {"default": {}}}}),
    "InvalidGracefulShutdownTimeout",
    "gracefulShutdownTimeout"
)]
#[tokio::test]
async fn an_invalid_spec_is_reported_and_nothing_is_applied(
    #[case] name: &str,
    #[case] spec: Value,
    #[case] reason: &str,
    #[case] message_part: &str,
) {
    let harness = start();
    create(&harness, &cluster(name, spec)).await;

    let degraded = wait_for_reason(
        &harness,
        name,
        ConditionType::Degraded,
        ConditionStatus::True,
        reason,
    )
    .await;
    assert!(
        degraded.message.contains(message_part),
        "the condition says what is wrong ({message_part}): {}",
        degraded.message
    );
    assert!(
        degraded
            .message
            .contains("The operator cannot continue until this is fixed."),
        "the condition says the user must act: {}",
        degraded.message
    );
    let event = wait_for_event(&harness, name, "Warning", reason).await;
    assert!(
        event["note"]
            .as_str()
            .is_some_and(|note| note.contains(message_part)),
        "the Event says what is wrong ({message_part}): {event:#}"
    );
    harness.settle().await;
    assert_eq!(stored_objects(&harness), Default::default());
    assert_eq!(child_writes(&harness), vec![]);

    a_valid_cluster_still_reconciles(&harness).await;
}

/// `configOverrides` is typed by file, so a file ZooKeeper does not have is refused by
/// the CRD schema. An object that gets past it (the in-memory API does not validate)
/// cannot be read by the operator: it gets a Warning Event naming the field, nothing is
/// applied for it, and other clusters keep being reconciled.
#[tokio::test]
async fn an_unknown_config_file_makes_the_cluster_unreadable_but_harms_no_other() {
    let harness = start();
    let mut unreadable = serde_json::to_value(cluster("zk", single_group_spec(1))).unwrap();
    unreadable["spec"]["servers"]["configOverrides"] = json!({"log4j.properties": {"a": "b"}});
    harness
        .server
        .upsert_value("zookeeperclusters.zookeeper.strata.dev", unreadable)
        .expect("store the cluster as the API server would without strict validation");

    let event = wait_for_event(&harness, "zk", "Warning", "InvalidObject").await;
    let note = event["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("spec.servers.configOverrides") && note.contains("log4j.properties"),
        "the Event names the field and the file: {note}"
    );
    a_valid_cluster_still_reconciles(&harness).await;
    assert!(
        stored_objects(&harness)
            .iter()
            .all(|object| !object.contains("zk-server")),
        "nothing is applied for the unreadable cluster"
    );
}
