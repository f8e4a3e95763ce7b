//! The ConfigMaps: each role group's files, the namenodes' state, and the discovery
//! ConfigMap clients use.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use strata_model::build::object_meta;

use super::NameNodeState;
use super::service::NAMENODE_HTTP;
use crate::config::scripts::{FORMAT_NAMENODE, HAND_OVER_ACTIVE, REFRESH_NODES, START_ZKFC};
use crate::crd::HdfsRole;
use crate::validate::{ValidatedCluster, ValidatedRoleGroup};

/// Key of `core-site.xml`.
pub const CORE_SITE: &str = "core-site.xml";
/// Key of `hdfs-site.xml`.
pub const HDFS_SITE: &str = "hdfs-site.xml";
/// Key of `log4j.properties`.
pub const LOG4J_PROPERTIES: &str = "log4j.properties";
/// Key of the namenode's init script.
pub const FORMAT_SCRIPT: &str = "format-namenode.sh";
/// Key of the ZKFC's start script.
pub const ZKFC_SCRIPT: &str = "start-zkfc.sh";
/// Key of the refresh-nodes sidecar's script.
pub const REFRESH_NODES_SCRIPT: &str = "refresh-nodes.sh";
/// Key of the namenode's preStop hook.
pub const HAND_OVER_SCRIPT: &str = "hand-over-active.sh";
/// Key of the state ConfigMap holding the cluster ID.
pub const CLUSTER_ID_KEY: &str = "cluster-id";
/// Key of the state ConfigMap holding the excluded datanodes (`dfs.hosts.exclude`).
pub const EXCLUDED_DATANODES_KEY: &str = "datanodes";
/// The namenode state key with the journalnodes of the quorum, one host a line.
pub const JOURNAL_NODES_KEY: &str = "journalnodes";
/// The namenode state key whose change makes the active namenode's `refresh-nodes`
/// sidecar start a new edit log segment (`dfsadmin -rollEdits`), see
/// [`crate::journal_sync`].
pub const ROLL_EDITS_KEY: &str = "roll-edits";

/// `<hdfs>-<role>-<rg>`: the site files, logging, and for namenodes the scripts of the
/// init container and the ZKFC sidecar. All of it is hashed into the pod template.
pub fn role_group_config_map(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> ConfigMap {
    let mut data = BTreeMap::from([
        (CORE_SITE.to_owned(), group.product.site.core_site.clone()),
        (HDFS_SITE.to_owned(), group.product.site.hdfs_site.clone()),
        (
            LOG4J_PROPERTIES.to_owned(),
            group.product.log4j_properties.clone(),
        ),
    ]);
    if group.name.role().as_str() == <&str>::from(HdfsRole::NameNode) {
        data.insert(FORMAT_SCRIPT.to_owned(), FORMAT_NAMENODE.to_owned());
        data.insert(ZKFC_SCRIPT.to_owned(), START_ZKFC.to_owned());
        data.insert(REFRESH_NODES_SCRIPT.to_owned(), REFRESH_NODES.to_owned());
        data.insert(HAND_OVER_SCRIPT.to_owned(), HAND_OVER_ACTIVE.to_owned());
    }
    ConfigMap {
        metadata: group.object_meta(&cluster.identity.namespace),
        data: Some(data),
        ..ConfigMap::default()
    }
}

/// `<hdfs>-namenode-state`: the cluster ID the init container checks against, the
/// datanodes the namenodes exclude, and the journalnodes the namenodes are known to
/// write to (what [`crate::journal`] checks the next change against, also while the
/// cluster is stopped). Not hashed into any template: a change must reach running namenodes
/// without restarting them.
pub fn namenode_state_config_map(cluster: &ValidatedCluster, state: &NameNodeState) -> ConfigMap {
    let excluded = lines(&state.excluded_datanodes);
    ConfigMap {
        metadata: object_meta(
            &namenode_state_name(cluster),
            &cluster.identity.namespace,
            cluster.identity.labels.labels(),
        ),
        data: Some(BTreeMap::from([
            (
                CLUSTER_ID_KEY.to_owned(),
                state.cluster_id.clone().unwrap_or_default(),
            ),
            (EXCLUDED_DATANODES_KEY.to_owned(), excluded),
            (JOURNAL_NODES_KEY.to_owned(), lines(&state.journal_nodes)),
            (ROLL_EDITS_KEY.to_owned(), state.roll_edits.clone()),
        ])),
        ..ConfigMap::default()
    }
}

/// One host a line, each ending in a line break.
fn lines(hosts: &[String]) -> String {
    hosts.iter().map(|host| format!("{host}\n")).collect()
}

/// The namenode state ConfigMap's name.
pub fn namenode_state_name(cluster: &ValidatedCluster) -> String {
    format!("{}-namenode-state", cluster.identity.name)
}

/// `<hdfs>`: `core-site.xml` and `hdfs-site.xml` that an in-cluster client uses as they
/// are (`HADOOP_CONF_DIR` pointing at the mounted ConfigMap), and where each namenode's
/// web UI is reached from outside the cluster, once its exposed Service has an address
/// ([`namenode_http_prefix`]).
pub fn discovery_config_map(cluster: &ValidatedCluster) -> ConfigMap {
    let mut data = BTreeMap::from([
        (CORE_SITE.to_owned(), cluster.discovery.core_site.clone()),
        (HDFS_SITE.to_owned(), cluster.discovery.hdfs_site.clone()),
    ]);
    for (pod, address) in &cluster.namenode_http_addresses {
        data.extend(address.discovery_keys(
            &namenode_http_prefix(pod),
            NAMENODE_HTTP.name,
            NAMENODE_HTTP.number,
        ));
    }
    for (pod, url) in &cluster.namenode_ingress_urls {
        data.insert(
            format!("{}_EXTERNAL_URL", namenode_http_prefix(pod)),
            url.clone(),
        );
    }
    ConfigMap {
        metadata: object_meta(
            cluster.identity.name.as_str(),
            &cluster.identity.namespace,
            cluster.identity.labels.labels(),
        ),
        data: Some(data),
        ..ConfigMap::default()
    }
}

/// The prefix of a namenode's external address keys in discovery: its pod name in
/// capitals with `_` for `-`, then `_HTTP`, so the keys are environment variable names
/// (`SIMPLE_HDFS_NAMENODE_DEFAULT_0_HTTP_EXTERNAL_HOST` and `..._EXTERNAL_PORT` for a
/// load balancer, `..._HTTP_NODE_PORT` for a node port, `..._HTTP_EXTERNAL_URL` through
/// an Ingress).
pub fn namenode_http_prefix(pod: &str) -> String {
    format!("{}_HTTP", pod.to_ascii_uppercase().replace('-', "_"))
}
