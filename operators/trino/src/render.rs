//! Offline rendering: the objects the operator would apply for the `TrinoCluster`s in
//! a manifest file, with the `TrinoCatalog`s of the same file that their label
//! selectors pick (in the cluster's namespace). The internal shared secret, the
//! certificates and the password files render without values (they are made only in
//! the cluster), and no Secret or ConfigMap a catalog names is read: they reach the
//! pods by reference. The user's access control rules are merged when their ConfigMap
//! is in the file.
//! Catalogs render nothing of their own; a catalog no cluster in the file selects is
//! listed as skipped.

pub mod fill;

use kube::ResourceExt;
use serde_json::Value;
use strata_operator::reference::selector_matches;
use strata_operator::render::{
    Built, RenderError, Rendered, Skipped, documents_of_kind, render_each,
};

use strata_operator::certificates::rendered_secrets;
use strata_operator::tls::CertificateSource;

use crate::build::certificates::certificate_request;
use crate::build::{BuildInputs, SecurityMaterial, cluster_objects};
use crate::config::access_control::{RULES_KEY, access_control_rules};
use crate::crd::{TrinoCatalog, TrinoCluster};
use crate::validate::{DEFAULT_CLUSTER_DOMAIN, ValidatedCluster};

/// Every object the operator would apply for the clusters in `documents`.
pub fn render(documents: &[Value]) -> Result<Rendered, RenderError> {
    let catalogs = documents_of_kind::<TrinoCatalog>(documents)?;
    let mut rendered = Rendered::default();
    let mut served = vec![false; catalogs.len()];
    render_each(documents, &mut rendered, |cluster: &TrinoCluster| {
        let namespace = cluster.namespace().unwrap_or_default();
        let selected: Vec<TrinoCatalog> = cluster
            .spec
            .cluster_config
            .catalog_label_selector
            .as_ref()
            .map(|selector| {
                catalogs
                    .iter()
                    .enumerate()
                    .filter(|(_, catalog)| {
                        catalog.namespace().unwrap_or_default() == namespace
                            && selector_matches(selector, catalog.labels())
                    })
                    .map(|(index, catalog)| {
                        served[index] = true;
                        catalog.clone()
                    })
                    .collect()
            })
            .unwrap_or_default();
        let model = ValidatedCluster::new(cluster, &selected, DEFAULT_CLUSTER_DOMAIN)?;
        let inputs = render_inputs(&model, documents)?;
        let mut objects = cluster_objects(&model, &inputs);
        if let Some(CertificateSource::Operator { lifetime }) = &model.security.tls {
            for secret in rendered_secrets(&certificate_request(&model, *lifetime)) {
                objects.push(secret);
            }
        }
        Ok(Built { objects, model })
    })?;
    for (catalog, served) in catalogs.iter().zip(served) {
        if !served {
            rendered.skipped.push(Skipped {
                kind: "TrinoCatalog".to_owned(),
                name: format!(
                    "{}/{}",
                    catalog.namespace().unwrap_or_default(),
                    catalog.name_any()
                ),
                reason: "no TrinoCluster in the file selects it, so no ConfigMap holds it"
                    .to_owned(),
            });
        }
    }
    Ok(rendered)
}

/// What `render` knows of what the controller reads in the cluster: the user's rules
/// when their ConfigMap is in the same file (checked as the controller checks them),
/// and no CA, certificate or password file, which exist only in the cluster. The
/// certificate Secrets render without values.
fn render_inputs(
    model: &ValidatedCluster,
    documents: &[Value],
) -> Result<BuildInputs, strata_operator::error::ReconcileError> {
    let rules = match &model.security.rules_config_map {
        None => access_control_rules(None).ok(),
        Some(name) => {
            let text = documents
                .iter()
                .find(|document| {
                    document["kind"] == "ConfigMap"
                        && document["metadata"]["name"] == name.as_str()
                        && document["metadata"]["namespace"] == model.identity.namespace.as_str()
                })
                .and_then(|document| document["data"][RULES_KEY].as_str());
            text.map(|text| {
                access_control_rules(Some(text)).map_err(|error| {
                    strata_operator::error::ReconcileError::invalid_spec(
                        "InvalidAccessRules",
                        format!("ConfigMap {name}, key {RULES_KEY}, {error}"),
                    )
                })
            })
            .transpose()?
        }
    };
    Ok(BuildInputs {
        security: SecurityMaterial {
            rules,
            ..SecurityMaterial::default()
        },
        ..BuildInputs::default()
    })
}
