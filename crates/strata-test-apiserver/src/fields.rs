//! Field paths over JSON objects: flattening into leaves, lookup, removal and deep merge.
//!
//! Server-side apply reasons about individual fields. A list whose items all carry a `name`
//! is treated as a map keyed by that name (like `containers`, `env`, `volumes`); every other
//! list is one atomic value. This is the approximation of the real per-field list-map keys.

use std::{collections::BTreeMap, fmt};

use serde_json::Value;

/// One step in a field path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Segment {
    /// A key of a JSON object.
    Field(String),
    /// The item with this `name` in a name-keyed list.
    Named(String),
}

/// A path from the object root to one field.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FieldPath(pub Vec<Segment>);

impl FieldPath {
    fn child(&self, segment: Segment) -> Self {
        let mut segments = self.0.clone();
        segments.push(segment);
        Self(segments)
    }
}

impl fmt::Display for FieldPath {
    /// Renders like the real server's conflict messages: `.spec.containers[name="web"].image`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for segment in &self.0 {
            match segment {
                Segment::Field(key) => write!(f, ".{key}")?,
                Segment::Named(name) => write!(f, "[name=\"{name}\"]")?,
            }
        }
        Ok(())
    }
}

/// The `name` of a list item, if it has a string one.
fn item_name(item: &Value) -> Option<&str> {
    item.get("name").and_then(Value::as_str)
}

/// Whether a list is merged by item name: non-empty and every item has a string `name`.
pub(crate) fn is_named_list(items: &[Value]) -> bool {
    !items.is_empty() && items.iter().all(|item| item_name(item).is_some())
}

/// Flattens an object into its leaf fields and their values.
///
/// Empty objects and atomic lists are leaves themselves, so applying `{}` or `[]` still
/// records ownership of that field.
pub(crate) fn leaves(value: &Value) -> BTreeMap<FieldPath, Value> {
    let mut out = BTreeMap::new();
    collect_leaves(value, FieldPath::default(), &mut out);
    out
}

fn collect_leaves(value: &Value, path: FieldPath, out: &mut BTreeMap<FieldPath, Value>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                collect_leaves(child, path.child(Segment::Field(key.clone())), out);
            }
        }
        Value::Array(items) if is_named_list(items) => {
            for item in items {
                if let Some(name) = item_name(item) {
                    collect_leaves(item, path.child(Segment::Named(name.to_owned())), out);
                }
            }
        }
        leaf => {
            out.insert(path, leaf.clone());
        }
    }
}

/// The value at a path, if present.
pub(crate) fn value_at<'a>(value: &'a Value, path: &FieldPath) -> Option<&'a Value> {
    path.0
        .iter()
        .try_fold(value, |current, segment| match (segment, current) {
            (Segment::Field(key), Value::Object(map)) => map.get(key),
            (Segment::Named(name), Value::Array(items)) => {
                items.iter().find(|item| item_name(item) == Some(name))
            }
            _ => None,
        })
}

/// Removes the field at `path` and prunes containers that the removal left empty.
///
/// A named list item disappears once only its `name` remains, because the name is the key,
/// not content someone set.
pub(crate) fn remove_at(value: &mut Value, path: &FieldPath) {
    remove_segments(value, &path.0);
}

fn remove_segments(value: &mut Value, segments: &[Segment]) {
    let Some((first, rest)) = segments.split_first() else {
        return;
    };
    match (first, value) {
        (Segment::Field(key), Value::Object(map)) => {
            if rest.is_empty() {
                map.remove(key);
            } else if let Some(child) = map.get_mut(key) {
                remove_segments(child, rest);
                if is_empty_container(child) {
                    map.remove(key);
                }
            }
        }
        (Segment::Named(name), Value::Array(items)) => {
            let Some(index) = items.iter().position(|item| item_name(item) == Some(name)) else {
                return;
            };
            let is_name_key = matches!(rest, [Segment::Field(key)] if key == "name");
            if let Some(item) = items.get_mut(index) {
                if !rest.is_empty() && !is_name_key {
                    remove_segments(item, rest);
                }
                let only_name_left = item
                    .as_object()
                    .is_none_or(|map| map.keys().all(|k| k == "name"));
                if rest.is_empty() || only_name_left {
                    items.remove(index);
                }
            }
        }
        _ => {}
    }
}

fn is_empty_container(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.is_empty(),
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}

/// Merges `applied` into `target`: objects recursively, named lists item by item, all else replaced.
///
/// Named list result order: the applied items in applied order, then items only the target had.
pub(crate) fn deep_merge(target: &mut Value, applied: &Value) {
    match (target, applied) {
        (Value::Object(target_map), Value::Object(applied_map)) => {
            for (key, applied_child) in applied_map {
                match target_map.get_mut(key) {
                    Some(target_child) => deep_merge(target_child, applied_child),
                    None => {
                        target_map.insert(key.clone(), applied_child.clone());
                    }
                }
            }
        }
        (Value::Array(target_items), Value::Array(applied_items))
            if is_named_list(applied_items)
                && (target_items.is_empty() || is_named_list(target_items)) =>
        {
            let mut merged = Vec::with_capacity(applied_items.len() + target_items.len());
            for applied_item in applied_items {
                let name = item_name(applied_item);
                let mut item = target_items
                    .iter()
                    .find(|t| item_name(t) == name)
                    .cloned()
                    .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
                deep_merge(&mut item, applied_item);
                merged.push(item);
            }
            let applied_names: Vec<Option<&str>> = applied_items.iter().map(item_name).collect();
            merged.extend(
                target_items
                    .iter()
                    .filter(|t| !applied_names.contains(&item_name(t)))
                    .cloned(),
            );
            *target_items = merged;
        }
        (target, applied) => *target = applied.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn path(segments: &[Segment]) -> FieldPath {
        FieldPath(segments.to_vec())
    }

    fn field(key: &str) -> Segment {
        Segment::Field(key.into())
    }

    #[test]
    fn leaves_key_named_lists_by_name_and_keep_atomic_lists_whole() {
        let v = json!({"spec": {"containers": [{"name": "a", "image": "x"}], "args": [1, 2], "empty": {}}});
        let found: Vec<String> = leaves(&v).keys().map(ToString::to_string).collect();
        assert_eq!(
            found,
            vec![
                ".spec.args",
                ".spec.containers[name=\"a\"].image",
                ".spec.containers[name=\"a\"].name",
                ".spec.empty",
            ]
        );
    }

    #[test]
    fn value_at_follows_named_items() {
        let v = json!({"spec": {"containers": [{"name": "a", "image": "x"}]}});
        let p = path(&[
            field("spec"),
            field("containers"),
            Segment::Named("a".into()),
            field("image"),
        ]);
        assert_eq!(value_at(&v, &p), Some(&json!("x")));
    }

    #[test]
    fn removing_last_content_of_named_item_removes_item_and_empty_parents() {
        let mut v = json!({"spec": {"containers": [{"name": "a", "image": "x"}], "keep": 1}});
        let item = [
            field("spec"),
            field("containers"),
            Segment::Named("a".into()),
        ];
        let mut image = item.to_vec();
        image.push(field("image"));
        let mut name = item.to_vec();
        name.push(field("name"));
        remove_at(&mut v, &path(&name));
        assert_eq!(v["spec"]["containers"][0]["image"], json!("x"));
        remove_at(&mut v, &path(&image));
        assert_eq!(v, json!({"spec": {"keep": 1}}));
    }

    #[test]
    fn deep_merge_merges_named_lists_and_replaces_atomic_ones() {
        let mut target =
            json!({"c": [{"name": "a", "x": 1}, {"name": "b"}], "l": [1, 2], "m": {"k": 1}});
        let applied = json!({"c": [{"name": "z"}, {"name": "a", "y": 2}], "l": [3], "m": {"j": 2}});
        deep_merge(&mut target, &applied);
        assert_eq!(
            target,
            json!({"c": [{"name": "z"}, {"name": "a", "x": 1, "y": 2}, {"name": "b"}], "l": [3], "m": {"k": 1, "j": 2}})
        );
    }
}
