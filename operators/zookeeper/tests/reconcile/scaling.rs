//! Scaling and removing a role group: the ensemble changes one server at a time while
//! the simulated StatefulSet controller creates and removes pods; the operator prunes
//! what it no longer wants, but the data volumes of the servers that went away stay.

use k8s_openapi::api::apps::v1::StatefulSet;
use pretty_assertions::assert_eq;
use serde_json::json;
use strata_test_apiserver::Verb;

use crate::support::inspect::{expected_server_lines, server_lines, zoo_cfg};
use crate::support::started;
use crate::support::workload::{create_claims, stored_claims};
use crate::support::{
    ExpectedObjects, patch_spec, stored_objects, two_group_spec, wait_for_objects,
};
use strata_testing::workloads::run_until_settled;

#[tokio::test]
async fn scaling_down_rewrites_the_ensemble_and_keeps_every_claim() {
    let harness = started(two_group_spec(), &["primary", "secondary"]).await;
    let claims = create_claims(&harness, "zk-server-primary", 3);
    run_until_settled(&harness, || ()).await;
    harness.server.reset_requests();

    patch_spec(
        &harness,
        "zk",
        json!({"servers": {"roleGroups": {"primary": {"replicas": 1}}}}),
    )
    .await;
    let mut replicas = vec![3];
    run_until_settled(&harness, || {
        let now = harness
            .server
            .get_typed::<StatefulSet>(harness.namespace, "zk-server-primary")
            .and_then(|sts| sts.spec.replicas)
            .unwrap_or_default();
        if replicas.last() != Some(&now) {
            replicas.push(now);
        }
    })
    .await;
    assert_eq!(replicas, [3, 2, 1], "one server leaves at a time");

    let servers = expected_server_lines("zk", &[("primary", 1, 1), ("secondary", 2, 10)]);
    for config_map in ["zk-server-primary", "zk-server-secondary"] {
        assert_eq!(
            server_lines(&zoo_cfg(&harness, config_map)),
            servers,
            "{config_map} lists only the remaining servers"
        );
    }
    assert_eq!(
        stored_claims(&harness),
        claims,
        "scaling down keeps the claims"
    );
    assert_eq!(
        harness.server.count(Verb::Delete, "persistentvolumeclaims"),
        0
    );
}

#[tokio::test]
async fn removing_a_role_group_prunes_its_objects_but_keeps_its_claims() {
    let harness = started(two_group_spec(), &["primary", "secondary"]).await;
    let mut claims = create_claims(&harness, "zk-server-primary", 3);
    claims.extend(create_claims(&harness, "zk-server-secondary", 2));
    claims.sort();
    run_until_settled(&harness, || ()).await;
    harness.server.reset_requests();

    patch_spec(
        &harness,
        "zk",
        json!({"servers": {"roleGroups": {"secondary": null}}}),
    )
    .await;
    let mut secondary = vec![Some(2)];
    run_until_settled(&harness, || {
        let now = harness
            .server
            .get_typed::<StatefulSet>(harness.namespace, "zk-server-secondary")
            .and_then(|sts| sts.spec.replicas);
        if secondary.last() != Some(&now) {
            secondary.push(now);
        }
    })
    .await;
    assert_eq!(
        secondary,
        [Some(2), Some(1), None],
        "the removed group's servers leave one at a time before its StatefulSet goes"
    );
    let remaining = ExpectedObjects::new("zk", &["primary"]);
    wait_for_objects(&harness, &remaining).await;

    assert_eq!(stored_objects(&harness), remaining.all());
    let mut deleted: Vec<String> = harness
        .server
        .requests()
        .into_iter()
        .filter(|request| request.verb == Verb::Delete && request.resource != "pods")
        .map(|request| {
            format!(
                "{}/{}",
                request.qualified_resource(),
                request.name.unwrap_or_default()
            )
        })
        .collect();
    deleted.sort();
    assert_eq!(
        deleted,
        vec![
            "configmaps/zk-server-secondary".to_owned(),
            "secrets/zk-server-secondary-tls".to_owned(),
            "services/zk-server-secondary".to_owned(),
            "services/zk-server-secondary-metrics".to_owned(),
            "statefulsets.apps/zk-server-secondary".to_owned(),
        ],
        "exactly the removed group's objects are pruned; pods are only restarted"
    );
    assert_eq!(
        stored_claims(&harness),
        claims,
        "the removed group's claims stay"
    );
    assert_eq!(
        server_lines(&zoo_cfg(&harness, "zk-server-primary")),
        expected_server_lines("zk", &[("primary", 3, 1)]),
        "the ensemble shrinks to the remaining group"
    );
}
