use pretty_assertions::assert_eq;
use rstest::rstest;
use serde_json::{Value, json};
use strata_operator::error::ReconcileError;

use super::*;

pub(crate) const QUORUM: &str = "zk-0.zk:2181,zk-1.zk:2181/znode-1234";

/// A 2-namenode, 3-journalnode, 3-datanode cluster, with `patch` merged over its spec.
pub(crate) fn cluster(patch: Value) -> HdfsCluster {
    let mut spec = json!({
        "clusterConfig": {"zookeeperConfigMapName": "simple-hdfs-znode"},
        "nameNodes": {"roleGroups": {"default": {"replicas": 2}}},
        "journalNodes": {"roleGroups": {"default": {"replicas": 3}}},
        "dataNodes": {"roleGroups": {"default": {"replicas": 3}}}
    });
    if patch != json!({}) {
        merge(&mut spec, patch);
    }
    let mut cluster: HdfsCluster = match serde_json::from_value(json!({
        "apiVersion": "hdfs.strata.dev/v1alpha1",
        "kind": "HdfsCluster",
        "metadata": {"name": "simple-hdfs", "namespace": "default", "uid": "uid-1"},
        "spec": spec
    })) {
        Ok(cluster) => cluster,
        Err(error) => unreachable!("the fixture is a valid HdfsCluster: {error}"),
    };
    cluster.metadata.generation = Some(1);
    cluster
}

/// Merges `patch` into `target` like a JSON merge patch, except that an empty object
/// replaces what it patches (so a case can remove every role group).
fn merge(target: &mut Value, patch: Value) {
    match (target, patch) {
        (Value::Object(target), Value::Object(patch)) if !patch.is_empty() => {
            for (key, value) in patch {
                merge(target.entry(key).or_insert(Value::Null), value);
            }
        }
        (target, patch) => *target = patch,
    }
}

pub(crate) fn validated(patch: Value) -> Result<ValidatedCluster, ReconcileError> {
    ValidatedCluster::new(
        &cluster(patch),
        DEFAULT_CLUSTER_DOMAIN,
        &ZookeeperConnection::plaintext(QUORUM),
    )
}

#[test]
fn the_topology_names_every_namenode_and_journalnode_by_pod() -> Result<(), ReconcileError> {
    let cluster = validated(json!({}))?;
    let ids: Vec<&str> = cluster
        .topology
        .namenodes
        .iter()
        .map(|namenode| namenode.id.as_str())
        .collect();
    assert_eq!(
        ids,
        [
            "simple-hdfs-namenode-default-0",
            "simple-hdfs-namenode-default-1"
        ]
    );
    assert_eq!(
        cluster.topology.namenodes[1].fqdn,
        "simple-hdfs-namenode-default-1.simple-hdfs-namenode-default.default.svc.cluster.local"
    );
    assert_eq!(cluster.topology.journalnodes.len(), 3);
    assert_eq!(cluster.formatter_pod, "simple-hdfs-namenode-default-0");
    assert_eq!(cluster.dfs_replication, 3);
    assert_eq!(cluster.warnings, []);
    let roles: Vec<HdfsRole> = cluster.roles.iter().map(|role| role.role).collect();
    assert_eq!(roles, roll_order());
    Ok(())
}

#[test]
fn the_heap_is_three_quarters_of_the_memory_limit() -> Result<(), ReconcileError> {
    let cluster = validated(json!({
        "dataNodes": {"config": {"resources": {"memory": {"limit": "2Gi"}}}}
    }))?;
    let datanodes = cluster.role(HdfsRole::DataNode).map(|role| &role.groups[0]);
    assert_eq!(datanodes.map(|group| group.resources.heap_mib), Some(1536));
    Ok(())
}

#[rstest]
#[case::two_journalnodes(
    json!({"journalNodes": {"roleGroups": {"default": {"replicas": 2}}}}),
    &["WeakJournalQuorum"]
)]
#[case::four_journalnodes(
    json!({"journalNodes": {"roleGroups": {"default": {"replicas": 4}}}}),
    &["WeakJournalQuorum"]
)]
#[case::one_journalnode(
    json!({"journalNodes": {"roleGroups": {"default": {"replicas": 1}}}}),
    &["WeakJournalQuorum"]
)]
#[case::replication_above_datanodes(
    json!({"dataNodes": {"roleGroups": {"default": {"replicas": 2}}}}),
    &["ReplicationAboveDataNodes"]
)]
#[case::replication_lowered_to_the_datanodes(
    json!({"clusterConfig": {"dfsReplication": 2}, "dataNodes": {"roleGroups": {"default": {"replicas": 2}}}}),
    &[]
)]
#[case::development_cluster(
    json!({
        "clusterConfig": {"dfsReplication": 1},
        "journalNodes": {"roleGroups": {"default": {"replicas": 1}}},
        "dataNodes": {"roleGroups": {"default": {"replicas": 1}}}
    }),
    &["WeakJournalQuorum"]
)]
#[case::namenode_http_on_a_node_port(
    json!({"clusterConfig": {"nameNodeHttpService": {"type": "NodePort"}}}),
    &["NameNodeHttpOpen"]
)]
#[case::namenode_http_on_an_open_load_balancer(
    json!({"clusterConfig": {"nameNodeHttpService": {"type": "LoadBalancer"}}}),
    &["NameNodeHttpOpen"]
)]
#[case::namenode_http_on_a_load_balancer_for_trusted_networks(
    json!({"clusterConfig": {"nameNodeHttpService": {"type": "LoadBalancer", "loadBalancerSourceRanges": ["10.0.0.0/8"]}}}),
    &[]
)]
#[case::namenode_ingress_without_authentication(
    json!({"clusterConfig": {"nameNodeIngress": {"domain": "hdfs.example.com"}}}),
    &["NameNodeHttpOpen"]
)]
#[case::namenode_ingress_with_tls_but_no_authentication(
    json!({"clusterConfig": {"nameNodeIngress": {"domain": "hdfs.example.com", "tlsSecret": "hdfs-tls",
        "annotations": {"nginx.ingress.kubernetes.io/proxy-body-size": "8m"}}}}),
    &["NameNodeHttpOpen"]
)]
#[case::namenode_ingress_behind_an_authenticating_proxy(
    json!({"clusterConfig": {"nameNodeIngress": {"domain": "hdfs.example.com",
        "annotations": {"nginx.ingress.kubernetes.io/auth-url": "https://auth.example.com/oauth2/auth"}}}}),
    &[]
)]
#[case::namenode_http_inside_the_cluster_with_annotations(
    json!({"clusterConfig": {"nameNodeHttpService": {"annotations": {"example.com/team": "data"}}}}),
    &[]
)]
fn unwise_layouts_are_warnings(
    #[case] patch: Value,
    #[case] reasons: &[&str],
) -> Result<(), ReconcileError> {
    let cluster = validated(patch)?;
    let found: Vec<String> = cluster
        .warnings
        .iter()
        .map(|warning| warning.reason().to_string())
        .collect();
    assert_eq!(found, reasons);
    Ok(())
}

#[rstest]
#[case::no_namenodes(
    json!({"nameNodes": {"roleGroups": {"default": {"replicas": 0}}}}),
    "NoReplicas"
)]
#[case::single_namenode(
    json!({"nameNodes": {"roleGroups": {"default": {"replicas": 1}}}}),
    "SingleNameNode"
)]
#[case::single_namenode_over_two_groups(
    json!({"nameNodes": {"roleGroups": {"default": {"replicas": 1}, "spare": {"replicas": 0}}}}),
    "SingleNameNode"
)]
#[case::no_journalnode_groups(json!({"journalNodes": {"roleGroups": {}}}), "NoRoleGroups")]
#[case::a_group_named_after_a_pod_of_another(
    json!({"journalNodes": {"roleGroups": {"default-1": {"replicas": 1}}}}),
    "RoleGroupNameClash"
)]
#[case::a_group_named_after_a_namenode_http_service(
    json!({
        "clusterConfig": {"nameNodeHttpService": {"type": "NodePort"}},
        "nameNodes": {"roleGroups": {"default-0-http": {"replicas": 0}}}
    }),
    "RoleGroupNameClash"
)]
#[case::source_ranges_on_a_node_port(
    json!({"clusterConfig": {"nameNodeHttpService": {"type": "NodePort", "loadBalancerSourceRanges": ["10.0.0.0/8"]}}}),
    "InvalidServiceExposure"
)]
#[case::a_wildcard_namenode_domain(
    json!({"clusterConfig": {"nameNodeIngress": {"domain": "*.hdfs.example.com"}}}),
    "InvalidIngress"
)]
#[case::a_namenode_domain_in_capitals(
    json!({"clusterConfig": {"nameNodeIngress": {"domain": "HDFS.example.com"}}}),
    "InvalidIngress"
)]
#[case::an_ip_address_for_a_domain(
    json!({"clusterConfig": {"nameNodeIngress": {"domain": "192.0.2.1"}}}),
    "InvalidIngress"
)]
#[case::a_namenode_host_name_past_253_characters(
    json!({"clusterConfig": {"nameNodeIngress": {"domain": "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd.eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee.ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff.gggggggggggggggggggggggggggggggggggggggg.example.com"}}}),
    "InvalidIngress"
)]
#[case::a_namenode_ingress_class_that_is_no_name(
    json!({"clusterConfig": {"nameNodeIngress": {"domain": "hdfs.example.com", "ingressClassName": "Nginx"}}}),
    "InvalidIngress"
)]
#[case::replication_zero(json!({"clusterConfig": {"dfsReplication": 0}}), "InvalidDfsReplication")]
#[case::nameservice_override(
    json!({"nameNodes": {"configOverrides": {"hdfs-site.xml": {"dfs.nameservices": "other"}}}}),
    "ReservedConfigOverride"
)]
#[case::namenode_address_override(
    json!({"dataNodes": {"configOverrides": {"hdfs-site.xml": {"dfs.namenode.rpc-address.simple-hdfs.nn0": "x:1"}}}}),
    "ReservedConfigOverride"
)]
#[case::default_fs_override(
    json!({"dataNodes": {"roleGroups": {"default": {"configOverrides": {"core-site.xml": {"fs.defaultFS": "hdfs://x"}}}}}}),
    "ReservedConfigOverride"
)]
#[case::reformat_enabled(
    json!({"nameNodes": {"configOverrides": {"hdfs-site.xml": {"dfs.reformat.disabled": "false"}}}}),
    "ReservedConfigOverride"
)]
#[case::replication_override_past_the_scale_down_guard(
    json!({"nameNodes": {"configOverrides": {"hdfs-site.xml": {"dfs.replication": "1"}}}}),
    "ReservedConfigOverride"
)]
#[case::empty_override_value(
    json!({"nameNodes": {"configOverrides": {"hdfs-site.xml": {"dfs.blocksize": ""}}}}),
    "InvalidConfigOverride"
)]
#[case::unknown_log_level(
    json!({"nameNodes": {"configOverrides": {"log4j.properties": {"ROOT": "LOUD"}}}}),
    "InvalidConfigOverride"
)]
#[case::memory_below_the_minimum(
    json!({"journalNodes": {"config": {"resources": {"memory": {"limit": "128Mi"}}}}}),
    "MemoryLimitTooLow"
)]
#[case::shutdown_timeout(
    json!({"dataNodes": {"config": {"gracefulShutdownTimeout": "soon"}}}),
    "InvalidGracefulShutdownTimeout"
)]
fn invalid_specs_are_refused_with_a_reason(#[case] patch: Value, #[case] reason: &str) {
    match validated(patch) {
        Ok(_) => unreachable!("the spec must be refused with {reason}"),
        Err(error) => assert_eq!(error.reason(), reason, "{error}"),
    }
}

#[test]
fn overrides_of_other_keys_win() -> Result<(), ReconcileError> {
    let cluster = validated(json!({
        "dataNodes": {"configOverrides": {"hdfs-site.xml": {"dfs.datanode.du.reserved": "1073741824"}}}
    }))?;
    let datanode = cluster.role(HdfsRole::DataNode).map(|role| &role.groups[0]);
    assert!(
        datanode.is_some_and(|group| group
            .product
            .site
            .hdfs_site
            .contains("<name>dfs.datanode.du.reserved</name>")),
        "{datanode:?}"
    );
    Ok(())
}
