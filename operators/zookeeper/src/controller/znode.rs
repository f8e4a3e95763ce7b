//! The ZNode controller: reserve a path in the referenced ensemble, publish
//! its discovery ConfigMap, and remove the path only when the ZNode object is
//! deleted.
//!
//! Pipeline: dereference the cluster (from the cluster watch cache), check that the
//! cluster allows the ZNode's namespace ([`znode_namespace_allowed`]), record
//! the path in status before using it, create the path over the network,
//! apply the discovery ConfigMap (and, with the operator's certificates, the
//! ZNode's client certificate Secret: [`crate::build::znode_client`]), write the
//! status.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::DeleteParams;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::finalizer::Event as FinalizerEvent;
use kube::{Resource, ResourceExt};
use strata_certificates::authority::CertificateAuthority;
use strata_operator::apply::DesiredObjects;
use strata_operator::controller::Context;
use strata_operator::error::ReconcileError;
use strata_operator::pipeline::Operated;
use strata_operator::reference::Target;
use strata_operator::status::next_resource_status;

use super::client_tls::{client_tls, read_optional};
use crate::build::discovery::external_keys;
use crate::build::znode_client::{
    ClientSigning, ZOOKEEPER_CLIENT_SECRET_KEY, client_secret, client_secret_name,
};
use crate::build::{DiscoveryTls, znode_discovery_config_map, znode_path};
use crate::config::tls::SECURE_CLIENT_PORT;
use crate::config::zoo_cfg::CLIENT_PORT;
use crate::crd::{ClientAuthentication, ZnodeStatus, ZookeeperCluster, ZookeeperZnode};
use crate::validate::znode_namespace_allowed;
use crate::znode_client::{ZnodeClient, ZnodeError};

/// The finalizer that keeps a ZNode object until its path is removed.
pub const FINALIZER: &str = "zookeeper.strata.dev/znode-path";

/// How the controller reaches an ensemble. In a cluster this is the client
/// Service; tests point it at a local server.
pub trait EnsembleAddress: Send + Sync {
    /// The `host:port[,host:port]` connection string of a cluster's client `port`.
    fn hosts(&self, cluster: &ZookeeperCluster, port: u16) -> String;
}

/// The client Service `<cluster>.<namespace>.svc.<domain>:<port>`.
#[derive(Clone, Debug)]
pub struct ClientServiceAddress {
    /// The cluster's DNS domain, usually `cluster.local`.
    pub cluster_domain: String,
}

impl EnsembleAddress for ClientServiceAddress {
    fn hosts(&self, cluster: &ZookeeperCluster, port: u16) -> String {
        format!(
            "{}.{}.svc.{}:{port}",
            cluster.name_any(),
            cluster.namespace().unwrap_or_default(),
            self.cluster_domain
        )
    }
}

/// What the ZNode controller needs beyond the shared context. Clusters are read
/// from the controller's reference cache (`context.references`), never fetched.
pub struct ZnodeContext {
    /// How to reach an ensemble.
    pub address: Arc<dyn EnsembleAddress>,
    /// Bound on every ZooKeeper operation, connect included.
    pub timeout: Duration,
    /// Requeue interval of an Available ZNode ([`super::ZNODE_CHECK_PERIOD`]).
    pub check_period: Duration,
}

impl std::fmt::Debug for ZnodeContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZnodeContext")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Reconciles one ZNode under the controller's finalizer.
pub async fn reconcile(
    znode: Arc<ZookeeperZnode>,
    context: Arc<Context<ZnodeContext>>,
) -> Result<Action, ReconcileError> {
    context
        .finalized(znode, |event| async {
            match event {
                FinalizerEvent::Apply(znode) => apply(&znode, &context).await,
                FinalizerEvent::Cleanup(znode) => cleanup(&znode, &context).await,
            }
        })
        .await
}

/// The cluster a ZNode names: the registered reference of the ZNode controller.
pub fn cluster_reference(znode: &ZookeeperZnode) -> Vec<Target> {
    let own_namespace = znode.namespace().unwrap_or_default();
    let reference = &znode.spec.cluster_ref;
    vec![Target::named(
        reference.namespace_or(&own_namespace),
        &reference.name,
    )]
}

/// Step 1, dereference: the ZNode's cluster, from the reference cache.
fn referenced_cluster(
    znode: &ZookeeperZnode,
    context: &Context<ZnodeContext>,
) -> Result<Arc<ZookeeperCluster>, ReconcileError> {
    let own_namespace = znode.namespace().unwrap_or_default();
    let reference = &znode.spec.cluster_ref;
    let namespace = reference.namespace_or(&own_namespace);
    context
        .references
        .get::<ZookeeperCluster>(namespace, &reference.name)
        .map_err(ReconcileError::from)?
        .ok_or_else(|| {
            ReconcileError::transient(
                "ClusterNotFound",
                format!(
                    "ZookeeperCluster {namespace}/{} does not exist",
                    reference.name
                ),
            )
        })
}

/// Deletes the ZNode's client certificate Secret, if one was issued before its
/// namespace was refused: pods that mount it lose it at their next start. A copy taken
/// meanwhile stays valid until it expires.
async fn withdraw_client_certificate(
    znode: &ZookeeperZnode,
    context: &Context<ZnodeContext>,
) -> Result<(), ReconcileError> {
    let namespace = znode.namespace().unwrap_or_default();
    let name = client_secret_name(&znode.name_any());
    let api: Api<Secret> = Api::namespaced(context.client.clone(), &namespace);
    match api.delete(&name, &DeleteParams::default()).await {
        Ok(_) => {
            tracing::info!(znode = %znode.name_any(), secret = %name, "client certificate withdrawn: the cluster does not allow the ZNode's namespace");
            Ok(())
        }
        Err(kube::Error::Api(response)) if response.code == 404 => Ok(()),
        Err(source) => Err(ReconcileError::from_kube(
            "SecretDeleteFailed",
            format!("withdrawing the client certificate Secret {namespace}/{name}"),
            source,
        )),
    }
}

/// A connected client, and what the ZNode's discovery ConfigMap says of the connection.
struct Connected {
    client: ZnodeClient,
    hosts: String,
    port: u16,
    ca_pem: Option<String>,
    signer: Option<(CertificateAuthority, Duration)>,
}

/// Connects to the cluster's ensemble: over TLS on the secure port unless the cluster
/// turned TLS off, trusting the cluster's CA and presenting a certificate its client CA
/// signed.
async fn connect(
    cluster: &ZookeeperCluster,
    context: &Context<ZnodeContext>,
) -> Result<Connected, ReconcileError> {
    let tls = client_tls(cluster, context).await?;
    let port = if tls.is_some() {
        SECURE_CLIENT_PORT
    } else {
        CLIENT_PORT
    };
    let hosts = context.extra.address.hosts(cluster, port);
    let timeout = context.extra.timeout;
    let client = match &tls {
        Some(tls) => ZnodeClient::connect_secure(&hosts, timeout, &tls.client).await,
        None => ZnodeClient::connect(&hosts, timeout).await,
    }
    .map_err(|error| ensemble_error(error, &format!("connecting to {hosts}")))?;
    let (ca_pem, signer) = match tls {
        Some(tls) => (Some(tls.client.ca_pem), tls.signer),
        None => (None, None),
    };
    Ok(Connected {
        client,
        hosts,
        port,
        ca_pem,
        signer,
    })
}

fn ensemble_error(error: ZnodeError, doing: &str) -> ReconcileError {
    let message = format!("{doing} failed: {error}");
    if error.is_transient() {
        ReconcileError::transient("EnsembleUnreachable", message)
    } else {
        ReconcileError::invalid_spec("ZnodeOperationFailed", message)
    }
}

async fn apply(
    znode: &ZookeeperZnode,
    context: &Context<ZnodeContext>,
) -> Result<Action, ReconcileError> {
    let mut stored = znode.status.clone();
    let result = apply_steps(znode, context, &mut stored).await;
    let status = next_status(znode, stored.as_ref(), result.as_ref().err());
    context
        .write_status(znode, stored.as_ref(), &status)
        .await?;
    result.map(|()| Action::requeue(context.extra.check_period))
}

/// Dereference, record the path, create it, publish discovery. `stored`
/// follows every status write so the final status write compares against
/// what the API server really holds.
async fn apply_steps(
    znode: &ZookeeperZnode,
    context: &Context<ZnodeContext>,
    stored: &mut Option<ZnodeStatus>,
) -> Result<(), ReconcileError> {
    let cluster = referenced_cluster(znode, context)?;
    // Step 2, the cluster owner's consent.
    if let Err(refused) = znode_namespace_allowed(znode, &cluster) {
        withdraw_client_certificate(znode, context).await?;
        return Err(refused);
    }
    let Some(path) = znode_path(znode) else {
        return Err(ReconcileError::transient(
            "ZnodeNotPersisted",
            "the ZNode has no uid yet",
        ));
    };
    record_path(znode, &path, context, stored).await?;

    let connected = connect(&cluster, context).await?;
    connected
        .client
        .ensure_path(&path)
        .await
        .map_err(|error| ensemble_error(error, &format!("creating {path}")))?;

    let mut desired = DesiredObjects::new();
    let mut discovery = znode_discovery_config_map(
        znode,
        &connected.hosts,
        &path,
        connected.port,
        connected.ca_pem.as_deref().map(|ca_pem| DiscoveryTls {
            ca_pem: Some(ca_pem),
            client_auth_required: cluster.spec.cluster_config.tls.client_authentication
                == ClientAuthentication::Required,
        }),
    )?;
    if let Some((authority, lifetime)) = &connected.signer {
        let namespace = znode.namespace().unwrap_or_default();
        let name = client_secret_name(&znode.name_any());
        let existing = read_optional(context, &namespace, &name).await?;
        let secret = client_secret(
            &znode.name_any(),
            &namespace,
            discovery.metadata.labels.clone().unwrap_or_default(),
            ClientSigning {
                ca: authority,
                trusted_pem: connected.ca_pem.as_deref().unwrap_or_default(),
                lifetime: *lifetime,
            },
            existing.as_ref(),
            SystemTime::now(),
        )?;
        if let Some(reason) = &secret.issued {
            tracing::info!(znode = %znode.name_any(), secret = %name, %reason, "client certificate issued");
        }
        desired.push_sealed(secret.shown, secret.sealed);
        if let Some(data) = discovery.data.as_mut() {
            data.insert(ZOOKEEPER_CLIENT_SECRET_KEY.to_owned(), name);
        }
    }
    let external = cluster_external_keys(&cluster, context).await?;
    if let Some(data) = discovery.data.as_mut() {
        data.extend(external);
    }
    desired.push(discovery);
    context.apply(znode, desired, false).await?;
    Ok(())
}

/// The external address the cluster's discovery ConfigMap publishes, if any. The ZNode
/// is checked again every check period, which is how a new address reaches it.
async fn cluster_external_keys(
    cluster: &ZookeeperCluster,
    context: &Context<ZnodeContext>,
) -> Result<BTreeMap<String, String>, ReconcileError> {
    let namespace = cluster.namespace().unwrap_or_default();
    let name = cluster.name_any();
    let api: Api<ConfigMap> = Api::namespaced(context.client.clone(), &namespace);
    let stored = api.get_opt(&name).await.map_err(|source| {
        ReconcileError::from_kube(
            "ConfigMapReadFailed",
            format!("reading the discovery ConfigMap {namespace}/{name}"),
            source,
        )
    })?;
    Ok(stored
        .and_then(|config_map| config_map.data)
        .map(|data| external_keys(&data))
        .unwrap_or_default())
}

/// Writes the path to status before it is used, so a crash between creating
/// the path and recording it can never leave an untracked path behind.
async fn record_path(
    znode: &ZookeeperZnode,
    path: &str,
    context: &Context<ZnodeContext>,
    stored: &mut Option<ZnodeStatus>,
) -> Result<(), ReconcileError> {
    if stored
        .as_ref()
        .and_then(|status| status.znode_path.as_deref())
        == Some(path)
    {
        return Ok(());
    }
    let mut recorded = stored.clone().unwrap_or_default();
    recorded.znode_path = Some(path.to_owned());
    context
        .write_status(znode, stored.as_ref(), &recorded)
        .await?;
    *stored = Some(recorded);
    Ok(())
}

/// The annotation that releases a ZNode's finalizer without removing its path: for a
/// path that cannot be removed (ACLs, an ensemble that is gone for good) and data the
/// user wants to keep.
pub const KEEP_PATH_ANNOTATION: &str = "zookeeper.strata.dev/keep-path";

/// Removes the path of a deleted ZNode, then lets the finalizer go.
///
/// The path is kept, and the finalizer released, when the ZNode carries
/// [`KEEP_PATH_ANNOTATION`]`: "true"` or when the cluster is gone (its volumes hold the
/// data). While the path cannot be removed (the cluster is stopped, the ensemble is
/// unreachable, ACLs refuse the delete) the ZNode says why in Degraded, with a Warning
/// Event and a log line that name the annotation, and the operator retries.
async fn cleanup(
    znode: &ZookeeperZnode,
    context: &Context<ZnodeContext>,
) -> Result<Action, ReconcileError> {
    let Some(path) = znode
        .status
        .as_ref()
        .and_then(|status| status.znode_path.clone())
    else {
        return Ok(Action::await_change());
    };
    if znode
        .annotations()
        .get(KEEP_PATH_ANNOTATION)
        .is_some_and(|value| value == "true")
    {
        let note = format!("{path} is kept, as the {KEEP_PATH_ANNOTATION} annotation asks");
        tracing::info!(znode = %znode.name_any(), "{note}");
        context
            .publish_event(znode, EventType::Normal, "PathKept", "RemovePath", note)
            .await;
        return Ok(Action::await_change());
    }
    let Ok(cluster) = referenced_cluster(znode, context) else {
        let note = format!(
            "ZookeeperCluster {} is gone, so {path} could not be removed; its data stays on the cluster's volumes",
            znode.spec.cluster_ref.name
        );
        tracing::warn!(znode = %znode.name_any(), "{note}");
        context
            .publish_event(znode, EventType::Warning, "ClusterGone", "RemovePath", note)
            .await;
        return Ok(Action::await_change());
    };
    match remove_path(&cluster, &path, context).await {
        Ok(()) => {
            tracing::info!(znode = %znode.name_any(), path, "removed the znode path");
            Ok(Action::await_change())
        }
        Err(error) => {
            let error = error.with_hint(&format!(
                "to delete the ZNode and keep the path, annotate it with {KEEP_PATH_ANNOTATION}=true"
            ));
            tracing::warn!(znode = %znode.name_any(), reason = error.reason(), "{}", error.message());
            context
                .publish_event(
                    znode,
                    EventType::Warning,
                    error.reason(),
                    "RemovePath",
                    error.message().to_owned(),
                )
                .await;
            let stored = znode.status.as_ref();
            let status = next_status(znode, stored, Some(&error));
            context.write_status(znode, stored, &status).await?;
            Err(error)
        }
    }
}

/// Deletes `path` from the cluster's ensemble, unless the cluster is stopped.
async fn remove_path(
    cluster: &ZookeeperCluster,
    path: &str,
    context: &Context<ZnodeContext>,
) -> Result<(), ReconcileError> {
    if cluster.operation_state().is_stopped() {
        return Err(ReconcileError::transient(
            "ClusterStopped",
            format!(
                "ZookeeperCluster {} is stopped, so {path} cannot be removed until it runs again",
                cluster.name_any()
            ),
        ));
    }
    let connected = connect(cluster, context).await?;
    connected
        .client
        .delete_recursive(path)
        .await
        .map_err(|error| {
            if error.is_access_denied() {
                ReconcileError::invalid_spec(
                    "PathProtectedByAcl",
                    format!(
                        "removing {path} failed: ZooKeeper refused it, because the application set \
                     ACLs on its nodes; remove the ACLs or delete the nodes with the \
                     application's credentials"
                    ),
                )
            } else {
                ensemble_error(error, &format!("removing {path}"))
            }
        })
}

/// The ZNode's status: Available when the path exists and the discovery ConfigMap is
/// applied; Degraded with the failure's reason otherwise. The recorded path stays.
pub fn next_status(
    znode: &ZookeeperZnode,
    stored: Option<&ZnodeStatus>,
    failure: Option<&ReconcileError>,
) -> ZnodeStatus {
    ZnodeStatus {
        znode_path: stored.and_then(|status| status.znode_path.clone()),
        resource: next_resource_status(
            stored.map(|status| &status.resource),
            znode.meta().generation,
            failure.map_or(
                Ok("The znode exists and its discovery ConfigMap is published."),
                Err,
            ),
            Time(jiff::Timestamp::now()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use rstest::rstest;

    use strata_status::{ConditionStatus, ConditionType};

    use super::*;
    use crate::crd::{ClusterRef, ZookeeperZnodeSpec};

    fn condition(
        status: &ZnodeStatus,
        type_: ConditionType,
    ) -> Option<(ConditionStatus, &str, &str)> {
        status
            .resource
            .conditions
            .iter()
            .find(|condition| condition.type_ == type_)
            .map(|condition| {
                (
                    condition.status,
                    condition.reason.as_str(),
                    condition.message.as_str(),
                )
            })
    }

    #[rstest]
    #[case::cluster_missing_retries(
        ReconcileError::transient("ClusterNotFound", "ZookeeperCluster default/zk does not exist"),
        "ClusterNotFound",
        "ZookeeperCluster default/zk does not exist. The operator retries automatically."
    )]
    #[case::message_already_a_sentence(
        ReconcileError::transient("EnsembleUnreachable", "Connecting failed."),
        "EnsembleUnreachable",
        "Connecting failed. The operator retries automatically."
    )]
    #[case::user_must_act(
        ReconcileError::invalid_spec("InvalidZnodePath", "the path is the root"),
        "InvalidZnodePath",
        "the path is the root. The operator cannot continue until this is fixed."
    )]
    fn failure_sets_available_false_and_degraded_true_with_a_sentence(
        #[case] failure: ReconcileError,
        #[case] reason: &str,
        #[case] message: &str,
    ) {
        let znode = ZookeeperZnode::new(
            "app",
            ZookeeperZnodeSpec {
                cluster_ref: ClusterRef {
                    name: "zk".to_owned(),
                    namespace: None,
                },
            },
        );
        let status = next_status(&znode, None, Some(&failure));
        assert_eq!(
            condition(&status, ConditionType::Available),
            Some((ConditionStatus::False, reason, message))
        );
        assert_eq!(
            condition(&status, ConditionType::Degraded),
            Some((ConditionStatus::True, reason, message))
        );
    }

    /// The cluster `zk` in namespace `data`, allowing ZNodes from `listed`.
    fn cluster_allowing(listed: &[&str]) -> ZookeeperCluster {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "zookeeper.strata.dev/v1alpha1",
            "kind": "ZookeeperCluster",
            "metadata": {"name": "zk", "namespace": "data"},
            "spec": {
                "clusterConfig": {"znodeNamespaces": listed},
                "servers": {"roleGroups": {"default": {}}},
            },
        }))
        .unwrap_or_else(|error| unreachable!("a cluster: {error}"))
    }

    #[rstest]
    #[case::the_clusters_own_namespace("data", &[], true)]
    #[case::a_listed_namespace("tenant", &["tenant"], true)]
    #[case::an_unlisted_namespace("tenant", &["other"], false)]
    #[case::no_namespace_listed("tenant", &[], false)]
    #[case::a_name_that_only_starts_alike("tenant-b", &["tenant"], false)]
    fn only_namespaces_the_clusters_owner_allows_get_a_znode(
        #[case] znode_namespace: &str,
        #[case] listed: &[&str],
        #[case] allowed: bool,
    ) {
        let mut znode = ZookeeperZnode::new(
            "app",
            ZookeeperZnodeSpec {
                cluster_ref: ClusterRef {
                    name: "zk".to_owned(),
                    namespace: Some("data".to_owned()),
                },
            },
        );
        znode.metadata.namespace = Some(znode_namespace.to_owned());
        let outcome = znode_namespace_allowed(&znode, &cluster_allowing(listed));
        assert_eq!(outcome.is_ok(), allowed, "{outcome:?}");
        if let Err(refused) = outcome {
            assert_eq!(refused.reason(), "ZnodeNamespaceNotAllowed");
            assert!(!refused.is_transient());
            assert!(
                refused
                    .to_string()
                    .contains("spec.clusterConfig.znodeNamespaces"),
                "{refused}"
            );
        }
    }
}
