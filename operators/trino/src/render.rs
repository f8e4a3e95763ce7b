//! Offline rendering: the objects the operator would apply for the `TrinoCluster`s in
//! a manifest file, with the `TrinoCatalog`s of the same file that their label
//! selectors pick (in the cluster's namespace). The internal shared secret renders
//! without a value (the value is generated only when the Secret is created), and no
//! Secret or ConfigMap a catalog names is read: they reach the pods by reference.
//! Catalogs render nothing of their own; a catalog no cluster in the file selects is
//! listed as skipped.

use kube::ResourceExt;
use serde_json::Value;
use strata_operator::reference::selector_matches;
use strata_operator::render::{
    Built, RenderError, Rendered, Skipped, documents_of_kind, render_each,
};

use crate::build::cluster_objects;
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
        Ok(Built {
            objects: cluster_objects(&model),
            model,
        })
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
