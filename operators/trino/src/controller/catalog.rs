//! The TrinoCatalog controller: whether each catalog can be served, and by whom.
//!
//! A catalog is Available when its spec is valid and every Secret key and ConfigMap
//! key it reads exists; otherwise Degraded with the reason (`SecretMissing`,
//! `SecretKeyMissing`, `ConfigMapMissing`, `ConfigMapKeyMissing`, `InvalidConnector`,
//! ...). `status.usedBy` lists the clusters whose label selector matches it. Nothing
//! is created: the clusters render the catalog into their own ConfigMap.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use strata_model::build::config_hash;
use strata_operator::controller::Context;
use strata_operator::error::ReconcileError;
use strata_operator::reference::{KeySource, KeysRead, Target, selector_matches};
use strata_operator::status::{RESYNC_PERIOD, next_resource_status};

use crate::config::catalog::{CatalogVariable, ValidatedCatalog, ValueSource};
use crate::crd::catalog::CatalogStatus;
use crate::crd::{TrinoCatalog, TrinoCluster};

/// The Secrets a catalog reads values from.
pub fn secret_references(catalog: &TrinoCatalog) -> Vec<Target> {
    references(catalog, |source| match source {
        ValueSource::Secret(reference) => Some(reference.name.clone()),
        ValueSource::ConfigMap(_) => None,
    })
}

/// The ConfigMaps a catalog reads values from.
pub fn config_map_references(catalog: &TrinoCatalog) -> Vec<Target> {
    references(catalog, |source| match source {
        ValueSource::ConfigMap(reference) => Some(reference.name.clone()),
        ValueSource::Secret(_) => None,
    })
}

/// Every TrinoCluster in the catalog's namespace: any of them may select it, so a
/// change to one requeues the catalog for `status.usedBy`.
pub fn clusters_in_namespace(catalog: &TrinoCatalog) -> Vec<Target> {
    vec![Target::selected(
        catalog.namespace().unwrap_or_default(),
        LabelSelector::default(),
    )]
}

/// What a catalog reads of a cluster: its label selector.
pub fn selector_significance(cluster: &TrinoCluster) -> u64 {
    let selector = serde_json::to_string(&cluster.spec.cluster_config.catalog_label_selector)
        .unwrap_or_default();
    let mut hasher = DefaultHasher::new();
    selector.hash(&mut hasher);
    hasher.finish()
}

fn references(
    catalog: &TrinoCatalog,
    name_of: impl Fn(&ValueSource) -> Option<String>,
) -> Vec<Target> {
    let namespace = catalog.namespace().unwrap_or_default();
    let Ok(validated) = ValidatedCatalog::new(catalog) else {
        return Vec::new();
    };
    let mut names: Vec<String> = validated
        .variables
        .iter()
        .filter_map(|variable| name_of(&variable.source))
        .collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .map(|name| Target::named(namespace.clone(), name))
        .collect()
}

/// Reconciles one TrinoCatalog: checks it, and writes its status when it changed.
pub async fn reconcile(
    catalog: Arc<TrinoCatalog>,
    context: Arc<Context<()>>,
) -> Result<Action, ReconcileError> {
    let namespace = catalog.namespace().unwrap_or_default();
    let checked = ValidatedCatalog::new(&catalog).and_then(|validated| {
        check_references(&validated, &namespace, &context).map(|versions| (validated, versions))
    });
    let used_by = used_by(&catalog, &namespace, &context)?;
    let available = "Every Secret and ConfigMap key the catalog reads exists; status.usedBy \
                     lists the TrinoClusters that serve it.";
    let stored = catalog.status.as_ref();
    let status = CatalogStatus {
        catalog_name: checked
            .as_ref()
            .ok()
            .map(|(validated, _)| validated.name.clone()),
        used_by,
        references_hash: checked
            .as_ref()
            .ok()
            .filter(|(_, versions)| !versions.is_empty())
            .map(|(_, versions)| config_hash(versions)),
        resource: next_resource_status(
            stored.map(|status| &status.resource),
            catalog.meta().generation,
            checked.as_ref().map(|_| available),
            Time(jiff::Timestamp::now()),
        ),
    };
    let previous = stored
        .map(|status| status.resource.conditions.clone())
        .unwrap_or_default();
    if context
        .write_status(catalog.as_ref(), stored, &status)
        .await?
    {
        context
            .report_conditions(catalog.as_ref(), &previous, &status.resource.conditions)
            .await;
    }
    match checked {
        Ok(_) => Ok(Action::requeue(RESYNC_PERIOD)),
        Err(error) => Err(error),
    }
}

/// The clusters whose selector matches the catalog, sorted.
fn used_by(
    catalog: &TrinoCatalog,
    namespace: &str,
    context: &Context<()>,
) -> Result<Vec<String>, ReconcileError> {
    let clusters = context
        .references
        .selected::<TrinoCluster>(namespace, &LabelSelector::default())
        .map_err(ReconcileError::from)?;
    Ok(clusters
        .iter()
        .filter(|cluster| {
            cluster
                .spec
                .cluster_config
                .catalog_label_selector
                .as_ref()
                .is_some_and(|selector| selector_matches(selector, catalog.labels()))
        })
        .map(|cluster| cluster.name_any())
        .collect())
}

/// Every Secret key and ConfigMap key the catalog reads exists; the versions of
/// those objects roll the pods of the clusters that serve it.
fn check_references(
    catalog: &ValidatedCatalog,
    namespace: &str,
    context: &Context<()>,
) -> Result<BTreeMap<String, String>, ReconcileError> {
    let reads = catalog
        .variables
        .iter()
        .map(|CatalogVariable { source, field, .. }| {
            let (object, reference) = match source {
                ValueSource::Secret(reference) => (KeySource::Secret, reference),
                ValueSource::ConfigMap(reference) => (KeySource::ConfigMap, reference),
            };
            KeysRead {
                object,
                name: &reference.name,
                keys: vec![&reference.key],
                field,
            }
        });
    Ok(context.references.check_keys(namespace, reads)?)
}
