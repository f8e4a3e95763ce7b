//! `clusterConfig.nameNodeHttpService`: a Service per namenode, and its address in
//! discovery.

use std::collections::BTreeMap;

use kube::ResourceExt;
use pretty_assertions::assert_eq;
use rstest::rstest;
use serde_json::{Value, json};
use strata_model::exposure::ExternalAddress;

use super::super::*;
use crate::validate::tests::validated;

type TestResult = Result<(), strata_operator::error::ReconcileError>;

#[rstest]
#[case::none_by_default(json!({}), &[])]
#[case::annotations_alone(
    json!({"clusterConfig": {"nameNodeHttpService": {"annotations": {"example.com/team": "data"}}}}),
    &["simple-hdfs-namenode-default-0-http", "simple-hdfs-namenode-default-1-http"]
)]
#[case::one_per_namenode_of_every_group(
    json!({
        "clusterConfig": {"nameNodeHttpService": {"type": "NodePort"}},
        "nameNodes": {"roleGroups": {"spare": {"replicas": 1}}}
    }),
    &[
        "simple-hdfs-namenode-default-0-http",
        "simple-hdfs-namenode-default-1-http",
        "simple-hdfs-namenode-spare-0-http",
    ]
)]
fn each_namenode_gets_its_own_http_service_when_exposed(
    #[case] patch: Value,
    #[case] expected: &[&str],
) -> TestResult {
    let objects = build_cluster(&validated(patch)?, &NameNodeState::default());
    let names: Vec<String> = objects
        .namenode_http_services
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    assert_eq!(names, expected);
    Ok(())
}

#[test]
fn the_http_service_selects_one_namenode_and_serves_only_http() -> TestResult {
    let objects = build_cluster(
        &validated(json!({"clusterConfig": {"nameNodeHttpService": {
            "type": "LoadBalancer",
            "annotations": {"service.beta.kubernetes.io/aws-load-balancer-scheme": "internal"},
            "loadBalancerSourceRanges": ["192.0.2.0/24"],
            "externalTrafficPolicy": "Local"
        }}}))?,
        &NameNodeState::default(),
    );
    let service = serde_json::to_value(&objects.namenode_http_services[1])
        .unwrap_or_else(|error| unreachable!("a Service serializes: {error}"));
    assert_eq!(
        service["metadata"]["annotations"],
        json!({"service.beta.kubernetes.io/aws-load-balancer-scheme": "internal"})
    );
    assert_eq!(
        service["metadata"]["labels"]["app.kubernetes.io/component"],
        "namenode"
    );
    assert_eq!(
        service["spec"],
        json!({
            "type": "LoadBalancer",
            "selector": {"statefulset.kubernetes.io/pod-name": "simple-hdfs-namenode-default-1"},
            "ports": [{"name": "http", "port": 9870, "protocol": "TCP", "targetPort": "http"}],
            "publishNotReadyAddresses": true,
            "loadBalancerSourceRanges": ["192.0.2.0/24"],
            "externalTrafficPolicy": "Local"
        })
    );
    Ok(())
}

#[rstest]
#[case::nothing_while_in_the_cluster_only(ExternalAddress::None, &[])]
#[case::nothing_while_the_load_balancer_has_no_address(ExternalAddress::Pending, &[])]
#[case::the_load_balancers_address(
    ExternalAddress::LoadBalancer("203.0.113.7".to_owned()),
    &[
        ("SIMPLE_HDFS_NAMENODE_DEFAULT_0_HTTP_EXTERNAL_HOST", "203.0.113.7"),
        ("SIMPLE_HDFS_NAMENODE_DEFAULT_0_HTTP_EXTERNAL_PORT", "9870"),
    ]
)]
#[case::the_node_port(
    ExternalAddress::NodePorts(BTreeMap::from([("http".to_owned(), 31870)])),
    &[("SIMPLE_HDFS_NAMENODE_DEFAULT_0_HTTP_NODE_PORT", "31870")]
)]
fn discovery_publishes_each_namenodes_address_once_known(
    #[case] address: ExternalAddress,
    #[case] expected: &[(&str, &str)],
) -> TestResult {
    let mut cluster =
        validated(json!({"clusterConfig": {"nameNodeHttpService": {"type": "LoadBalancer"}}}))?;
    cluster
        .namenode_http_addresses
        .insert("simple-hdfs-namenode-default-0".to_owned(), address);
    let data = build_cluster(&cluster, &NameNodeState::default())
        .discovery_config_map
        .data
        .unwrap_or_default();
    let published: Vec<(&str, &str)> = data
        .iter()
        .filter(|(key, _)| !key.ends_with(".xml"))
        .map(|(key, value)| (key.as_str(), value.as_str()))
        .collect();
    assert_eq!(published, expected);
    Ok(())
}

#[test]
fn each_namenode_gets_an_ingress_at_its_own_host_to_its_own_service() -> TestResult {
    let objects = build_cluster(
        &validated(json!({"clusterConfig": {"nameNodeIngress": {
            "domain": "hdfs.example.com",
            "ingressClassName": "nginx",
            "annotations": {"nginx.ingress.kubernetes.io/auth-url": "https://auth.example.com/oauth2/auth"},
            "tlsSecret": "hdfs-example-com"
        }}}))?,
        &NameNodeState::default(),
    );
    let ingresses: Vec<Value> = objects
        .namenode_ingresses
        .iter()
        .map(|ingress| {
            serde_json::to_value(ingress)
                .unwrap_or_else(|error| unreachable!("an Ingress serializes: {error}"))
        })
        .collect();
    assert_eq!(ingresses.len(), 2);
    assert_eq!(
        ingresses[1]["metadata"]["name"],
        "simple-hdfs-namenode-default-1-http"
    );
    assert_eq!(
        ingresses[1]["spec"],
        json!({
            "ingressClassName": "nginx",
            "rules": [{
                "host": "simple-hdfs-namenode-default-1.hdfs.example.com",
                "http": {"paths": [{
                    "path": "/", "pathType": "Prefix",
                    "backend": {"service": {"name": "simple-hdfs-namenode-default-1", "port": {"name": "http"}}}
                }]}
            }],
            "tls": [{"hosts": ["simple-hdfs-namenode-default-1.hdfs.example.com"], "secretName": "hdfs-example-com"}]
        })
    );
    assert_eq!(
        ingresses[0]["metadata"]["annotations"]["nginx.ingress.kubernetes.io/auth-url"],
        "https://auth.example.com/oauth2/auth"
    );
    Ok(())
}

#[test]
fn discovery_publishes_each_namenodes_ingress_url_once_known() -> TestResult {
    let mut cluster =
        validated(json!({"clusterConfig": {"nameNodeIngress": {"domain": "hdfs.example.com"}}}))?;
    cluster.namenode_ingress_urls.insert(
        "simple-hdfs-namenode-default-1".to_owned(),
        "http://simple-hdfs-namenode-default-1.hdfs.example.com/".to_owned(),
    );
    let data = build_cluster(&cluster, &NameNodeState::default())
        .discovery_config_map
        .data
        .unwrap_or_default();
    assert_eq!(
        data.get("SIMPLE_HDFS_NAMENODE_DEFAULT_1_HTTP_EXTERNAL_URL")
            .map(String::as_str),
        Some("http://simple-hdfs-namenode-default-1.hdfs.example.com/")
    );
    assert!(!data.contains_key("SIMPLE_HDFS_NAMENODE_DEFAULT_0_HTTP_EXTERNAL_URL"));
    Ok(())
}
