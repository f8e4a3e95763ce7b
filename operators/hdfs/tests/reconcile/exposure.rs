//! The namenodes' web UI exposure (issue 26, item 3): each namenode gets its own
//! exposed HTTP Service, a load balancer without an address keeps the cluster
//! Progressing, and each address reaches discovery once its Service has one.

use k8s_openapi::api::core::v1::{ConfigMap, Service};
use serde_json::json;
use strata_status::{ConditionStatus, ConditionType};
use strata_testing::wait::{
    condition, stored, stored_names, wait_for, wait_for_condition, wait_for_reason,
};
use strata_testing::workloads::run_until_settled;

use crate::{
    CLUSTER, FIRST_NAMENODE, QUORUM, SECOND_NAMENODE, ZNODE_CONFIG_MAP, create_cluster, patch_spec,
    publish_znode, spec, start,
};
use hdfs_operator::crd::HdfsCluster;

const FIRST_HTTP: &str = "simple-hdfs-namenode-default-0-http";
const SECOND_HTTP: &str = "simple-hdfs-namenode-default-1-http";

fn external_keys(config_map: &ConfigMap) -> Vec<(String, String)> {
    config_map
        .data
        .iter()
        .flatten()
        .filter(|(key, _)| !key.ends_with(".xml"))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

#[tokio::test]
async fn each_namenodes_load_balancer_address_reaches_discovery_once_its_service_has_one() {
    let harness = start();
    publish_znode(&harness, QUORUM).await;
    create_cluster(
        &harness,
        spec(json!({"clusterConfig": {
            "zookeeperConfigMapName": ZNODE_CONFIG_MAP,
            "nameNodeHttpService": {"type": "LoadBalancer", "loadBalancerSourceRanges": ["192.0.2.0/24"]}
        }})),
    )
    .await;
    run_until_settled(&harness, || {}).await;
    let waiting = wait_for_reason::<HdfsCluster>(
        &harness,
        CLUSTER,
        ConditionType::Progressing,
        ConditionStatus::True,
        "WaitingForLoadBalancer",
    )
    .await;
    assert!(waiting.message.contains(FIRST_HTTP), "{waiting:?}");
    let names = stored_names::<Service>(&harness);
    assert!(
        names.contains(FIRST_HTTP) && names.contains(SECOND_HTTP),
        "{names:?}"
    );
    for (service, pod) in [(FIRST_HTTP, FIRST_NAMENODE), (SECOND_HTTP, SECOND_NAMENODE)] {
        let spec = stored::<Service>(&harness, service)
            .spec
            .unwrap_or_default();
        assert_eq!(spec.type_.as_deref(), Some("LoadBalancer"));
        assert_eq!(
            spec.selector.unwrap_or_default()["statefulset.kubernetes.io/pod-name"],
            pod
        );
    }
    assert_eq!(
        external_keys(&stored::<ConfigMap>(&harness, CLUSTER)),
        [] as [(String, String); 0]
    );

    // The first namenode's load balancer gets an address; the second still waits.
    harness
        .server
        .patch_status_direct::<Service>(
            harness.namespace,
            FIRST_HTTP,
            json!({"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}}),
        )
        .unwrap_or_else(|error| panic!("{error}"));
    wait_for::<ConfigMap>(&harness, CLUSTER, "the first address", |config_map| {
        !external_keys(config_map).is_empty()
    })
    .await;
    // The status is written after discovery: wait for the message that names the
    // second Service, not the one still naming the first.
    strata_testing::wait::eventually(
        "Progressing naming the second Service alone",
        || {
            condition::<HdfsCluster>(&harness, CLUSTER, ConditionType::Progressing).filter(
                |progressing| {
                    progressing.reason == "WaitingForLoadBalancer"
                        && progressing.message.contains(SECOND_HTTP)
                        && !progressing.message.contains(FIRST_HTTP)
                },
            )
        },
        || condition::<HdfsCluster>(&harness, CLUSTER, ConditionType::Progressing),
    )
    .await;

    harness
        .server
        .patch_status_direct::<Service>(
            harness.namespace,
            SECOND_HTTP,
            json!({"loadBalancer": {"ingress": [{"hostname": "nn1.example.com"}]}}),
        )
        .unwrap_or_else(|error| panic!("{error}"));
    let discovery = wait_for::<ConfigMap>(&harness, CLUSTER, "both addresses", |config_map| {
        external_keys(config_map).len() == 4
    })
    .await;
    assert_eq!(
        external_keys(&discovery),
        [
            (
                "SIMPLE_HDFS_NAMENODE_DEFAULT_0_HTTP_EXTERNAL_HOST",
                "192.0.2.10"
            ),
            ("SIMPLE_HDFS_NAMENODE_DEFAULT_0_HTTP_EXTERNAL_PORT", "9870"),
            (
                "SIMPLE_HDFS_NAMENODE_DEFAULT_1_HTTP_EXTERNAL_HOST",
                "nn1.example.com"
            ),
            ("SIMPLE_HDFS_NAMENODE_DEFAULT_1_HTTP_EXTERNAL_PORT", "9870"),
        ]
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
    );
    wait_for_condition::<HdfsCluster>(
        &harness,
        CLUSTER,
        ConditionType::Progressing,
        ConditionStatus::False,
    )
    .await;

    // Back inside the cluster only: the Services are pruned, the addresses leave
    // discovery.
    patch_spec(
        &harness,
        json!({"clusterConfig": {"nameNodeHttpService": null}}),
    )
    .await;
    wait_for::<ConfigMap>(&harness, CLUSTER, "no external address", |config_map| {
        external_keys(config_map).is_empty()
    })
    .await;
    strata_testing::wait::eventually(
        "the HTTP Services pruned",
        || {
            let names = stored_names::<Service>(&harness);
            (!names.contains(FIRST_HTTP) && !names.contains(SECOND_HTTP)).then_some(())
        },
        || stored_names::<Service>(&harness),
    )
    .await;
}

#[tokio::test]
async fn each_namenode_gets_an_ingress_and_its_url_reaches_discovery_once_it_has_an_address() {
    use k8s_openapi::api::networking::v1::Ingress;

    let harness = start();
    publish_znode(&harness, QUORUM).await;
    create_cluster(
        &harness,
        spec(json!({"clusterConfig": {
            "zookeeperConfigMapName": ZNODE_CONFIG_MAP,
            "nameNodeIngress": {"domain": "hdfs.example.com", "tlsSecret": "hdfs-example-com"}
        }})),
    )
    .await;
    run_until_settled(&harness, || {}).await;
    let first = wait_for::<Ingress>(&harness, FIRST_HTTP, "the first namenode's Ingress", |_| {
        true
    })
    .await;
    let rule = &first.spec.unwrap_or_default().rules.unwrap_or_default()[0];
    assert_eq!(
        rule.host.as_deref(),
        Some("simple-hdfs-namenode-default-0.hdfs.example.com")
    );
    assert_eq!(
        stored_names::<Ingress>(&harness),
        [FIRST_HTTP, SECOND_HTTP]
            .map(str::to_owned)
            .into_iter()
            .collect()
    );
    // Nothing in discovery before the controller gives an address, and nothing waits.
    assert_eq!(
        external_keys(&stored::<ConfigMap>(&harness, CLUSTER)),
        [] as [(String, String); 0]
    );
    wait_for_condition::<HdfsCluster>(
        &harness,
        CLUSTER,
        ConditionType::Progressing,
        ConditionStatus::False,
    )
    .await;

    harness
        .server
        .patch_status_direct::<Ingress>(
            harness.namespace,
            SECOND_HTTP,
            json!({"loadBalancer": {"ingress": [{"ip": "192.0.2.30"}]}}),
        )
        .unwrap_or_else(|error| panic!("{error}"));
    let discovery = wait_for::<ConfigMap>(&harness, CLUSTER, "the second URL", |config_map| {
        !external_keys(config_map).is_empty()
    })
    .await;
    assert_eq!(
        external_keys(&discovery),
        [(
            "SIMPLE_HDFS_NAMENODE_DEFAULT_1_HTTP_EXTERNAL_URL".to_owned(),
            "https://simple-hdfs-namenode-default-1.hdfs.example.com/".to_owned()
        )]
    );

    patch_spec(
        &harness,
        json!({"clusterConfig": {"nameNodeIngress": null}}),
    )
    .await;
    wait_for::<ConfigMap>(&harness, CLUSTER, "no URL", |config_map| {
        external_keys(config_map).is_empty()
    })
    .await;
    strata_testing::wait::eventually(
        "the Ingresses pruned",
        || stored_names::<Ingress>(&harness).is_empty().then_some(()),
        || stored_names::<Ingress>(&harness),
    )
    .await;
}
