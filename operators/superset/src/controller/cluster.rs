//! The SupersetCluster controller: the five pipeline steps, in order.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Secret, Service};
use kube::ResourceExt;
use kube::runtime::controller::Action;
use strata_model::exposure::ExternalAddress;
use strata_operator::controller::Context;
use strata_operator::error::ReconcileError;
use strata_operator::pipeline::Operated;
use strata_operator::pipeline::{Failed, Prepared};
use strata_operator::reference::{KeySource, KeysRead, Target};

use crate::build::build;
use crate::build::secret_key::SECRET_KEY_KEY;
use crate::crd::{CaCertificate, SupersetCluster};
use crate::validate::celery::REDIS_CA_FIELD;
use crate::validate::{
    CA_FIELD, CA_KEY, DISCOVERY_KEYS, LDAP_CA_FIELD, SecretKeySource, ValidatedCluster,
};

/// What the controller needs beyond the shared context.
#[derive(Clone, Debug)]
pub struct ClusterContext {
    /// The cluster's DNS domain.
    pub cluster_domain: String,
}

/// The Secrets a cluster names: the controller's declared references, so a Secret
/// that appears or changes requeues the cluster. Only their key names are cached.
pub fn secret_references(cluster: &SupersetCluster) -> Vec<Target> {
    let namespace = cluster.namespace().unwrap_or_default();
    let config = &cluster.spec.cluster_config;
    let database = &config.metadata_database;
    let auth = config.authentication.as_ref();
    database
        .postgresql
        .iter()
        .map(|postgresql| postgresql.credentials_secret.clone())
        .chain(
            database
                .generic
                .iter()
                .map(|generic| generic.uri_secret.clone()),
        )
        .chain(
            config
                .admin_user
                .iter()
                .map(|admin| admin.secret_name.clone()),
        )
        .chain(config.mapbox_api_key_secret.iter().cloned())
        .chain(config.redis.iter().flat_map(|redis| {
            redis
                .password_secret
                .iter()
                .chain(redis.url_secret.iter())
                .cloned()
        }))
        // The user's key, or the generated one, whose keys are checked when it exists.
        .chain(Some(config.secret_key_secret.clone().unwrap_or_else(
            || format!("{}-secret-key", cluster.name_any()),
        )))
        .chain(
            auth.and_then(|auth| auth.ldap.as_ref())
                .map(|ldap| ldap.bind_password_secret.clone()),
        )
        .chain(
            auth.and_then(|auth| auth.oidc.as_ref())
                .map(|oidc| oidc.client_secret_secret.clone()),
        )
        .chain(database_ca(cluster).and_then(|ca| ca.secret_name.clone()))
        .chain(
            config
                .trino_connections
                .iter()
                .filter_map(|connection| connection.credentials_secret.clone()),
        )
        .map(|name| Target::named(namespace.clone(), name))
        .collect()
}

/// The ConfigMaps a cluster names: the metadata database's, Redis's and the LDAP
/// server's CAs, when they are in one, and the discovery ConfigMaps of the Trino clusters it connects to.
pub fn config_map_references(cluster: &SupersetCluster) -> Vec<Target> {
    let namespace = cluster.namespace().unwrap_or_default();
    database_ca(cluster)
        .into_iter()
        .chain(redis_ca(cluster))
        .chain(ldap_ca(cluster))
        .filter_map(|ca| ca.config_map_name.clone())
        .chain(
            cluster
                .spec
                .cluster_config
                .trino_connections
                .iter()
                .map(|connection| connection.discovery_config_map.clone()),
        )
        .map(|name| Target::named(namespace.clone(), name))
        .collect()
}

fn ldap_ca(cluster: &SupersetCluster) -> Option<&CaCertificate> {
    let authentication = cluster.spec.cluster_config.authentication.as_ref()?;
    authentication.ldap.as_ref()?.ca_certificate.as_ref()
}

fn redis_ca(cluster: &SupersetCluster) -> Option<&CaCertificate> {
    cluster
        .spec
        .cluster_config
        .redis
        .as_ref()?
        .tls
        .as_ref()?
        .ca_certificate
        .as_ref()
}

fn database_ca(cluster: &SupersetCluster) -> Option<&CaCertificate> {
    let postgresql = cluster
        .spec
        .cluster_config
        .metadata_database
        .postgresql
        .as_ref()?;
    postgresql.tls.as_ref()?.ca_certificate.as_ref()
}

/// A generated `SECRET_KEY` Secret that exists already is adopted as it is, so it
/// must hold the key before any pod reads it; one that does not exist yet is
/// created by the apply step. Its version does not roll the pods: the operator never
/// changes it, and its creation must not restart a new cluster.
fn check_adopted_secret_key(
    validated: &ValidatedCluster,
    context: &Context<ClusterContext>,
) -> Result<(), ReconcileError> {
    let SecretKeySource::Generated(name) = &validated.secret_key else {
        return Ok(());
    };
    let namespace = &validated.identity.namespace;
    let exists = context
        .references
        .get::<Secret>(namespace, name)
        .map_err(ReconcileError::from)?
        .is_some();
    if exists {
        context
            .references
            .check_keys(
                namespace,
                [KeysRead {
                    object: KeySource::Secret,
                    name,
                    keys: vec![SECRET_KEY_KEY],
                    field: "the generated SECRET_KEY Secret (clusterConfig.secretKeySecret unset)",
                }],
            )
            .map_err(ReconcileError::from)?;
    }
    Ok(())
}

/// Reconciles one SupersetCluster.
///
/// 1. Dereference: the Secrets it names must exist with the keys the pods read (from
///    a keys-only cache; their values go to the pods by reference, never through the
///    operator).
/// 2. Validate: the spec becomes a checked model with `superset_config.py` rendered.
/// 3. Build: pure functions turn the model into desired objects.
/// 4. Apply (nothing while paused, workloads at zero while stopped), prune.
/// 5. Report: conditions from the StatefulSets and pods, written on change.
pub async fn reconcile(
    cluster: Arc<SupersetCluster>,
    context: Arc<Context<ClusterContext>>,
) -> Result<Action, ReconcileError> {
    let operation = cluster.operation_state();
    let applied = async {
        let prepared = prepare(&cluster, &context)?;
        context
            .apply_prepared(cluster.as_ref(), &operation, prepared)
            .await
    }
    .await;
    context.report(cluster.as_ref(), &operation, applied).await
}

/// Steps 1 to 3.
fn prepare(
    cluster: &SupersetCluster,
    context: &Context<ClusterContext>,
) -> Result<Prepared, Failed> {
    let validated = ValidatedCluster::new(cluster, &context.extra.cluster_domain)?;
    let secrets = validated.secrets();
    let database_ca = validated.database.ca().map(|ca| (ca, CA_FIELD));
    let redis_ca = validated
        .redis
        .as_ref()
        .and_then(|redis| redis.ca())
        .map(|ca| (ca, REDIS_CA_FIELD));
    let ldap_ca = validated.ldap_ca.as_ref().map(|ca| (ca, LDAP_CA_FIELD));
    let ca = database_ca
        .into_iter()
        .chain(redis_ca)
        .chain(ldap_ca)
        .map(|(ca, field)| KeysRead {
            object: ca.object,
            name: &ca.name,
            keys: vec![CA_KEY],
            field,
        });
    // A Trino that moves, or turns TLS on, is re-registered by the init containers.
    let discovery = validated
        .trino_connections
        .iter()
        .map(|connection| KeysRead {
            object: KeySource::ConfigMap,
            name: &connection.discovery_config_map,
            keys: DISCOVERY_KEYS.to_vec(),
            field: "clusterConfig.trinoConnections[].discoveryConfigMap",
        });
    let versions = context
        .references
        .check_keys(
            &validated.identity.namespace,
            secrets
                .iter()
                .map(|secret| KeysRead {
                    object: KeySource::Secret,
                    name: &secret.name,
                    keys: secret.keys.clone(),
                    field: secret.field,
                })
                .chain(ca)
                .chain(discovery),
        )
        .map_err(ReconcileError::from)?;
    check_adopted_secret_key(&validated, context)?;
    let client_service = validated.identity.name.client_service_name();
    let stored = context
        .caches
        .get_typed::<Service>(&validated.identity.namespace, client_service);
    let waiting =
        ExternalAddress::observe(&validated.service, stored.as_ref()).waiting_step(client_service);
    // The pods read these Secrets through `secretKeyRef`, which a running pod never
    // re-reads: a rotated password reaches them only by a restart. The database's and
    // Redis's CAs are read once per process, into the TLS context, so they roll them too.
    let mut prepared = build(&validated).rolling_on(&versions);
    prepared.progress = prepared.progress.take().or(waiting);
    if let Some(desired) = crate::build::service::http_route(&validated) {
        let stored_route = context
            .caches
            .get_typed::<strata_model::http_route::HttpRoute>(
                &validated.identity.namespace,
                client_service,
            );
        prepared
            .warnings
            .extend(strata_model::http_route::route_warning(
                &desired,
                stored_route.as_ref(),
            ));
    }
    Ok(prepared)
}
