//! Small accessors for object metadata held as untyped JSON.
//!
//! The server stores every object as `serde_json::Value` so one code path serves all kinds;
//! these helpers keep the metadata plumbing out of the verb handlers.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{Map, Value};

/// A string field of `metadata`.
pub(crate) fn meta_str<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    object.get("metadata")?.get(field)?.as_str()
}

/// Sets (or with `None` removes) a field of `metadata`, creating `metadata` when missing.
///
/// Does nothing for non-object values: request bodies are validated to be objects first.
pub(crate) fn set_meta(object: &mut Value, field: &str, value: Option<Value>) {
    let Some(root) = object.as_object_mut() else {
        return;
    };
    let meta = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Some(meta) = meta.as_object_mut() {
        match value {
            Some(v) => {
                meta.insert(field.to_owned(), v);
            }
            None => {
                meta.remove(field);
            }
        }
    }
}

/// `metadata.labels` as a map; non-string values are ignored.
pub(crate) fn labels(object: &Value) -> BTreeMap<String, String> {
    object
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `metadata.finalizers` holds at least one entry.
pub(crate) fn has_finalizers(object: &Value) -> bool {
    object
        .get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty())
}

/// Whether deletion was requested (`metadata.deletionTimestamp` is set).
pub(crate) fn is_terminating(object: &Value) -> bool {
    meta_str(object, "deletionTimestamp").is_some()
}

/// The uids listed in `metadata.ownerReferences`.
pub(crate) fn owner_uids(object: &Value) -> Vec<String> {
    object
        .get("metadata")
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r.get("uid").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// `metadata.generation`, 0 when absent.
pub(crate) fn generation(object: &Value) -> i64 {
    object
        .get("metadata")
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// The object without `metadata` and `status`: what `metadata.generation` tracks.
pub(crate) fn spec_part(object: &Value) -> Value {
    match object {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| {
                    !matches!(k.as_str(), "metadata" | "status" | "apiVersion" | "kind")
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The current time in the RFC 3339 second-precision form the API server writes.
pub(crate) fn now_timestamp() -> Value {
    serde_json::to_value(Time(jiff::Timestamp::now())).unwrap_or(Value::Null)
}

/// Removes `null` map entries recursively: the API server prunes them from stored objects.
pub(crate) fn strip_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(strip_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

/// Drops empty `labels`, `annotations`, `finalizers` and `ownerReferences`, as Go's
/// `omitempty` does when the real server stores metadata.
pub(crate) fn prune_empty_metadata(object: &mut Value) {
    let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    meta.retain(|key, value| {
        let collection = matches!(
            key.as_str(),
            "labels" | "annotations" | "finalizers" | "ownerReferences"
        );
        let empty = match value {
            Value::Object(map) => map.is_empty(),
            Value::Array(items) => items.is_empty(),
            _ => false,
        };
        !(collection && empty)
    });
}

/// Reduces an object to the `PartialObjectMetadata` form metadata-only clients ask for.
pub(crate) fn partial_metadata(object: &Value) -> Value {
    serde_json::json!({
        "apiVersion": "meta.k8s.io/v1",
        "kind": "PartialObjectMetadata",
        "metadata": object.get("metadata").cloned().unwrap_or(Value::Null),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn spec_part_ignores_metadata_and_status() {
        let a = json!({"metadata": {"name": "a"}, "spec": {"x": 1}, "status": {"y": 1}});
        let b = json!({"metadata": {"name": "b"}, "spec": {"x": 1}, "status": {"y": 2}});
        assert_eq!(spec_part(&a), spec_part(&b));
        assert_ne!(spec_part(&a), spec_part(&json!({"spec": {"x": 2}})));
    }

    #[test]
    fn empty_metadata_collections_are_pruned() {
        let mut v = json!({"metadata": {"name": "a", "labels": {}, "finalizers": [], "annotations": {"k": "v"}}});
        prune_empty_metadata(&mut v);
        assert_eq!(
            v,
            json!({"metadata": {"name": "a", "annotations": {"k": "v"}}})
        );
    }

    #[test]
    fn strip_nulls_is_recursive() {
        let mut v = json!({"a": null, "b": {"c": null, "d": [{"e": null, "f": 1}]}});
        strip_nulls(&mut v);
        assert_eq!(v, json!({"b": {"d": [{"f": 1}]}}));
    }

    #[test]
    fn set_meta_creates_missing_metadata() {
        let mut v = json!({"kind": "X"});
        set_meta(&mut v, "name", Some(json!("n")));
        assert_eq!(meta_str(&v, "name"), Some("n"));
        assert!(now_timestamp().as_str().is_some_and(|t| t.ends_with('Z')));
    }
}
