//! The TrinoCluster controller: the five pipeline steps, in order.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Secret, Service};
use kube::runtime::controller::Action;
use kube::{Api, Resource, ResourceExt};
use strata_model::exposure::ExternalAddress;
use strata_operator::cache::ChildKind;
use strata_operator::certificates::rotation::ROTATE_CA_ANNOTATION;
use strata_operator::controller::Context;
use strata_operator::error::ReconcileError;
use strata_operator::pipeline::Operated;
use strata_operator::pipeline::{Applied, Failed, Prepared};
use strata_operator::reference::Target;
use strata_status::{ConditionStatus, ConditionType, SpecWarning};

use super::security::{PasswordFiles, security_step};
use super::workers::roll_workers;
use crate::build::{BuildInputs, build};
use crate::crd::{TrinoAuthentication, TrinoCatalog, TrinoCluster, TrinoStatus};
use crate::validate::ValidatedCluster;

/// How soon a cluster looks again at a catalog the catalog controller has not yet
/// checked in its current generation; its status write requeues the cluster sooner.
pub const UNCHECKED_CATALOG_RETRY: Duration = Duration::from_secs(5);

/// What the controller needs beyond the shared context.
#[derive(Clone, Debug)]
pub struct ClusterContext {
    /// The cluster's DNS domain.
    pub cluster_domain: String,
    /// The password files made from the users Secrets, by the Secrets' versions.
    pub password_files: Arc<PasswordFiles>,
}

impl ClusterContext {
    /// The context for clusters in `cluster_domain`.
    pub fn new(cluster_domain: impl Into<String>) -> Self {
        Self {
            cluster_domain: cluster_domain.into(),
            password_files: Arc::default(),
        }
    }
}

/// The Secrets a cluster names (the user's certificate, the users, the OAuth2 client),
/// so one that appears or changes requeues the cluster. Only their key names are cached.
pub fn secret_references(cluster: &TrinoCluster) -> Vec<Target> {
    let config = &cluster.spec.cluster_config;
    let namespace = cluster.namespace().unwrap_or_default();
    let certificate = config
        .tls
        .secret_name
        .iter()
        .filter(|_| config.tls.enabled != Some(false));
    let users = config
        .authentication
        .iter()
        .filter_map(|authentication| match authentication {
            TrinoAuthentication::Password(password) => Some(&password.secret_name),
            TrinoAuthentication::Oauth2(oauth2) => Some(&oauth2.client_credentials_secret),
            TrinoAuthentication::Ldap(_) => None,
        });
    certificate
        .chain(users)
        .map(|name| Target::named(namespace.clone(), name.clone()))
        .collect()
}

/// The ConfigMaps with the user's access control rules and the CAs of the LDAP server
/// and the OAuth2 provider, so an edit requeues the cluster.
pub fn config_map_references(cluster: &TrinoCluster) -> Vec<Target> {
    let namespace = cluster.namespace().unwrap_or_default();
    let config = &cluster.spec.cluster_config;
    let rules = config
        .authorization
        .iter()
        .filter_map(|authorization| authorization.rules_config_map.clone());
    let ldap_ca = config
        .authentication
        .iter()
        .filter_map(|authentication| match authentication {
            TrinoAuthentication::Ldap(ldap) => ldap.ca_config_map.clone(),
            TrinoAuthentication::Oauth2(oauth2) => oauth2.ca_config_map.clone(),
            TrinoAuthentication::Password(_) => None,
        });
    rules
        .chain(ldap_ca)
        .map(|name| Target::named(namespace.clone(), name))
        .collect()
}

/// The catalogs a cluster selects: the controller's declared references, so a catalog
/// that is created, changed, relabelled or deleted requeues the cluster.
pub fn catalog_selection(cluster: &TrinoCluster) -> Vec<Target> {
    let namespace = cluster.namespace().unwrap_or_default();
    cluster
        .spec
        .cluster_config
        .catalog_label_selector
        .iter()
        .map(|selector| Target::selected(namespace.clone(), selector.clone()))
        .collect()
}

/// What a cluster reads of a catalog: its spec (through the generation) and whether
/// its references resolve. Its `usedBy`, which changes with every cluster that
/// selects it, is not part of it, so a new cluster does not requeue all the others.
pub fn catalog_significance(catalog: &TrinoCatalog) -> u64 {
    let status = catalog.status.as_ref();
    let conditions: Vec<(String, String, String, String)> = status
        .map(|status| {
            status
                .resource
                .conditions
                .iter()
                .map(|condition| {
                    (
                        condition.type_.to_string(),
                        condition.status.to_string(),
                        condition.reason.as_str().to_owned(),
                        condition.message.clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let mut hasher = DefaultHasher::new();
    (
        catalog.metadata.generation,
        status.and_then(|status| status.resource.observed_generation),
        conditions,
        status.and_then(|status| status.references_hash.as_deref()),
    )
        .hash(&mut hasher);
    hasher.finish()
}

/// Reconciles one TrinoCluster.
///
/// 1. Dereference: the catalogs its selector picks, from the watch cache. A catalog
///    the catalog controller has not checked yet in its current generation is
///    waited for; one whose references do not resolve stops the apply, so a deleted
///    Secret never rolls the pods into a cluster without that catalog. A cluster
///    being stopped is stopped all the same, with the catalogs that can be served.
/// 2. Validate: the spec and the catalogs become a checked model with every file
///    rendered.
/// 3. Build: pure functions turn the model into desired objects.
/// 4. Apply (nothing while paused, workloads at zero while stopped), prune.
/// 5. Report: conditions from the StatefulSets and pods, and the catalogs the pods
///    serve: `status.catalogs` moves to a new selection only once every pod runs the
///    template that carries it (Trino reads catalog files only at start).
pub async fn reconcile(
    cluster: Arc<TrinoCluster>,
    context: Arc<Context<ClusterContext>>,
) -> Result<Action, ReconcileError> {
    let operation = cluster.operation_state();
    let catalogs = match selected_catalogs(&cluster, &context) {
        Ok(Selection::Ready(catalogs)) => catalogs,
        Ok(Selection::Unchecked(catalog)) => {
            tracing::debug!(
                cluster = %cluster.name_any(),
                catalog,
                "waiting until the catalog controller has checked the catalog's current generation"
            );
            return Ok(Action::requeue(UNCHECKED_CATALOG_RETRY));
        }
        // A cluster being stopped needs no catalog: it is stopped with the catalogs
        // that can be served, and the blocked one is reported when it starts again.
        Ok(Selection::Blocked { servable, .. }) if operation.is_stopped() => servable,
        Ok(Selection::Blocked { error, .. }) | Err(error) => {
            return context
                .report_with(
                    cluster.as_ref(),
                    &operation,
                    Err(error.into()),
                    current_product_status(&cluster),
                )
                .await;
        }
    };
    let mut in_use = TrinoStatus::default();
    let applied = async {
        let (prepared, catalog_names) = prepare(&cluster, &catalogs, &context).await?;
        in_use.catalogs = catalog_names;
        context
            .apply_prepared(cluster.as_ref(), &operation, prepared)
            .await
    }
    .await;
    let served = applied
        .as_ref()
        .is_ok_and(|applied| templates_rolled_out(&cluster, &context, applied));
    if !served {
        in_use = current_product_status(&cluster);
    }
    context
        .report_with(cluster.as_ref(), &operation, applied, in_use)
        .await
}

/// Whether every pod runs the templates just applied: each StatefulSet, as the apply
/// returned it or as cached, is rolled out (not Progressing, which also covers a
/// template the StatefulSet controller has not seen yet). Not while paused, when
/// nothing was applied.
fn templates_rolled_out(
    cluster: &TrinoCluster,
    context: &Context<ClusterContext>,
    applied: &Applied,
) -> bool {
    let (Some(report), Some(owner)) = (applied.report.as_ref(), cluster.controller_owner_ref(&()))
    else {
        return false;
    };
    let workloads = strata_operator::status::observe_workloads(
        &context.caches,
        &owner,
        &cluster.namespace().unwrap_or_default(),
        Some(report),
    );
    !workloads.is_empty()
        && workloads
            .iter()
            .all(|workload| workload.assess().progressing.status == ConditionStatus::False)
}

/// The product status as stored: kept while a failure stops the apply, or while the
/// pods still roll, since they serve those catalogs until then.
fn current_product_status(cluster: &TrinoCluster) -> TrinoStatus {
    cluster
        .status
        .as_ref()
        .map(|status| status.product.clone())
        .unwrap_or_default()
}

/// What a cluster's catalog selection found.
enum Selection {
    /// Every selected catalog can be served.
    Ready(Vec<TrinoCatalog>),
    /// The catalog controller has not checked this catalog's current generation yet.
    Unchecked(String),
    /// A catalog cannot be served (`error` says which and why); `servable` are the
    /// others.
    Blocked {
        error: ReconcileError,
        servable: Vec<TrinoCatalog>,
    },
}

fn selected_catalogs(
    cluster: &TrinoCluster,
    context: &Context<ClusterContext>,
) -> Result<Selection, ReconcileError> {
    let Some(selector) = &cluster.spec.cluster_config.catalog_label_selector else {
        return Ok(Selection::Ready(Vec::new()));
    };
    let namespace = cluster.namespace().unwrap_or_default();
    let catalogs = context
        .references
        .selected::<TrinoCatalog>(&namespace, selector)
        .map_err(ReconcileError::from)?;
    let mut servable = Vec::new();
    let mut blocking = None;
    for catalog in &catalogs {
        let status = catalog.status.as_ref();
        let checked = status.and_then(|status| status.resource.observed_generation)
            == catalog.metadata.generation;
        if !checked {
            return Ok(Selection::Unchecked(catalog.name_any()));
        }
        let unresolved = status
            .and_then(|status| status.resource.condition(ConditionType::Degraded))
            .filter(|degraded| degraded.status == ConditionStatus::True);
        let Some(degraded) = unresolved else {
            servable.push((**catalog).clone());
            continue;
        };
        if blocking.is_none() {
            let message = format!(
                "the TrinoCatalog {} cannot be served: {}",
                catalog.name_any(),
                degraded.message
            );
            // A missing Secret or ConfigMap may appear; anything else needs the
            // catalog's spec fixed.
            let reason = degraded.reason.as_str();
            blocking = Some(if reason.ends_with("Missing") {
                ReconcileError::transient(reason, message)
            } else {
                ReconcileError::invalid_spec(reason, message)
            });
        }
    }
    Ok(match blocking {
        Some(error) => Selection::Blocked { error, servable },
        None => Selection::Ready(servable),
    })
}

/// With TLS, a Gateway reaches the coordinator's HTTPS port only with the
/// BackendTLSPolicy; without it, it would speak plain HTTP there and fail every
/// request. So where the cluster serves HTTPRoute but not BackendTLSPolicy (Gateway API
/// CRDs older than v1.4), the route is left out too, and the Warning says why.
fn leave_out_a_route_without_its_policy(
    validated: &mut ValidatedCluster,
    context: &Context<ClusterContext>,
) -> Option<SpecWarning> {
    let policy = ChildKind::of::<strata_model::http_route::BackendTlsPolicy>();
    let route = ChildKind::of::<strata_model::http_route::HttpRoute>();
    if validated.http_route.is_none()
        || validated.security.tls.is_none()
        || !context.unserved_kinds.contains(&policy)
        || context.unserved_kinds.contains(&route)
    {
        return None;
    }
    validated.http_route = None;
    Some(SpecWarning {
        reason: strata_status::reason!("BackendTlsPolicyNotServed"),
        message: "HTTPRoute not applied: the API server serves HTTPRoute but not \
                  BackendTLSPolicy (gateway.networking.k8s.io/v1, Gateway API v1.4 or \
                  later), without which the Gateway would speak plain HTTP to the \
                  coordinator's HTTPS port. Install the Gateway API v1.4 CRDs, then \
                  restart the operator."
            .to_owned(),
    })
}

/// The internal shared secret's id, from the cached Secret's metadata, or read once
/// when the cache has none (a Secret made a moment ago may not be in it yet, and a new
/// id then would restart every pod for nothing). Only metadata is read.
async fn shared_secret_id(
    validated: &ValidatedCluster,
    context: &Context<ClusterContext>,
) -> Result<Option<String>, ReconcileError> {
    let namespace = &validated.identity.namespace;
    let name = crate::build::internal_secret::internal_secret_name(validated);
    let stored = match context.caches.get_typed::<Secret>(namespace, &name) {
        Some(secret) => Some(secret.metadata),
        None => Api::<Secret>::namespaced(context.client.clone(), namespace)
            .get_metadata_opt(&name)
            .await
            .map_err(|source| {
                ReconcileError::from_kube(
                    "SecretReadFailed",
                    format!("reading Secret {name}"),
                    source,
                )
            })?
            .map(|found| found.metadata),
    };
    crate::build::internal_secret::shared_secret_id(stored.as_ref())
        .map_err(|error| ReconcileError::transient("RandomUnavailable", error))
}

/// Steps 2 and 3, with the security step between them.
async fn prepare(
    cluster: &TrinoCluster,
    catalogs: &[TrinoCatalog],
    context: &Context<ClusterContext>,
) -> Result<(Prepared, Vec<String>), Failed> {
    let mut validated = ValidatedCluster::new(cluster, catalogs, &context.extra.cluster_domain)?;
    let policy_missing = leave_out_a_route_without_its_policy(&mut validated, context);
    let coordinator_service = validated.coordinator_service();
    let stored = context
        .caches
        .get_typed::<Service>(&validated.identity.namespace, &coordinator_service);
    let external_address = ExternalAddress::observe(&validated.service, stored.as_ref());
    if let ExternalAddress::LoadBalancer(address) = &external_address {
        validated.external_names.push(address.clone());
    }
    // The pods read catalog values from Secrets and ConfigMaps through the environment,
    // once: each catalog's references hash rolls them when one of those changes.
    let catalog_versions: BTreeMap<String, String> = catalogs
        .iter()
        .filter_map(|catalog| {
            let hash = catalog.status.as_ref()?.references_hash.clone()?;
            Some((format!("TrinoCatalog/{}", catalog.name_any()), hash))
        })
        .collect();
    // The certificates must be there before any pod waits for them; a renewed one
    // rolls the pods, which read it only when they start.
    let rotate_ca = cluster.annotations().get(ROTATE_CA_ANNOTATION);
    let (tls, mut security) =
        security_step(&validated, rotate_ca.map(String::as_str), context).await?;
    let waiting = external_address.waiting_step(&coordinator_service);
    security.external_address = external_address;
    security.ingress_url = strata_model::ingress::ingress_url(
        validated.ingress.as_ref(),
        context
            .caches
            .get_typed::<k8s_openapi::api::networking::v1::Ingress>(
                &validated.identity.namespace,
                validated.identity.name.as_str(),
            )
            .as_ref(),
    );
    let stored_route = context
        .caches
        .get_typed::<strata_model::http_route::HttpRoute>(
            &validated.identity.namespace,
            validated.identity.name.as_str(),
        );
    let desired_route = crate::build::service::http_route(&validated);
    security.route = desired_route.as_ref().and_then(|desired| {
        strata_model::http_route::route_host_and_path(desired, stored_route.as_ref())
    });
    let route_warning = desired_route.as_ref().and_then(|desired| {
        strata_model::http_route::route_warning(desired, stored_route.as_ref())
    });
    let shared_secret_id = shared_secret_id(&validated, context).await?;
    let inputs = BuildInputs {
        catalog_versions,
        certificate_versions: tls.versions.clone(),
        security,
        shared_secret_id,
    };
    let mut prepared = build(&validated, &inputs);
    tls.into_prepared(&mut prepared);
    roll_workers(&mut prepared, cluster, context);
    prepared.progress = prepared.progress.take().or(waiting);
    prepared.warnings.extend(route_warning);
    prepared.warnings.extend(policy_missing);
    Ok((prepared, validated.catalog_names()))
}
