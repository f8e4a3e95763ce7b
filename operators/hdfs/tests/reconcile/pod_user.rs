//! Issue 21, item 14: the image's `hadoop` user moves from 1000:100 to 1001:1001 at 3.5.
//! A new cluster runs as its version's user; an existing one keeps the user it was
//! created with (recorded in `status.podUser`), since the files on its volumes are that
//! user's and a datanode refuses a data directory whose mode it cannot set.

use k8s_openapi::api::apps::v1::StatefulSet;
use pretty_assertions::assert_eq;
use rstest::rstest;
use serde_json::json;
use strata_testing::Harness;
use strata_testing::wait::{eventually, stored};
use strata_testing::workloads::run_until_settled;

use hdfs_operator::crd::HdfsCluster;

use crate::{CLUSTER, QUORUM, create_cluster, patch_spec, publish_znode, spec, start};

const STATEFUL_SETS: [&str; 3] = [
    "simple-hdfs-journalnode-default",
    "simple-hdfs-namenode-default",
    "simple-hdfs-datanode-default",
];

/// `runAsUser`, `runAsGroup` and `fsGroup` of each StatefulSet's pods.
fn pod_users(harness: &Harness) -> Vec<(Option<i64>, Option<i64>, Option<i64>)> {
    STATEFUL_SETS
        .iter()
        .map(|name| {
            let set: StatefulSet = stored(harness, name);
            let context = set
                .spec
                .template
                .spec
                .and_then(|spec| spec.security_context)
                .unwrap_or_default();
            (context.run_as_user, context.run_as_group, context.fs_group)
        })
        .collect()
}

fn recorded(harness: &Harness) -> Option<(i64, i64)> {
    let cluster: HdfsCluster = stored(harness, CLUSTER);
    let user = cluster.status?.product.pod_user?;
    Some((user.uid, user.gid))
}

async fn wait_for_pod_users(harness: &Harness, uid: i64, gid: i64) {
    let wanted = vec![(Some(uid), Some(gid), Some(gid)); 3];
    eventually(
        &format!("every pod run as {uid}:{gid}"),
        || (pod_users(harness) == wanted).then_some(()),
        || pod_users(harness),
    )
    .await;
}

#[rstest]
#[case::created_on_3_4_upgraded_to_3_5("3.4.2", "3.5.0", (1000, 100))]
#[case::created_on_3_5_downgraded_to_3_4("3.5.0", "3.4.2", (1001, 1001))]
#[tokio::test]
async fn a_cluster_keeps_the_user_it_was_created_with(
    #[case] created_on: &str,
    #[case] moved_to: &str,
    #[case] user: (i64, i64),
) {
    let harness = start();
    publish_znode(&harness, QUORUM).await;
    create_cluster(
        &harness,
        spec(json!({"image": {"productVersion": created_on}})),
    )
    .await;
    run_until_settled(&harness, || {}).await;
    wait_for_pod_users(&harness, user.0, user.1).await;
    assert_eq!(recorded(&harness), Some(user));

    patch_spec(&harness, json!({"image": {"productVersion": moved_to}})).await;
    run_until_settled(&harness, || {}).await;
    eventually(
        &format!("every StatefulSet on {moved_to}"),
        || {
            STATEFUL_SETS
                .iter()
                .all(|name| {
                    let set: StatefulSet = stored(&harness, name);
                    set.spec.template.spec.is_some_and(|spec| {
                        spec.containers[0]
                            .image
                            .as_deref()
                            .is_some_and(|image| image.ends_with(moved_to))
                    })
                })
                .then_some(())
        },
        || pod_users(&harness),
    )
    .await;
    wait_for_pod_users(&harness, user.0, user.1).await;
    assert_eq!(recorded(&harness), Some(user));
}
