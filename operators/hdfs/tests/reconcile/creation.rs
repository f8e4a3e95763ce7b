//! A new cluster: every object, owned by the cluster, and the status through the pods.

use std::collections::BTreeSet;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use pretty_assertions::assert_eq;
use serde_json::json;
use strata_status::{ConditionStatus, ConditionType};
use strata_test_apiserver::Verb;
use strata_testing::wait::{stored, stored_names, wait_for_condition};
use strata_testing::workloads::run_until_settled;

use crate::{
    CLUSTER, QUORUM, create_cluster, patch_spec, publish_znode, publish_znode_with, spec, start,
};
use hdfs_operator::crd::HdfsCluster;

fn names(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

#[tokio::test]
async fn a_new_cluster_gets_every_object_and_becomes_available() {
    let harness = start();
    publish_znode(&harness, QUORUM).await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;

    let groups = [
        "simple-hdfs-datanode-default",
        "simple-hdfs-journalnode-default",
        "simple-hdfs-namenode-default",
    ];
    assert_eq!(stored_names::<StatefulSet>(&harness), names(&groups));
    let mut config_maps = names(&groups);
    config_maps.extend(names(&[
        "simple-hdfs",
        "simple-hdfs-namenode-state",
        "hdfs-znode",
    ]));
    assert_eq!(stored_names::<ConfigMap>(&harness), config_maps);
    let mut services = names(&groups);
    services.extend(groups.iter().map(|group| format!("{group}-metrics")));
    // Each namenode and journalnode pod has a Service of its own (issue 21, item 10).
    services.extend(names(&[
        "simple-hdfs-namenode-default-0",
        "simple-hdfs-namenode-default-1",
        "simple-hdfs-journalnode-default-0",
        "simple-hdfs-journalnode-default-1",
        "simple-hdfs-journalnode-default-2",
    ]));
    assert_eq!(stored_names::<Service>(&harness), services);
    let pod_service: Service = stored(&harness, "simple-hdfs-journalnode-default-2");
    let spec = pod_service.spec.unwrap_or_default();
    assert_eq!(
        spec.selector.unwrap_or_default(),
        std::collections::BTreeMap::from([(
            "statefulset.kubernetes.io/pod-name".to_owned(),
            "simple-hdfs-journalnode-default-2".to_owned()
        )])
    );
    assert_eq!(spec.publish_not_ready_addresses, Some(true));
    assert_eq!(
        stored_names::<PodDisruptionBudget>(&harness),
        names(&[
            "simple-hdfs-datanode",
            "simple-hdfs-journalnode",
            "simple-hdfs-namenode"
        ])
    );
    for group in groups {
        let set: StatefulSet = stored(&harness, group);
        let owner = set
            .metadata
            .owner_references
            .unwrap_or_default()
            .into_iter()
            .next();
        assert_eq!(owner.map(|owner| owner.name), Some(CLUSTER.to_owned()));
    }

    wait_for_condition::<HdfsCluster>(
        &harness,
        CLUSTER,
        ConditionType::Available,
        ConditionStatus::True,
    )
    .await;
    let cluster: HdfsCluster = stored(&harness, CLUSTER);
    let status = cluster.status.unwrap_or_default();
    assert_eq!(status.deployed_product_version.as_deref(), Some("3.4.2"));
    assert_eq!(status.observed_generation, Some(1));
    let progressing = status.condition(ConditionType::Progressing).cloned();
    assert_eq!(
        progressing.map(|condition| condition.status),
        Some(ConditionStatus::False)
    );
}

#[tokio::test]
async fn a_steady_cluster_writes_nothing_and_lists_nothing() {
    let harness = start();
    publish_znode(&harness, QUORUM).await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;

    harness.server.reset_requests();
    let reconciles = harness.reconciles();
    // A change to the referenced ConfigMap that does not touch ZOOKEEPER requeues the
    // cluster, which then has nothing to write.
    publish_znode_with(&harness, QUORUM, json!({"ZOOKEEPER_CLIENT_PORT": "2181"})).await;
    assert!(harness.wait_for_reconcile_after(reconciles).await);
    harness.settle().await;
    let operator: Vec<String> = harness
        .server
        .requests()
        .into_iter()
        .filter(|request| request.field_manager.as_deref() != Some("zookeeper-operator"))
        .filter(|request| request.verb.is_write() || request.verb == Verb::List)
        .map(|request| format!("{request:?}"))
        .collect();
    assert_eq!(operator, Vec::<String>::new());
}

#[tokio::test]
async fn an_unwise_layout_is_a_warning_condition_and_event_not_a_fault() {
    let harness = start();
    publish_znode(&harness, QUORUM).await;
    create_cluster(
        &harness,
        spec(json!({"journalNodes": {"roleGroups": {"default": {"replicas": 4}}}})),
    )
    .await;
    run_until_settled(&harness, || {}).await;

    let warning = strata_testing::wait::wait_for_reason::<HdfsCluster>(
        &harness,
        CLUSTER,
        ConditionType::Warning,
        ConditionStatus::True,
        "WeakJournalQuorum",
    )
    .await;
    assert!(
        warning.message.contains("odd number"),
        "{}",
        warning.message
    );
    strata_testing::wait::wait_for_event(&harness, CLUSTER, "Warning", "WeakJournalQuorum").await;
    wait_for_condition::<HdfsCluster>(
        &harness,
        CLUSTER,
        ConditionType::Available,
        ConditionStatus::True,
    )
    .await;

    patch_spec(
        &harness,
        json!({"journalNodes": {"roleGroups": {"default": {"replicas": 3}}}}),
    )
    .await;
    wait_for_condition::<HdfsCluster>(
        &harness,
        CLUSTER,
        ConditionType::Warning,
        ConditionStatus::False,
    )
    .await;
}
