//! Apply economy: a reconcile in which nothing changed costs no write and no LIST, while
//! drift in an owned object is still repaired.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use pretty_assertions::assert_eq;
use strata_status::{ConditionStatus, ConditionType};
use strata_test_apiserver::Verb;

use crate::support::conditions::wait_for_condition;
use crate::support::inspect::zoo_cfg;
use crate::support::started;
use crate::support::workload::run_group;
use crate::support::{
    ExpectedObjects, TIMEOUT, cluster, create, start, touch_and_settle, two_group_spec, wait_for,
    wait_for_objects,
};

#[tokio::test]
async fn a_reconcile_with_nothing_changed_sends_no_write_and_no_list() {
    let harness = started(two_group_spec(), &["primary", "secondary"]).await;
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

    for round in 1..=3 {
        assert!(
            touch_and_settle(&harness, &round.to_string()).await,
            "round {round}: touching the cluster triggered no reconcile"
        );

        assert_eq!(
            harness.server.writes(),
            vec![],
            "round {round}: a steady-state reconcile writes nothing"
        );
        assert_eq!(
            harness.server.lists(),
            vec![],
            "round {round}: a steady-state reconcile reads from the watch caches"
        );
        let reads: Vec<_> = harness
            .server
            .requests()
            .into_iter()
            .filter(|request| request.verb != Verb::Watch)
            .collect();
        assert_eq!(reads, vec![], "round {round}: not even a GET is needed");
    }
}

#[tokio::test]
async fn drift_in_owned_objects_is_repaired() {
    let harness = start();
    create(
        &harness,
        &cluster("zk", crate::support::single_group_spec(3)),
    )
    .await;
    wait_for_objects(&harness, &ExpectedObjects::new("zk", &["default"])).await;
    harness.settle().await;
    let original_zoo_cfg = zoo_cfg(&harness, "zk-server-default");

    harness
        .server
        .modify::<StatefulSet>(harness.namespace, "zk-server-default", |sts| {
            sts.spec.replicas = Some(1);
        })
        .expect("drift the StatefulSet");
    wait_for::<StatefulSet>(&harness, "zk-server-default", "replicas restored", |sts| {
        sts.spec.replicas == Some(3)
    })
    .await;

    harness
        .server
        .modify::<ConfigMap>(harness.namespace, "zk-server-default", |config_map| {
            config_map.data = Some(BTreeMap::from([(
                "zoo.cfg".to_owned(),
                "tickTime=1\n".to_owned(),
            )]));
        })
        .expect("drift the ConfigMap");
    wait_for::<ConfigMap>(
        &harness,
        "zk-server-default",
        "zoo.cfg restored",
        |config_map| {
            config_map
                .data
                .as_ref()
                .is_some_and(|data| data.get("zoo.cfg") == Some(&original_zoo_cfg))
        },
    )
    .await;

    harness
        .server
        .delete_direct::<Service>(harness.namespace, "zk")
        .expect("delete the client Service");
    harness
        .server
        .wait_for::<Service>(harness.namespace, "zk", |_| true, TIMEOUT)
        .await
        .expect("the client Service is recreated");
}
