//! Offline rendering: the objects the operator would apply for the `ZookeeperCluster`s
//! and `ZookeeperZnode`s in a manifest file, without a Kubernetes cluster.
//!
//! - Clusters go through the same validate and build steps as the controller. The
//!   operation state comes from the spec and the `operator-command` annotation, so a
//!   stopped cluster renders with 0 replicas; a paused one renders what would be applied
//!   once reconciliation resumes.
//! - A ZNode renders its discovery ConfigMap only if its cluster is in the same file
//!   (the hosts come from the cluster); others are skipped with a [`Skipped`] note, since
//!   the file cannot say where their cluster lives. A file of such ZNodes only renders
//!   nothing, which `render` reports as an error. Its path is the one the controller
//!   would use (see [`znode_path`]).
//! - What every operator's `render` checks before this (kinds, versions, unknown fields,
//!   type errors in manifest terms, YAML 1.1-safe output) is in
//!   [`strata_operator::render`].
//! - Objects without a namespace are rendered in `default`, as `kubectl apply` would
//!   place them. The cluster domain is `cluster.local`.

use kube::ResourceExt;
use serde_json::Value;
use strata_operator::apply::DesiredObject;
use strata_operator::error::ReconcileError;
use strata_operator::render::{RenderError, Rendered, Skipped, documents_of_kind};
use strata_status::OperationState;

use crate::build::{cluster_objects, znode_discovery_config_map, znode_path};
use crate::config::zoo_cfg::CLIENT_PORT;
use crate::crd::{ZookeeperCluster, ZookeeperZnode};
use crate::validate::{DEFAULT_CLUSTER_DOMAIN, ValidatedCluster};

/// Namespace of objects that do not name one.
pub const DEFAULT_NAMESPACE: &str = "default";

/// Every object the operator would apply for the custom resources in `documents`, as
/// the JSON the apply step would send (without owner references and content hashes,
/// which need the stored owner), and the ZNodes that cannot be rendered offline.
pub fn render(documents: &[Value]) -> Result<Rendered, RenderError> {
    let mut clusters: Vec<ZookeeperCluster> = documents_of_kind(documents)?;
    let mut znodes: Vec<ZookeeperZnode> = documents_of_kind(documents)?;
    for cluster in &mut clusters {
        default_namespace(&mut cluster.metadata.namespace);
    }
    for znode in &mut znodes {
        default_namespace(&mut znode.metadata.namespace);
    }

    let mut rendered = Rendered::default();
    let mut validated = Vec::new();
    for cluster in &clusters {
        let operation = OperationState::resolve(
            cluster.spec.cluster_operation.reconciliation_paused,
            cluster.spec.cluster_operation.stopped,
            cluster.annotations(),
        );
        let invalid = |error: ReconcileError| {
            invalid_resource("ZookeeperCluster", &cluster.name_any(), &error)
        };
        let cluster = ValidatedCluster::new(cluster, DEFAULT_CLUSTER_DOMAIN).map_err(invalid)?;
        let objects = cluster_objects(&cluster)
            .into_objects(operation.is_stopped())
            .map_err(|error| RenderError::InvalidResource {
                kind: "ZookeeperCluster".to_owned(),
                name: cluster.name.to_string(),
                message: error.to_string(),
            })?;
        rendered
            .objects
            .extend(objects.into_iter().map(|object| object.into_value()));
        validated.push(cluster);
    }

    for znode in &znodes {
        let own_namespace = znode.namespace().unwrap_or_default();
        let cluster_ref = &znode.spec.cluster_ref;
        let cluster_namespace = cluster_ref.namespace_or(&own_namespace);
        let Some(cluster) = validated.iter().find(|cluster| {
            cluster.name.as_str() == cluster_ref.name && cluster.namespace == cluster_namespace
        }) else {
            rendered.skipped.push(Skipped {
                kind: "ZookeeperZnode".to_owned(),
                name: format!("{own_namespace}/{}", znode.name_any()),
                reason: format!(
                    "its cluster {cluster_namespace}/{} is not in the file, so the hosts of \
                     its discovery ConfigMap are unknown",
                    cluster_ref.name
                ),
            });
            continue;
        };
        let config_map = znode_discovery_config_map(
            znode,
            &cluster.connection_hosts(),
            &znode_path(znode),
            CLIENT_PORT,
        )
        .map_err(|error| invalid_resource("ZookeeperZnode", &znode.name_any(), &error))?;
        let object =
            DesiredObject::new(&config_map).map_err(|error| RenderError::InvalidResource {
                kind: "ZookeeperZnode".to_owned(),
                name: znode.name_any(),
                message: error.to_string(),
            })?;
        rendered.objects.push(object.into_value());
    }
    Ok(rendered)
}

fn default_namespace(namespace: &mut Option<String>) {
    if namespace.is_none() {
        *namespace = Some(DEFAULT_NAMESPACE.to_owned());
    }
}

fn invalid_resource(kind: &str, name: &str, error: &ReconcileError) -> RenderError {
    RenderError::InvalidResource {
        kind: kind.to_owned(),
        name: name.to_owned(),
        message: format!("{}: {}", error.reason(), error.message()),
    }
}

#[cfg(test)]
mod tests;
