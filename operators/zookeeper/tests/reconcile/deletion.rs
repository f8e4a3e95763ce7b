//! Deleting a cluster: its children go with it (garbage collection by owner reference),
//! its data volumes stay, and the operator never deletes a claim.

use pretty_assertions::assert_eq;
use strata_test_apiserver::Verb;

use crate::support::workload::{create_claims, run_group, stored_claims};
use crate::support::{
    ExpectedObjects, cluster, create, delete_cluster, eventually, start, stored_objects,
    two_group_spec, wait_for_objects,
};

#[tokio::test]
async fn deleting_the_cluster_removes_its_children_but_never_its_data() {
    let harness = start();
    create(&harness, &cluster("zk", two_group_spec())).await;
    create(
        &harness,
        &cluster("other", crate::support::single_group_spec(1)),
    )
    .await;
    let expected = ExpectedObjects::new("zk", &["primary", "secondary"]);
    let other = ExpectedObjects::new("other", &["default"]);
    let both = || -> std::collections::BTreeSet<String> {
        expected.all().union(&other.all()).cloned().collect()
    };
    eventually(
        "the objects of both clusters",
        || (stored_objects(&harness) == both()).then_some(()),
        || stored_objects(&harness),
    )
    .await;
    let mut claims = create_claims(&harness, "zk-server-primary", 3);
    claims.extend(create_claims(&harness, "zk-server-secondary", 2));
    claims.extend(create_claims(&harness, "other-server-default", 1));
    claims.sort();
    run_group(&harness, "zk-server-primary", 3);
    run_group(&harness, "zk-server-secondary", 2);
    harness.settle().await;

    delete_cluster(&harness, "zk").await;
    wait_for_objects(&harness, &other).await;
    harness.settle().await;

    assert_eq!(
        stored_objects(&harness),
        other.all(),
        "every child of zk is gone, the other cluster is untouched"
    );
    assert_eq!(stored_claims(&harness), claims, "every data volume stays");
    assert_eq!(
        harness.server.count(Verb::Delete, "persistentvolumeclaims"),
        0,
        "the operator never deletes a claim"
    );
    assert_eq!(
        harness
            .server
            .count(Verb::DeleteCollection, "persistentvolumeclaims"),
        0
    );
    let deletes: Vec<_> = harness
        .server
        .requests()
        .into_iter()
        .filter(|request| matches!(request.verb, Verb::Delete | Verb::DeleteCollection))
        .map(|request| request.qualified_resource())
        .collect();
    assert_eq!(
        deletes,
        vec!["zookeeperclusters.zookeeper.strata.dev".to_owned()],
        "only the test's own DELETE: children go by garbage collection"
    );
}
