//! JSON Merge Patch (RFC 7386) and JSON Patch (RFC 6902) on untyped objects.
//!
//! Strategic merge patch is served by [`merge_patch`] too: without Go struct tags there are no
//! patch strategies to consult, so lists are replaced as a whole.

use serde_json::Value;

/// Why a JSON Patch could not be applied; answered with 422 Unprocessable Entity.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum JsonPatchError {
    /// The body is not a list of operations.
    #[error("json patch must be an array of operations: {0}")]
    Malformed(String),
    /// An operation this server does not know.
    #[error("unsupported json patch operation {0:?}")]
    UnknownOp(String),
    /// A `path` or `from` that does not resolve.
    #[error("json patch path {0:?} does not exist")]
    MissingPath(String),
    /// A `test` operation that did not hold.
    #[error("json patch test failed at {0:?}")]
    TestFailed(String),
}

/// Applies an RFC 7386 merge patch: objects merge recursively, `null` deletes, other values replace.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch_map) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(serde_json::Map::new());
    }
    if let Value::Object(target_map) = target {
        for (key, value) in patch_map {
            if value.is_null() {
                target_map.remove(key);
            } else {
                merge_patch(target_map.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
    }
}

/// Applies an RFC 6902 patch (`add`, `remove`, `replace`, `move`, `copy`, `test`).
pub(crate) fn json_patch(target: &mut Value, patch: &Value) -> Result<(), JsonPatchError> {
    let ops = patch
        .as_array()
        .ok_or_else(|| JsonPatchError::Malformed(patch.to_string()))?;
    for op in ops {
        apply_op(target, op)?;
    }
    Ok(())
}

fn apply_op(target: &mut Value, op: &Value) -> Result<(), JsonPatchError> {
    let field = |name: &str| {
        op.get(name)
            .and_then(Value::as_str)
            .ok_or_else(|| JsonPatchError::Malformed(op.to_string()))
    };
    let name = field("op")?;
    let path = field("path")?;
    let value = || {
        op.get("value")
            .cloned()
            .ok_or_else(|| JsonPatchError::Malformed(op.to_string()))
    };
    match name {
        "add" => add(target, path, value()?),
        "remove" => remove(target, path).map(drop),
        "replace" => {
            remove(target, path)?;
            add(target, path, value()?)
        }
        "move" => {
            let moved = remove(target, field("from")?)?;
            add(target, path, moved)
        }
        "copy" => {
            let from = field("from")?;
            let copied = target
                .pointer(from)
                .cloned()
                .ok_or_else(|| JsonPatchError::MissingPath(from.to_owned()))?;
            add(target, path, copied)
        }
        "test" => {
            // Like the real API server (evanphx/json-patch), a missing field
            // tests equal to `null`; kube-runtime's finalizer helper relies
            // on this when it adds the first finalizer.
            let expected = value()?;
            let actual = target.pointer(path).unwrap_or(&Value::Null);
            if *actual == expected {
                Ok(())
            } else {
                Err(JsonPatchError::TestFailed(path.to_owned()))
            }
        }
        other => Err(JsonPatchError::UnknownOp(other.to_owned())),
    }
}

/// Splits a JSON pointer into its parent pointer and unescaped last token.
fn split_pointer(path: &str) -> Result<(&str, String), JsonPatchError> {
    let (parent, last) = path
        .rsplit_once('/')
        .ok_or_else(|| JsonPatchError::MissingPath(path.to_owned()))?;
    Ok((parent, last.replace("~1", "/").replace("~0", "~")))
}

fn add(target: &mut Value, path: &str, value: Value) -> Result<(), JsonPatchError> {
    if path.is_empty() {
        *target = value;
        return Ok(());
    }
    let missing = || JsonPatchError::MissingPath(path.to_owned());
    let (parent, token) = split_pointer(path)?;
    match target.pointer_mut(parent).ok_or_else(missing)? {
        Value::Object(map) => {
            map.insert(token, value);
            Ok(())
        }
        Value::Array(items) => {
            let index = if token == "-" {
                items.len()
            } else {
                token.parse::<usize>().map_err(|_| missing())?
            };
            if index > items.len() {
                return Err(missing());
            }
            items.insert(index, value);
            Ok(())
        }
        _ => Err(missing()),
    }
}

fn remove(target: &mut Value, path: &str) -> Result<Value, JsonPatchError> {
    let missing = || JsonPatchError::MissingPath(path.to_owned());
    let (parent, token) = split_pointer(path)?;
    match target.pointer_mut(parent).ok_or_else(missing)? {
        Value::Object(map) => map.remove(&token).ok_or_else(missing),
        Value::Array(items) => {
            let index = token.parse::<usize>().map_err(|_| missing())?;
            if index < items.len() {
                Ok(items.remove(index))
            } else {
                Err(missing())
            }
        }
        _ => Err(missing()),
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::json;

    use super::*;

    #[rstest]
    #[case::adds_and_replaces(json!({"a": 1, "b": {"c": 1}}), json!({"b": {"d": 2}, "a": 3}), json!({"a": 3, "b": {"c": 1, "d": 2}}))]
    #[case::null_deletes(json!({"a": 1, "b": 2}), json!({"a": null}), json!({"b": 2}))]
    #[case::lists_replace(json!({"l": [1, 2]}), json!({"l": [3]}), json!({"l": [3]}))]
    #[case::non_object_patch_replaces(json!({"a": 1}), json!([1]), json!([1]))]
    fn merge_patch_follows_rfc_7386(
        #[case] mut target: Value,
        #[case] patch: Value,
        #[case] expected: Value,
    ) {
        merge_patch(&mut target, &patch);
        assert_eq!(target, expected);
    }

    #[rstest]
    #[case::add_field(json!([{"op": "add", "path": "/b", "value": 2}]), json!({"a": 1, "b": 2, "l": [1, 2], "x/y": 0}))]
    #[case::append_to_list(json!([{"op": "add", "path": "/l/-", "value": 3}]), json!({"a": 1, "l": [1, 2, 3], "x/y": 0}))]
    #[case::insert_in_list(json!([{"op": "add", "path": "/l/0", "value": 0}]), json!({"a": 1, "l": [0, 1, 2], "x/y": 0}))]
    #[case::replace(json!([{"op": "replace", "path": "/a", "value": 5}]), json!({"a": 5, "l": [1, 2], "x/y": 0}))]
    #[case::remove_item(json!([{"op": "remove", "path": "/l/0"}]), json!({"a": 1, "l": [2], "x/y": 0}))]
    #[case::escaped_key(json!([{"op": "remove", "path": "/x~1y"}]), json!({"a": 1, "l": [1, 2]}))]
    #[case::test_then_replace(json!([{"op": "test", "path": "/a", "value": 1}, {"op": "replace", "path": "/a", "value": 2}]), json!({"a": 2, "l": [1, 2], "x/y": 0}))]
    #[case::test_null_matches_a_missing_field(json!([{"op": "test", "path": "/f", "value": null}, {"op": "add", "path": "/f", "value": ["x"]}]), json!({"a": 1, "f": ["x"], "l": [1, 2], "x/y": 0}))]
    #[case::move_field(json!([{"op": "move", "from": "/a", "path": "/b"}]), json!({"b": 1, "l": [1, 2], "x/y": 0}))]
    #[case::copy_field(json!([{"op": "copy", "from": "/a", "path": "/b"}]), json!({"a": 1, "b": 1, "l": [1, 2], "x/y": 0}))]
    fn json_patch_follows_rfc_6902(#[case] patch: Value, #[case] expected: Value) {
        let mut target = json!({"a": 1, "l": [1, 2], "x/y": 0});
        assert_eq!(json_patch(&mut target, &patch), Ok(()));
        assert_eq!(target, expected);
    }

    #[rstest]
    #[case::failed_test(json!([{"op": "test", "path": "/a", "value": 2}]), JsonPatchError::TestFailed("/a".into()))]
    #[case::missing_field_is_not_a_value(json!([{"op": "test", "path": "/zz", "value": 1}]), JsonPatchError::TestFailed("/zz".into()))]
    #[case::replace_missing(json!([{"op": "replace", "path": "/zz", "value": 2}]), JsonPatchError::MissingPath("/zz".into()))]
    #[case::unknown_op(json!([{"op": "frobnicate", "path": "/a"}]), JsonPatchError::UnknownOp("frobnicate".into()))]
    fn json_patch_reports_errors(#[case] patch: Value, #[case] expected: JsonPatchError) {
        let mut target = json!({"a": 1});
        assert_eq!(json_patch(&mut target, &patch), Err(expected));
    }
}
