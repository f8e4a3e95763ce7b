//! Bad input: missing references (on the catalog and on the clusters that select it),
//! duplicate catalog names, refused specs, a failing pod; and no Secret value in
//! anything the operator writes.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;
use strata_model::build::REFERENCES_HASH_ANNOTATION;
use strata_status::{ConditionStatus, ConditionType};
use strata_testing::manifests::create_secret;
use strata_testing::wait::{
    assert_no_object_holds, eventually, stored, stored_names, wait_for_available,
    wait_for_degraded, wait_for_event, wait_for_reason,
};
use strata_testing::workloads::{run_until_settled, step_stateful_sets};

use crate::{
    CLUSTER, PASSWORD, SELECTED, create_catalog, create_cluster, create_example_catalogs,
    create_postgres_secret, spec, start, template_annotations,
};
use trino_operator::crd::{TrinoCatalog, TrinoCluster};

async fn degraded_on_both(harness: &strata_testing::Harness, catalog: &str, reason: &str) {
    let on_catalog = wait_for_degraded::<TrinoCatalog>(harness, catalog, reason).await;
    let on_cluster = wait_for_degraded::<TrinoCluster>(harness, CLUSTER, reason).await;
    assert!(
        on_cluster
            .message
            .contains(&format!("TrinoCatalog {catalog}")),
        "the cluster names the catalog: {on_cluster:?}"
    );
    assert!(
        on_catalog.message.contains("trino-postgres") || on_catalog.message.contains("hive"),
        "the catalog names the object: {on_catalog:?}"
    );
    wait_for_event(harness, catalog, "Warning", reason).await;
    wait_for_event(harness, CLUSTER, "Warning", reason).await;
}

#[tokio::test]
async fn a_missing_secret_or_key_is_named_on_the_catalog_and_the_cluster_until_it_is_fixed() {
    let harness = start();
    create_example_catalogs(&harness).await;
    create_cluster(&harness, spec(json!({}))).await;
    degraded_on_both(&harness, "postgres", "SecretMissing").await;
    harness.settle().await;
    assert!(
        stored_names::<StatefulSet>(&harness).is_empty(),
        "nothing is applied"
    );

    create_secret(&harness, "trino-postgres", &[("username", "trino")]).await;
    degraded_on_both(&harness, "postgres", "SecretKeyMissing").await;
    assert!(
        stored_names::<StatefulSet>(&harness).is_empty(),
        "nothing is applied"
    );

    Api::<Secret>::namespaced(harness.server.client(), harness.namespace)
        .patch(
            "trino-postgres",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"password": PASSWORD}})),
        )
        .await
        .expect("the key is added");
    eventually(
        "the StatefulSets once the key exists",
        || (stored_names::<StatefulSet>(&harness).len() == 2).then_some(()),
        || stored_names::<StatefulSet>(&harness),
    )
    .await;
    wait_for_available::<TrinoCatalog>(&harness, "postgres").await;
}

#[tokio::test]
async fn a_missing_discovery_config_map_is_named_and_recovers() {
    let harness = start();
    create_catalog(
        &harness,
        "hive",
        json!({SELECTED.0: SELECTED.1}),
        json!({"connector": {"hive": {"metastore": {"configMap": {"name": "hive"}}}}}),
    )
    .await;
    create_cluster(&harness, spec(json!({}))).await;
    degraded_on_both(&harness, "hive", "ConfigMapMissing").await;

    let config_map: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "hive", "namespace": harness.namespace},
        "data": {"HIVE": "thrift://hive-metastore:9083"}
    }))
    .expect("the ConfigMap deserialises");
    Api::<ConfigMap>::namespaced(harness.server.client(), harness.namespace)
        .create(&PostParams::default(), &config_map)
        .await
        .expect("the ConfigMap is created");
    eventually(
        "the StatefulSets once the ConfigMap exists",
        || (stored_names::<StatefulSet>(&harness).len() == 2).then_some(()),
        || stored_names::<StatefulSet>(&harness),
    )
    .await;

    // The pods read the metastore address from the ConfigMap once, at start: a new
    // address rolls them.
    let references = || template_annotations(&harness, REFERENCES_HASH_ANNOTATION);
    let before = eventually(
        "a references hash on both role groups",
        || {
            let hashes = references();
            hashes.iter().all(Option::is_some).then_some(hashes)
        },
        references,
    )
    .await;
    Api::<ConfigMap>::namespaced(harness.server.client(), harness.namespace)
        .patch(
            "hive",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"HIVE": "thrift://other-metastore:9083"}})),
        )
        .await
        .expect("the ConfigMap is patched");
    eventually(
        "a new references hash on both role groups",
        || {
            let hashes = references();
            hashes
                .iter()
                .zip(&before)
                .all(|(now, then)| now != then)
                .then_some(())
        },
        references,
    )
    .await;
}

#[tokio::test]
async fn invalid_specs_get_a_reason_and_nothing_is_applied() {
    let bad_worker_config = |config: serde_json::Value| json!({"workers": {"config": config, "roleGroups": {"default": {"replicas": 2}}}});
    for (patch, reason) in [
        (
            json!({"coordinators": {"roleGroups": {"default": {"replicas": 2}}}}),
            "InvalidCoordinatorReplicas",
        ),
        (
            bad_worker_config(json!({"queryMaxMemoryPerNode": "4Gi"})),
            "QueryMemoryExceedsHeap",
        ),
        (
            json!({"workers": {
                "configOverrides": {"config.properties": {"discovery.uri": "http://elsewhere:8080"}},
                "roleGroups": {"default": {"replicas": 2}}
            }}),
            "ReservedConfigOverride",
        ),
        (
            json!({"workers": {
                "configOverrides": {"config.properties": {"query.max-run-time": "1h\ncoordinator=true"}},
                "roleGroups": {"default": {"replicas": 2}}
            }}),
            "InvalidConfigOverride",
        ),
    ] {
        let harness = start();
        create_cluster(&harness, spec(patch)).await;
        wait_for_degraded::<TrinoCluster>(&harness, CLUSTER, reason).await;
        wait_for_event(&harness, CLUSTER, "Warning", reason).await;
        assert!(stored_names::<StatefulSet>(&harness).is_empty(), "{reason}");
    }
}

#[tokio::test]
async fn two_catalogs_with_one_name_are_refused() {
    let harness = start();
    let selected = json!({SELECTED.0: SELECTED.1});
    create_catalog(
        &harness,
        "sales-a",
        selected.clone(),
        json!({"catalogName": "sales", "connector": {"tpch": {}}}),
    )
    .await;
    create_catalog(
        &harness,
        "sales-b",
        selected,
        json!({"catalogName": "sales", "connector": {"tpcds": {}}}),
    )
    .await;
    create_cluster(&harness, spec(json!({}))).await;
    let degraded =
        wait_for_degraded::<TrinoCluster>(&harness, CLUSTER, "DuplicateCatalogName").await;
    assert!(
        degraded.message.contains("sales-a") && degraded.message.contains("sales-b"),
        "{degraded:?}"
    );
    assert!(stored_names::<StatefulSet>(&harness).is_empty());
}

#[tokio::test]
async fn a_crash_looping_worker_makes_the_cluster_degraded() {
    let harness = start();
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;
    wait_for_available::<TrinoCluster>(&harness, CLUSTER).await;
    harness
        .server
        .patch_status_direct::<Pod>(
            harness.namespace,
            "simple-trino-worker-default-1",
            json!({
                "phase": "Running",
                "containerStatuses": [{
                    "name": "trino", "image": "", "imageID": "", "ready": false,
                    "restartCount": 4,
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                    "lastState": {"terminated": {"exitCode": 100, "reason": "Error"}}
                }]
            }),
        )
        .expect("the pod status is written");
    step_stateful_sets(&harness);
    let degraded = wait_for_degraded::<TrinoCluster>(&harness, CLUSTER, "PodsFailing").await;
    assert!(
        degraded
            .message
            .contains("simple-trino-worker-default-1 (container trino CrashLoopBackOff)"),
        "{degraded:?}"
    );
}

#[tokio::test]
async fn no_secret_value_reaches_what_the_operator_writes() {
    let harness = start();
    create_postgres_secret(&harness).await;
    create_example_catalogs(&harness).await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;
    assert_no_object_holds(
        &harness,
        &[
            "configmaps",
            "statefulsets.apps",
            "services",
            "events.events.k8s.io",
            "trinoclusters.trino.strata.dev",
            "trinocatalogs.trino.strata.dev",
        ],
        PASSWORD,
    );
}

#[tokio::test]
async fn an_unreadable_cluster_does_not_stall_the_catalogs_or_the_other_clusters() {
    let harness = start();
    // A shape the CRD schema lets through (`podOverrides` preserves unknown fields)
    // but the operator's types refuse. The catalog controller caches clusters as a
    // reference; one unreadable cluster must not fail that cache.
    harness
        .server
        .upsert_value(
            "trinoclusters.trino.strata.dev",
            json!({
                "apiVersion": "trino.strata.dev/v1alpha1",
                "kind": "TrinoCluster",
                "metadata": {"name": "broken", "namespace": harness.namespace},
                "spec": {
                    "coordinators": {"roleGroups": {"default": {"replicas": 1}}},
                    "workers": {"podOverrides": "not-an-object",
                                "roleGroups": {"default": {"replicas": 1}}}
                }
            }),
        )
        .expect("store the unreadable cluster");
    create_postgres_secret(&harness).await;
    create_example_catalogs(&harness).await;
    create_cluster(&harness, spec(json!({}))).await;
    run_until_settled(&harness, || {}).await;
    wait_for_available::<TrinoCluster>(&harness, CLUSTER).await;
    eventually(
        "the catalogs name the readable cluster",
        || {
            strata_testing::wait::stored::<TrinoCatalog>(&harness, "tpch")
                .status
                .filter(|status| status.used_by == [CLUSTER])
        },
        || strata_testing::wait::stored::<TrinoCatalog>(&harness, "tpch").status,
    )
    .await;
    wait_for_event(&harness, "broken", "Warning", "InvalidObject").await;
}

#[tokio::test]
async fn a_cluster_deleted_while_unreadable_leaves_the_catalogs_used_by() {
    let harness = start();
    create_postgres_secret(&harness).await;
    create_example_catalogs(&harness).await;
    create_cluster(&harness, spec(json!({}))).await;
    strata_testing::manifests::create::<TrinoCluster>(&harness, "second", spec(json!({}))).await;
    let used_by = |names: &'static [&'static str]| {
        let harness = &harness;
        move || {
            strata_testing::wait::stored::<TrinoCatalog>(harness, "tpch")
                .status
                .filter(|status| status.used_by == names)
        }
    };
    let status = || strata_testing::wait::stored::<TrinoCatalog>(&harness, "tpch").status;
    eventually(
        "the catalogs name both clusters",
        used_by(&["second", CLUSTER]),
        status,
    )
    .await;

    // An edit the CRD schema lets through but the operator's types refuse, then a
    // deletion while the object is in that state: the catalog controller's cache of
    // clusters must lose the last readable version, not keep it until a relist.
    let mut broken = serde_json::to_value(strata_testing::wait::stored::<TrinoCluster>(
        &harness, "second",
    ))
    .expect("the cluster serialises");
    broken["spec"]["workers"]["podOverrides"] = json!("not-an-object");
    harness
        .server
        .upsert_value("trinoclusters.trino.strata.dev", broken)
        .expect("store the unreadable edit");
    Api::<TrinoCluster>::namespaced(harness.server.client(), harness.namespace)
        .delete("second", &Default::default())
        .await
        .expect("delete the unreadable cluster");
    eventually(
        "the catalogs name only the remaining cluster",
        used_by(&[CLUSTER]),
        status,
    )
    .await;
}

#[tokio::test]
async fn a_cluster_with_a_blocked_catalog_can_still_be_stopped() {
    let harness = start();
    create_example_catalogs(&harness).await;
    create_cluster(&harness, spec(json!({}))).await;
    degraded_on_both(&harness, "postgres", "SecretMissing").await;

    crate::patch_spec(&harness, json!({"clusterOperation": {"stopped": true}})).await;
    wait_for_reason::<TrinoCluster>(
        &harness,
        CLUSTER,
        ConditionType::Stopped,
        ConditionStatus::True,
        "ClusterStopped",
    )
    .await;
    eventually(
        "both StatefulSets at 0 replicas, with the servable catalog only",
        || {
            let stopped = crate::STATEFUL_SETS.iter().all(|name| {
                strata_testing::wait::stored::<StatefulSet>(&harness, name)
                    .spec
                    .replicas
                    == Some(0)
            });
            (stopped && crate::catalog_files(&harness) == ["tpch.properties"]).then_some(())
        },
        || crate::catalog_files(&harness),
    )
    .await;

    crate::patch_spec(&harness, json!({"clusterOperation": {"stopped": false}})).await;
    wait_for_degraded::<TrinoCluster>(&harness, CLUSTER, "SecretMissing").await;
}

/// A ZookeeperCluster of the same name in the namespace (security review, finding 33):
/// its objects are `<name>` and `<name>-ca` too. Its CA is never read as the Trino
/// cluster's, whose certificates it would sign, and its discovery ConfigMap is never
/// replaced; the reason names the other product's objects until one cluster moves.
#[tokio::test]
async fn a_zookeeper_cluster_of_the_same_name_is_named_and_none_of_its_objects_is_used() {
    let harness = start();
    let zookeepers = json!({
        "labels": {"app.kubernetes.io/name": "zookeeper", "app.kubernetes.io/instance": CLUSTER},
        "ownerReferences": [{
            "apiVersion": "zookeeper.strata.dev/v1alpha1", "kind": "ZookeeperCluster",
            "name": CLUSTER, "uid": "zookeeper-uid", "controller": true, "blockOwnerDeletion": true
        }]
    });
    let with_name = |name: &str| {
        let mut metadata = zookeepers.clone();
        metadata["name"] = json!(name);
        metadata
    };
    let ca_name = format!("{CLUSTER}-ca");
    let secrets = Api::<Secret>::namespaced(harness.server.client(), harness.namespace);
    let zookeeper_ca: Secret = serde_json::from_value(json!({
        "metadata": with_name(&ca_name),
        "stringData": {"ca.crt": "zookeeper's CA", "ca.key": "zookeeper's CA key"}
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &zookeeper_ca)
        .await
        .unwrap();
    let discovery: ConfigMap = serde_json::from_value(json!({
        "metadata": with_name(CLUSTER),
        "data": {"ZOOKEEPER": "simple-trino-server-default-0:2282"}
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(harness.server.client(), harness.namespace)
        .create(&PostParams::default(), &discovery)
        .await
        .unwrap();
    create_cluster(&harness, spec(json!({}))).await;

    let named = |object: &str| {
        let object = object.to_owned();
        let harness = &harness;
        async move {
            eventually(
                &format!("Degraded NameTakenByOtherProduct naming {object}"),
                || {
                    strata_testing::wait::condition::<TrinoCluster>(
                        harness,
                        CLUSTER,
                        ConditionType::Degraded,
                    )
                    .filter(|degraded| {
                        degraded.status == ConditionStatus::True
                            && degraded.reason == "NameTakenByOtherProduct"
                            && degraded.message.contains(&object)
                    })
                },
                || {
                    strata_testing::wait::condition::<TrinoCluster>(
                        harness,
                        CLUSTER,
                        ConditionType::Degraded,
                    )
                },
            )
            .await
        }
    };
    named(&format!(
        "Secret {ca_name} exists and is zookeeper's {CLUSTER}'s"
    ))
    .await;
    wait_for_event(&harness, CLUSTER, "Warning", "NameTakenByOtherProduct").await;
    assert_eq!(
        secrets.get(&ca_name).await.unwrap().data,
        zookeeper_ca_data(),
        "ZooKeeper's CA is kept"
    );

    secrets.delete(&ca_name, &Default::default()).await.unwrap();
    named(&format!(
        "ConfigMap/{CLUSTER} exists and is controlled by ZookeeperCluster/{CLUSTER}"
    ))
    .await;
    harness.settle().await;
    assert!(
        stored_names::<StatefulSet>(&harness).is_empty(),
        "nothing is applied"
    );
    assert_eq!(
        stored::<ConfigMap>(&harness, CLUSTER).data,
        discovery.data,
        "ZooKeeper's discovery ConfigMap is kept"
    );
}

fn zookeeper_ca_data() -> Option<std::collections::BTreeMap<String, k8s_openapi::ByteString>> {
    Some(
        [
            ("ca.crt", "zookeeper's CA"),
            ("ca.key", "zookeeper's CA key"),
        ]
        .into_iter()
        .map(|(key, value)| {
            (
                key.to_owned(),
                k8s_openapi::ByteString(value.as_bytes().to_vec()),
            )
        })
        .collect(),
    )
}
