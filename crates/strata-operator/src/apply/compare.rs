//! Pure comparison of a desired object with what the watch cache holds.
//!
//! The apply step must not send a write when nothing changed, and must still
//! notice when someone else edited a field we own. Two checks together give
//! both: a content hash of the desired object, stored as an annotation when we
//! apply it, detects changes on *our* side (including fields we stopped
//! setting, which a subset check alone would miss); a subset check detects
//! changes on the *cluster* side (drift in any field we set).

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Annotation holding the hash of the object as the operator last applied it.
pub const DESIRED_HASH_ANNOTATION: &str = "strata.dev/desired-hash";

/// A stable hash of a JSON value.
///
/// `serde_json` maps are ordered by key (the `preserve_order` feature is not
/// enabled in this workspace), so serialising the same value always yields the
/// same bytes.
pub fn content_hash(value: &Value) -> String {
    let bytes = value.to_string();
    let digest = Sha256::digest(bytes.as_bytes());
    hex::encode(&digest[..16])
}

/// Whether every field set in `desired` has the same value in `actual`.
///
/// Fields only present in `actual` are ignored: the API server adds defaults,
/// status and metadata, and other field managers may own fields of their own.
/// Lists are compared item by item and must have the same length, because
/// server-side apply replaces or merges them as a whole. Numbers compare by
/// value, so `1` and `1.0` are equal. A `null` in `desired` means "absent".
pub fn is_subset(desired: &Value, actual: &Value) -> bool {
    match (desired, actual) {
        (Value::Object(want), Value::Object(have)) => {
            want.iter().all(|(key, want_value)| match have.get(key) {
                Some(have_value) => is_subset(want_value, have_value),
                None => is_absent(want_value),
            })
        }
        (Value::Array(want), Value::Array(have)) => {
            want.len() == have.len() && want.iter().zip(have).all(|(w, h)| is_subset(w, h))
        }
        (Value::Number(want), Value::Number(have)) => want.as_f64() == have.as_f64(),
        (Value::Null, _) => true,
        (want, have) => want == have,
    }
}

/// Empty maps and lists, and `null`, are what the API server drops on the way in.
fn is_absent(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(map) => map.values().all(is_absent),
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::json;

    use super::*;

    #[rstest]
    #[case::identical(json!({"a": 1}), json!({"a": 1}), true)]
    #[case::server_added_fields_are_ignored(json!({"a": 1}), json!({"a": 1, "b": 2}), true)]
    #[case::changed_scalar_is_drift(json!({"a": 1}), json!({"a": 2}), false)]
    #[case::missing_field_is_drift(json!({"a": 1}), json!({}), false)]
    #[case::nested_change_is_drift(json!({"spec": {"replicas": 3}}), json!({"spec": {"replicas": 1}}), false)]
    #[case::list_items_with_defaults_match(
        json!({"containers": [{"name": "zk"}]}),
        json!({"containers": [{"name": "zk", "terminationMessagePath": "/dev/termination-log"}]}),
        true
    )]
    #[case::extra_list_item_is_drift(json!({"l": [1]}), json!({"l": [1, 2]}), false)]
    #[case::reordered_list_is_drift(json!({"l": [1, 2]}), json!({"l": [2, 1]}), false)]
    #[case::integer_equals_float(json!({"n": 1}), json!({"n": 1.0}), true)]
    #[case::empty_map_equals_absent(json!({"labels": {}}), json!({}), true)]
    #[case::empty_list_equals_absent(json!({"items": []}), json!({}), true)]
    #[case::null_means_absent(json!({"a": null}), json!({}), true)]
    #[case::string_type_change_is_drift(json!({"a": "1"}), json!({"a": 1}), false)]
    fn subset(#[case] desired: Value, #[case] actual: Value, #[case] expected: bool) {
        assert_eq!(is_subset(&desired, &actual), expected);
    }

    #[rstest]
    #[case::key_order_does_not_matter(json!({"a": 1, "b": 2}), json!({"b": 2, "a": 1}), true)]
    #[case::different_values_differ(json!({"a": 1}), json!({"a": 2}), false)]
    fn hash(#[case] left: Value, #[case] right: Value, #[case] equal: bool) {
        assert_eq!(content_hash(&left) == content_hash(&right), equal);
    }
}
