//! Storage of a running cluster: Kubernetes cannot change a StatefulSet's volume claim
//! templates, so a new capacity or storage class is refused before anything is applied,
//! with a condition and an Event that say what to do, and the old cluster keeps running.

use k8s_openapi::api::apps::v1::StatefulSet;
use rstest::rstest;
use serde_json::{Value, json};
use strata_status::{ConditionStatus, ConditionType};

use crate::support::conditions::{wait_for_condition, wait_for_reason};
use crate::support::{patch_spec, single_group_spec, started, stored, wait_for_event};

fn claim_size(sts: &StatefulSet) -> Option<String> {
    sts.spec
        .volume_claim_templates
        .as_ref()?
        .first()?
        .spec
        .as_ref()?
        .resources
        .as_ref()?
        .requests
        .as_ref()?
        .get("storage")
        .map(|quantity| quantity.0.clone())
}

#[rstest]
#[case::capacity(
    json!({"servers": {"config": {"resources": {"storage": {"data": {"capacity": "2Gi"}}}}}}),
    "the size of volume claim template \"data\" changes from 1Gi to 2Gi"
)]
#[case::storage_class(
    json!({"servers": {"config": {"resources": {"storage": {"data": {"storageClass": "fast"}}}}}}),
    "the storage class of volume claim template \"data\" changes from (the default class) to fast"
)]
#[tokio::test]
async fn a_storage_change_of_a_running_cluster_is_refused_with_a_clear_condition(
    #[case] change: Value,
    #[case] sentence: &str,
) {
    let harness = started(single_group_spec(3), &["default"]).await;
    harness.settle().await;
    harness.server.reset_requests();

    patch_spec(&harness, "zk", change).await;
    let degraded = wait_for_reason(
        &harness,
        "zk",
        ConditionType::Degraded,
        ConditionStatus::True,
        "ImmutableFieldChanged",
    )
    .await;
    let message = &degraded.message;
    assert!(message.contains(sentence), "{message}");
    assert!(message.contains("docs/architecture.md"), "{message}");
    wait_for_event(&harness, "zk", "Warning", "ImmutableFieldChanged").await;

    let writes = harness
        .server
        .writes_excluding(&["zookeeperclusters", "events"]);
    assert_eq!(
        writes,
        vec![],
        "nothing may be applied while the change is refused"
    );
    assert_eq!(
        claim_size(&stored::<StatefulSet>(&harness, "zk-server-default")).as_deref(),
        Some("1Gi")
    );

    // Reverting the change heals the cluster.
    patch_spec(
        &harness,
        "zk",
        json!({"servers": {"config": {"resources": null}}}),
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
