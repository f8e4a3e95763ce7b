//! The read verbs: get and list (with selectors and pagination).

use serde_json::{Value, json};

use crate::{
    kinds::ResourceInfo,
    object::partial_metadata,
    route::Query,
    selector::{FieldSelector, LabelSelector},
    status::ApiError,
    store::State,
};

/// Which objects a list or watch selects.
#[derive(Clone, Debug, Default)]
pub(crate) struct Selection {
    /// `None` selects all namespaces.
    pub(crate) namespace: Option<String>,
    pub(crate) labels: LabelSelector,
    pub(crate) fields: FieldSelector,
}

impl Selection {
    /// Reads `labelSelector` and `fieldSelector`; malformed selectors are a 400.
    pub(crate) fn from_query(namespace: Option<String>, query: &Query) -> Result<Self, ApiError> {
        let labels = LabelSelector::parse(query.get("labelSelector").unwrap_or_default())
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        let fields = FieldSelector::parse(query.get("fieldSelector").unwrap_or_default())
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        Ok(Self {
            namespace,
            labels,
            fields,
        })
    }

    /// Whether an object is selected.
    pub(crate) fn matches(&self, object: &Value) -> bool {
        let namespace_ok = self
            .namespace
            .as_deref()
            .is_none_or(|ns| crate::object::meta_str(object, "namespace") == Some(ns));
        namespace_ok && self.labels.matches(object) && self.fields.matches(object)
    }
}

/// Whether the client asked for `PartialObjectMetadata` instead of full objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    Full,
    Metadata,
}

impl Shape {
    /// Reads the `Accept` header the way kube's metadata API sets it.
    pub(crate) fn from_accept(accept: Option<&str>) -> Self {
        if accept.is_some_and(|a| a.contains("as=PartialObjectMetadata")) {
            Self::Metadata
        } else {
            Self::Full
        }
    }

    /// The object in the requested shape.
    pub(crate) fn render(self, object: &Value) -> Value {
        match self {
            Self::Full => object.clone(),
            Self::Metadata => partial_metadata(object),
        }
    }
}

/// GET of one object in the requested shape.
pub(crate) fn get_shaped(
    state: &State,
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
    shape: Shape,
) -> Result<Value, ApiError> {
    let object = get(state, info, namespace, name)?;
    Ok(shape.render(&object))
}

/// GET of one object.
pub(crate) fn get(
    state: &State,
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
) -> Result<Value, ApiError> {
    state
        .object(&info.key(), namespace, name)
        .cloned()
        .ok_or_else(|| ApiError::not_found(info, name))
}

/// LIST with selectors, `limit` and `continue`.
///
/// Items are ordered by namespace and name. The continue token is the last returned
/// (namespace, name); later pages read the current state, not a snapshot.
pub(crate) fn list(
    state: &State,
    info: &ResourceInfo,
    selection: &Selection,
    query: &Query,
    shape: Shape,
) -> Result<Value, ApiError> {
    let after: Option<(String, String)> = query
        .get("continue")
        .map(|token| {
            serde_json::from_str(token)
                .map_err(|_| ApiError::new(410, "Expired", "invalid continue token"))
        })
        .transpose()?;
    let limit = query
        .number("limit")
        .and_then(|l| usize::try_from(l).ok())
        .filter(|l| *l > 0);

    let matching: Vec<(&(String, String), &Value)> = state
        .store(&info.key())
        .map(|store| {
            store
                .objects
                .iter()
                .filter(|(id, _)| after.as_ref().is_none_or(|after| *id > after))
                .filter(|(_, obj)| selection.matches(obj))
                .collect()
        })
        .unwrap_or_default();

    let page_len = limit.map_or(matching.len(), |l| l.min(matching.len()));
    let remaining = matching.len() - page_len;

    let mut metadata = json!({"resourceVersion": state.resource_version().to_string()});
    if remaining > 0
        && let Some((last_id, _)) = matching.get(page_len.saturating_sub(1))
    {
        metadata["continue"] = json!(serde_json::to_string(last_id).unwrap_or_default());
        metadata["remainingItemCount"] = json!(remaining);
    }
    let items: Vec<Value> = matching[..page_len]
        .iter()
        .map(|(_, obj)| shape.render(obj))
        .collect();
    let (api_version, kind) = match shape {
        Shape::Full => (info.api_version(), format!("{}List", info.kind)),
        Shape::Metadata => (
            "meta.k8s.io/v1".to_owned(),
            "PartialObjectMetadataList".to_owned(),
        ),
    };
    Ok(json!({"apiVersion": api_version, "kind": kind, "metadata": metadata, "items": items}))
}
