//! Offline rendering: the objects the operator would apply for the `ZookeeperCluster`s
//! and `ZookeeperZnode`s in a manifest file, without a Kubernetes cluster.
//!
//! - Clusters go through the same validate and build steps as the controller. The
//!   operation state comes from the spec and the `operator-command` annotation, so a
//!   stopped cluster renders with 0 replicas; a paused one renders what would be applied
//!   once reconciliation resumes.
//! - A ZNode renders its discovery ConfigMap only if its cluster is in the same file
//!   (the hosts come from the cluster) and its path is known: recorded in its status or
//!   named after its uid, as for an object read back from a cluster (see [`znode_path`]).
//!   A new ZNode has neither, since the API server assigns the uid; it is skipped with a
//!   [`Skipped`] note rather than rendered with a path that will never exist. A file of
//!   skipped resources only renders nothing, which `render` reports as an error.
//! - What every operator's `render` checks before this (kinds, versions, unknown fields,
//!   type errors in manifest terms, YAML 1.1-safe output) is in
//!   [`strata_operator::render`].
//! - Objects without a namespace are rendered in `default`, as `kubectl apply` would
//!   place them. The cluster domain is `cluster.local`.

use kube::ResourceExt;
use serde_json::Value;
use strata_operator::apply::DesiredObject;
use strata_operator::render::{
    Built, RenderError, Rendered, Skipped, documents_of_kind, render_each,
};

use strata_operator::certificates::rendered_secrets;

use crate::build::certificates::certificate_request;
use crate::build::{DiscoveryTls, cluster_objects, znode_discovery_config_map, znode_path};
use crate::config::tls::SECURE_CLIENT_PORT;
use crate::config::zoo_cfg::CLIENT_PORT;
use crate::crd::{ZookeeperCluster, ZookeeperZnode};
use crate::validate::{
    CertificateSource, DEFAULT_CLUSTER_DOMAIN, ValidatedCluster, znode_namespace_allowed,
};

/// Every object the operator would apply for the custom resources in `documents`, as
/// the JSON the apply step would send (without owner references and content hashes,
/// which need the stored owner), and the ZNodes that cannot be rendered offline.
pub fn render(documents: &[Value]) -> Result<Rendered, RenderError> {
    let mut rendered = Rendered::default();
    let clusters = render_each(documents, &mut rendered, |cluster: &ZookeeperCluster| {
        let model = ValidatedCluster::new(cluster, DEFAULT_CLUSTER_DOMAIN)?;
        let mut objects = cluster_objects(&model);
        if let Some(CertificateSource::Operator { lifetime }) =
            model.tls.as_ref().map(|tls| &tls.certificates)
        {
            for secret in rendered_secrets(&certificate_request(&model, *lifetime)) {
                objects.push(secret);
            }
        }
        Ok(Built { objects, model })
    })?;

    let raw_clusters = documents_of_kind::<ZookeeperCluster>(documents)?;
    for znode in documents_of_kind::<ZookeeperZnode>(documents)? {
        let own_namespace = znode.namespace().unwrap_or_default();
        let cluster_ref = &znode.spec.cluster_ref;
        let cluster_namespace = cluster_ref.namespace_or(&own_namespace);
        let Some(cluster) = clusters.iter().find(|cluster| {
            cluster.identity.name.as_str() == cluster_ref.name
                && cluster.identity.namespace == cluster_namespace
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
        let name = znode.name_any();
        let raw_cluster = raw_clusters.iter().find(|raw| {
            raw.name_any() == cluster_ref.name
                && raw.namespace().unwrap_or_default() == cluster_namespace
        });
        if let Some(Err(refused)) = raw_cluster.map(|raw| znode_namespace_allowed(&znode, raw)) {
            rendered.skipped.push(Skipped {
                kind: "ZookeeperZnode".to_owned(),
                name: format!("{own_namespace}/{name}"),
                reason: refused.to_string(),
            });
            continue;
        }
        let Some(path) = znode_path(&znode) else {
            rendered.skipped.push(Skipped {
                kind: "ZookeeperZnode".to_owned(),
                name: format!("{own_namespace}/{name}"),
                reason: "its path in ZooKeeper is named after the uid the API server assigns \
                         when the ZNode is created, so its discovery ConfigMap cannot be \
                         rendered before that"
                    .to_owned(),
            });
            continue;
        };
        let port = match cluster.tls {
            Some(_) => SECURE_CLIENT_PORT,
            None => CLIENT_PORT,
        };
        let tls = cluster.tls.as_ref().map(|tls| DiscoveryTls {
            ca_pem: None,
            client_auth_required: tls.settings.client_auth_required,
        });
        let config_map = znode_discovery_config_map(
            &znode,
            &cluster.connection_hosts_at(port),
            &path,
            port,
            tls,
        )
        .map_err(|error| RenderError::refused::<ZookeeperZnode>(&name, &error))?;
        let object = DesiredObject::new(&config_map)
            .map_err(|error| RenderError::invalid::<ZookeeperZnode>(&name, &error))?;
        rendered.objects.push(object.into_value());
    }
    Ok(rendered)
}

#[cfg(test)]
mod tests;
