//! Unknown fields, found the way the API server's strict field validation finds them.
//!
//! `kubectl apply` (field validation `Strict` since Kubernetes 1.27) rejects a custom
//! resource with a field its CRD's `openAPIV3Schema` does not specify. Serde ignores such
//! fields, so without this check `replica: 5` would render a one-server ensemble.
//!
//! The walk follows the structural-schema rules the API server prunes by:
//!
//! - in an object, a field named in `properties` is checked against its schema; any other
//!   field is checked against `additionalProperties` when that is a schema, and allowed when
//!   `additionalProperties: true` or `x-kubernetes-preserve-unknown-fields: true` (the
//!   named fields of such an object are still checked);
//! - `x-kubernetes-embedded-resource: true` also allows `apiVersion`, `kind` and `metadata`;
//! - every element of an array is checked against `items`;
//! - a value whose JSON type does not match the schema's `type` is left to the type check
//!   (serde), and `allOf`/`anyOf`/`oneOf`/`not` are not followed: a structural schema
//!   specifies every field outside them.

use serde_json::{Map, Value};

/// Paths of the fields of `value` that `schema` does not allow, in document order of a
/// sorted JSON object (so messages are deterministic), each with a hint when a specified
/// field has a similar name.
///
/// `path` is the path of `value` itself, e.g. `spec`; fields are appended with `.` and
/// array elements with `[index]`, as the API server prints them.
pub(crate) fn unknown_fields(schema: &Value, value: &Value, path: &str) -> Vec<String> {
    let mut found = Vec::new();
    walk(schema, value, path, &mut found);
    found
}

fn walk(schema: &Value, value: &Value, path: &str, found: &mut Vec<String>) {
    match value {
        Value::Object(fields) if allows_type(schema, "object") => {
            walk_object(schema, fields, path, found);
        }
        Value::Array(items) if allows_type(schema, "array") => {
            if let Some(item_schema) = schema.get("items").filter(|items| items.is_object()) {
                for (index, item) in items.iter().enumerate() {
                    walk(item_schema, item, &format!("{path}[{index}]"), found);
                }
            }
        }
        _ => {}
    }
}

fn walk_object(schema: &Value, fields: &Map<String, Value>, path: &str, found: &mut Vec<String>) {
    let properties = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties");
    let open = flag(schema, "x-kubernetes-preserve-unknown-fields")
        || additional.and_then(Value::as_bool) == Some(true);
    let embedded = flag(schema, "x-kubernetes-embedded-resource");
    for (name, child) in fields {
        let child_path = join(path, name);
        if let Some(child_schema) = properties.and_then(|properties| properties.get(name)) {
            walk(child_schema, child, &child_path, found);
        } else if let Some(child_schema) = additional.filter(|additional| additional.is_object()) {
            walk(child_schema, child, &child_path, found);
        } else if open || (embedded && matches!(name.as_str(), "apiVersion" | "kind" | "metadata"))
        {
            continue;
        } else {
            let known = properties
                .into_iter()
                .flat_map(Map::keys)
                .map(String::as_str);
            found.push(match similar(name, known) {
                Some(hint) => format!("{child_path}: unknown field (did you mean {hint}?)"),
                None => format!("{child_path}: unknown field"),
            });
        }
    }
}

/// `path.name`, or `name` at the root.
pub(crate) fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// Whether a value of JSON type `json_type` may stand where `schema` is; an untyped
/// schema (int-or-string, preserve-unknown-fields) takes objects and arrays too.
fn allows_type(schema: &Value, json_type: &str) -> bool {
    match schema.get("type").and_then(Value::as_str) {
        Some(declared) => declared == json_type,
        None => !flag(schema, "x-kubernetes-int-or-string"),
    }
}

fn flag(schema: &Value, name: &str) -> bool {
    schema.get(name).and_then(Value::as_bool) == Some(true)
}

/// The closest of `candidates` to `name` when it is a plausible typo: the same name in
/// another case, or at most two single-character edits away (one for short names).
pub(crate) fn similar<'a>(
    name: &str,
    candidates: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    let budget = if name.chars().count() <= 4 { 1 } else { 2 };
    candidates
        .map(|candidate| {
            let distance = if candidate.eq_ignore_ascii_case(name) {
                0
            } else {
                edit_distance(name, candidate)
            };
            (distance, candidate)
        })
        .filter(|(distance, _)| *distance <= budget)
        .min()
        .map(|(_, candidate)| candidate)
}

/// Edit distance over characters where a swap of neighbours counts as one edit
/// (optimal string alignment), so `nmae` is one edit from `name`.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // rows[i][j]: distance between the first i chars of a and the first j chars of b.
    let mut rows = vec![vec![0; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::json;

    use super::*;

    /// A schema with each construct the walk knows: named fields, a map of objects, a
    /// preserved subtree, a list of objects, an embedded resource and an int-or-string.
    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "replicas": {"type": "integer"},
                        "groups": {
                            "type": "object",
                            "additionalProperties": {
                                "type": "object",
                                "properties": {"replicas": {"type": "integer"}}
                            }
                        },
                        "overrides": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": true,
                            "properties": {"strict": {"type": "object", "properties": {}}}
                        },
                        "anything": {"type": "object", "additionalProperties": true},
                        "secrets": {
                            "type": "array",
                            "items": {"type": "object", "properties": {"name": {"type": "string"}}}
                        },
                        "template": {
                            "type": "object",
                            "x-kubernetes-embedded-resource": true,
                            "properties": {"spec": {"type": "object", "properties": {}}}
                        },
                        "size": {"x-kubernetes-int-or-string": true}
                    }
                }
            }
        })
    }

    #[rstest]
    #[case::known_fields(json!({"spec": {"replicas": 1}}), &[])]
    #[case::unknown_field(json!({"spec": {"replica": 1}}), &["spec.replica: unknown field (did you mean replicas?)"])]
    #[case::unknown_top_level_field(json!({"sepc": {}}), &["sepc: unknown field (did you mean spec?)"])]
    #[case::no_hint_for_an_unrelated_name(json!({"spec": {"colour": 1}}), &["spec.colour: unknown field"])]
    #[case::map_values_are_checked(json!({"spec": {"groups": {"a": {"replicas": 1}, "b": {"replica": 1}}}}), &["spec.groups.b.replica: unknown field (did you mean replicas?)"])]
    #[case::preserved_fields_are_allowed(json!({"spec": {"overrides": {"whatever": {"deep": 1}}}}), &[])]
    #[case::named_fields_of_a_preserved_object_are_checked(json!({"spec": {"overrides": {"strict": {"x": 1}}}}), &["spec.overrides.strict.x: unknown field"])]
    #[case::additional_properties_true_allows_all(json!({"spec": {"anything": {"x": {"y": 1}}}}), &[])]
    #[case::list_items_are_checked(json!({"spec": {"secrets": [{"name": "a"}, {"nmae": "b"}]}}), &["spec.secrets[1].nmae: unknown field (did you mean name?)"])]
    #[case::embedded_resources_have_type_meta(json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": {}}}}), &[])]
    #[case::embedded_resources_are_still_checked(json!({"spec": {"template": {"status": {}}}}), &["spec.template.status: unknown field"])]
    #[case::wrong_types_are_left_to_serde(json!({"spec": {"replicas": {"x": 1}, "secrets": {"y": 1}, "size": {"z": 1}}}), &[])]
    #[case::every_unknown_field_is_reported(json!({"spec": {"b": 1, "a": 2}}), &["spec.a: unknown field", "spec.b: unknown field"])]
    fn unknown_fields_follow_the_schema(#[case] value: Value, #[case] expected: &[&str]) {
        assert_eq!(unknown_fields(&schema(), &value, ""), expected);
    }

    #[rstest]
    #[case::typo("replica", Some("replicas"))]
    #[case::case("Replicas", Some("replicas"))]
    #[case::two_edits("rplicaz", Some("replicas"))]
    #[case::swapped_letters("nmae", Some("name"))]
    #[case::short_names_allow_one_edit("nm", None)]
    #[case::unrelated("colour", None)]
    fn similar_names(#[case] name: &str, #[case] expected: Option<&str>) {
        let candidates = ["replicas", "config", "name"];
        assert_eq!(similar(name, candidates.into_iter()), expected);
    }
}
