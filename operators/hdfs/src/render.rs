//! Offline rendering: the objects the operator would apply for the `HdfsCluster`s in a
//! manifest file, without a Kubernetes cluster.
//!
//! The ZooKeeper connection comes from the ZNode discovery ConfigMap at run time, which
//! a file does not have: it renders as the placeholder [`OFFLINE_ZOOKEEPER_QUORUM`]
//! unless the file holds the named ConfigMap itself. The cluster domain is
//! `cluster.local`; the cluster ID is unknown, as for a new cluster.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use serde_json::Value;
use strata_operator::render::{Built, RenderError, Rendered, render_each};

use crate::build::{NameNodeState, cluster_objects};
use crate::controller::cluster::quorum_of;
use crate::crd::HdfsCluster;
use crate::validate::{DEFAULT_CLUSTER_DOMAIN, ValidatedCluster};

/// What `ha.zookeeper.quorum` renders as when the ZNode ConfigMap is not in the file.
pub const OFFLINE_ZOOKEEPER_QUORUM: &str = "zookeeper-from-znode-configmap:2181";

/// Every object the operator would apply for the clusters in `documents`.
pub fn render(documents: &[Value]) -> Result<Rendered, RenderError> {
    let config_maps: Vec<ConfigMap> = documents
        .iter()
        .filter(|document| document["kind"] == "ConfigMap" && document["apiVersion"] == "v1")
        .filter_map(|document| serde_json::from_value(document.clone()).ok())
        .collect();
    let mut rendered = Rendered::default();
    render_each(documents, &mut rendered, |cluster: &HdfsCluster| {
        let namespace = cluster.namespace().unwrap_or_else(|| "default".to_owned());
        let wanted = &cluster.spec.cluster_config.zookeeper_config_map_name;
        let quorum = config_maps
            .iter()
            .find(|config_map| {
                &config_map.name_any() == wanted
                    && config_map
                        .namespace()
                        .unwrap_or_else(|| "default".to_owned())
                        == namespace
            })
            .and_then(quorum_of)
            .unwrap_or_else(|| OFFLINE_ZOOKEEPER_QUORUM.to_owned());
        let model = ValidatedCluster::new(cluster, DEFAULT_CLUSTER_DOMAIN, &quorum)?;
        Ok(Built {
            objects: cluster_objects(&model, &NameNodeState::default()),
            stopped: cluster
                .spec
                .cluster_operation
                .state(cluster.annotations())
                .is_stopped(),
            model,
        })
    })?;
    Ok(rendered)
}
