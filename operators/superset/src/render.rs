//! Offline rendering: the objects the operator would apply for the `SupersetCluster`s
//! in a manifest file. The `SECRET_KEY` Secret renders without a value (the value is
//! generated only when the Secret is created), and no other Secret is read: they reach
//! the pods by reference.

use serde_json::Value;
use strata_operator::render::{Built, RenderError, Rendered, render_each};

use crate::build::cluster_objects;
use crate::crd::SupersetCluster;
use crate::validate::{DEFAULT_CLUSTER_DOMAIN, ValidatedCluster};

/// Every object the operator would apply for the clusters in `documents`.
pub fn render(documents: &[Value]) -> Result<Rendered, RenderError> {
    let mut rendered = Rendered::default();
    render_each(documents, &mut rendered, |cluster: &SupersetCluster| {
        let model = ValidatedCluster::new(cluster, DEFAULT_CLUSTER_DOMAIN)?;
        Ok(Built {
            objects: cluster_objects(&model),
            model,
        })
    })?;
    Ok(rendered)
}
