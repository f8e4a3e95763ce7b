//! The rules for `allOf`, `anyOf`, `oneOf` and `not`: value validation only, and nothing
//! there that is not also specified in the structure outside of them.

use serde_json::{Map, Value};

use super::{Checker, Rule, child, property};

/// When a keyword inside a junctor counts as set (mirrors how the API server reads it).
#[derive(Debug, Clone, Copy)]
enum Set {
    /// Any value but `null`.
    NotNull,
    /// A non-empty string or list.
    NonEmpty,
    /// The boolean `true`.
    True,
}

/// Keywords that carry structure or metadata and therefore may not appear in junctors.
const FORBIDDEN_IN_JUNCTORS: [(&str, Set); 14] = [
    ("type", Set::NonEmpty),
    ("additionalProperties", Set::NotNull),
    ("default", Set::NotNull),
    ("title", Set::NonEmpty),
    ("description", Set::NonEmpty),
    ("nullable", Set::True),
    ("externalDocs", Set::NotNull),
    ("x-kubernetes-preserve-unknown-fields", Set::True),
    ("x-kubernetes-embedded-resource", Set::True),
    ("x-kubernetes-int-or-string", Set::True),
    ("x-kubernetes-list-map-keys", Set::NonEmpty),
    ("x-kubernetes-list-type", Set::NotNull),
    ("x-kubernetes-map-type", Set::NotNull),
    ("x-kubernetes-validations", Set::NonEmpty),
];

/// The four logical junctors, in the order they are reported.
const JUNCTORS: [&str; 4] = ["allOf", "anyOf", "oneOf", "not"];

impl Checker {
    /// Checks the junctors of `node`. The int-or-string patterns may skip one `anyOf`.
    pub(super) fn junctors(
        &mut self,
        node: &Map<String, Value>,
        skip_any_of: bool,
        skip_first_all_of_any_of: bool,
        path: &str,
    ) {
        for entry in junctor_entries(node, path) {
            let Some(schema) = entry.schema else {
                self.push(entry.path, Rule::NotASchema, "must be a schema object");
                continue;
            };
            match entry.keyword {
                "anyOf" if skip_any_of => {}
                "allOf" => self.nested(
                    schema,
                    skip_first_all_of_any_of && entry.index == 0,
                    &entry.path,
                ),
                _ => self.nested(schema, false, &entry.path),
            }
        }
    }

    /// Walks a node inside a junctor, where only value validation is allowed.
    fn nested(&mut self, node: &Map<String, Value>, skip_any_of: bool, path: &str) {
        self.everywhere(node, path);
        self.junctors(node, skip_any_of, false, path);
        if let Some(items) = node.get("items").and_then(Value::as_object) {
            self.nested(items, false, &child(path, "items"));
        }
        for (name, field) in node
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let field_path = property(path, name);
            match field.as_object() {
                Some(field) => self.nested(field, false, &field_path),
                None => self.push(field_path, Rule::NotASchema, "must be a schema object"),
            }
        }
        for (keyword, set) in FORBIDDEN_IN_JUNCTORS {
            if node.get(keyword).is_some_and(|value| is_set(value, set)) {
                self.push(
                    child(path, keyword),
                    Rule::ForbiddenInJunctor,
                    format!("{keyword} must not be used inside allOf, anyOf, oneOf or not"),
                );
            }
        }
        let names_metadata = node
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|properties| properties.contains_key("metadata"));
        if names_metadata {
            self.push(
                property(path, "metadata"),
                Rule::MetadataInJunctor,
                "must not be specified in a nested context",
            );
        }
    }

    /// Every field or item a junctor of `validation` names must exist in `structure`.
    pub(super) fn completeness(
        &mut self,
        validation: &Map<String, Value>,
        structure: Option<&Map<String, Value>>,
        structure_path: &str,
        validation_path: &str,
    ) {
        for entry in junctor_entries(validation, validation_path) {
            if let Some(schema) = entry.schema {
                self.nested_completeness(schema, structure, structure_path, &entry.path);
            }
        }
    }

    fn nested_completeness(
        &mut self,
        validation: &Map<String, Value>,
        structure: Option<&Map<String, Value>>,
        structure_path: &str,
        validation_path: &str,
    ) {
        let Some(structure) = structure else {
            self.push(
                structure_path,
                Rule::NotSpecifiedOutsideJunctor,
                format!("must be specified because it is used in {validation_path}"),
            );
            return;
        };
        self.completeness(validation, Some(structure), structure_path, validation_path);
        if let Some(items) = validation.get("items").and_then(Value::as_object) {
            self.nested_completeness(
                items,
                structure.get("items").and_then(Value::as_object),
                &child(structure_path, "items"),
                &child(validation_path, "items"),
            );
        }
        let fields = validation.get("properties").and_then(Value::as_object);
        let structure_fields = structure.get("properties").and_then(Value::as_object);
        for (name, field) in fields.into_iter().flatten() {
            if let Some(field) = field.as_object() {
                self.nested_completeness(
                    field,
                    structure_fields
                        .and_then(|f| f.get(name))
                        .and_then(Value::as_object),
                    &property(structure_path, name),
                    &property(validation_path, name),
                );
            }
        }
    }
}

/// One schema under a junctor keyword.
#[derive(Debug)]
struct JunctorEntry<'a> {
    /// `allOf`, `anyOf`, `oneOf` or `not`.
    keyword: &'static str,
    /// Position in the list (0 for `not`).
    index: usize,
    /// The entry, or `None` when it is not a JSON object.
    schema: Option<&'a Map<String, Value>>,
    /// JSON path of the entry.
    path: String,
}

/// Every junctor entry of `node`, in [`JUNCTORS`] order.
fn junctor_entries<'a>(node: &'a Map<String, Value>, path: &str) -> Vec<JunctorEntry<'a>> {
    let mut entries = Vec::new();
    for keyword in JUNCTORS {
        let entry = |index, schema, path| JunctorEntry {
            keyword,
            index,
            schema,
            path,
        };
        match (keyword, node.get(keyword)) {
            (_, None) => {}
            ("not", Some(schema)) => {
                entries.push(entry(0, schema.as_object(), child(path, keyword)))
            }
            (_, Some(Value::Array(list))) => {
                for (index, schema) in list.iter().enumerate() {
                    let entry_path = format!("{}[{index}]", child(path, keyword));
                    entries.push(entry(index, schema.as_object(), entry_path));
                }
            }
            (_, Some(_)) => entries.push(entry(0, None, child(path, keyword))),
        }
    }
    entries
}

/// Whether a forbidden keyword's value counts as set.
fn is_set(value: &Value, set: Set) -> bool {
    match set {
        Set::NotNull => !value.is_null(),
        Set::True => value == &Value::Bool(true),
        Set::NonEmpty => match value {
            Value::Null => false,
            Value::String(text) => !text.is_empty(),
            Value::Array(list) => !list.is_empty(),
            _ => true,
        },
    }
}
