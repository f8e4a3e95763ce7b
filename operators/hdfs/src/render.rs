//! Offline rendering: the objects the operator would apply for the `HdfsCluster`s in a
//! manifest file, without a Kubernetes cluster.
//!
//! The ZooKeeper connection comes from the ZNode discovery ConfigMap at run time, which
//! an offline render cannot read (and a manifest for this operator holds only its own
//! kinds): `ha.zookeeper.quorum` renders as a placeholder naming that ConfigMap (see
//! [`offline_quorum`]). Whether the ensemble serves TLS is in that ConfigMap too;
//! `render` shows the ZKFCs connecting over TLS with its CA, as they do to a Strata
//! ZooKeeper by default ([`offline_zookeeper`]), and the keystore Secret without its
//! store. The cluster domain is `cluster.local`; the cluster ID is unknown, as for a
//! new cluster.

use serde_json::Value;
use strata_operator::render::{Built, RenderError, Rendered, render_each};

use crate::build::{NameNodeState, cluster_objects};
use crate::config::zookeeper_tls::ZookeeperConnection;
use crate::controller::cluster::ZOOKEEPER_KEY;
use crate::crd::HdfsCluster;
use crate::validate::{DEFAULT_CLUSTER_DOMAIN, ValidatedCluster};

/// What `ha.zookeeper.quorum` renders as offline: where the value comes from at run
/// time.
pub fn offline_quorum(cluster: &HdfsCluster) -> String {
    format!(
        "{ZOOKEEPER_KEY}-of-configmap-{}:2181",
        cluster.spec.cluster_config.zookeeper_config_map_name
    )
}

/// The ZooKeeper connection `render` assumes: the placeholder quorum, over TLS with the
/// CA of that ConfigMap, as the Strata ZooKeeper operator publishes it by default.
pub fn offline_zookeeper(cluster: &HdfsCluster) -> ZookeeperConnection {
    ZookeeperConnection {
        quorum: offline_quorum(cluster),
        tls: true,
        config_map: cluster
            .spec
            .cluster_config
            .zookeeper_config_map_name
            .clone(),
        client_secret: None,
    }
}

/// Every object the operator would apply for the clusters in `documents`.
pub fn render(documents: &[Value]) -> Result<Rendered, RenderError> {
    let mut rendered = Rendered::default();
    render_each(documents, &mut rendered, |cluster: &HdfsCluster| {
        let zookeeper = offline_zookeeper(cluster);
        let model = ValidatedCluster::new(cluster, DEFAULT_CLUSTER_DOMAIN, &zookeeper)?;
        // What a new cluster records: the spec's journalnodes.
        let state = NameNodeState {
            journal_nodes: model.topology.journalnodes.clone(),
            ..NameNodeState::default()
        };
        Ok(Built {
            objects: cluster_objects(&model, &state),
            model,
        })
    })?;
    Ok(rendered)
}
