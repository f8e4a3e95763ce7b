//! Checks that CRD schemas are structural, before an API server rejects them.
//!
//! Kubernetes refuses a `apiextensions.k8s.io/v1` CRD whose `openAPIV3Schema` is not
//! structural (see "Specifying a structural schema" in the CustomResourceDefinition docs)
//! and a few keywords the CRD validation never supports. The rules, as the docs and the
//! apiextensions-apiserver validation state them:
//!
//! - the root, every `properties` field, every `additionalProperties` schema and every
//!   `items` schema has a non-empty `type`, unless `x-kubernetes-int-or-string: true` or
//!   `x-kubernetes-preserve-unknown-fields: true`; the root's type is `object`;
//! - an `array` has `items`, and `items` is one schema, not a list;
//! - no `$ref`, `id`, `definitions`, `dependencies`, `patternProperties`,
//!   `additionalItems`, `type: "null"` or `uniqueItems: true` anywhere;
//! - `additionalProperties` (a schema or `false`) never next to `properties`, and never at
//!   the root;
//! - inside `allOf`, `anyOf`, `oneOf` and `not` there is no `type`, `additionalProperties`,
//!   `default`, `title`, `description`, `nullable`, `externalDocs`, no
//!   `x-kubernetes-{preserve-unknown-fields,embedded-resource,int-or-string,list-map-keys,
//!   list-type,map-type,validations}` and no `metadata` property, except the two
//!   int-or-string patterns (`anyOf: [{type: integer}, {type: string}]`, directly or as
//!   the first `allOf` entry);
//! - every field and array item named inside such a junctor is also specified outside it;
//! - at the root, `metadata` may only restrict `name` and `generateName`; `kind` and
//!   `apiVersion`, where given, are strings; `x-kubernetes-embedded-resource` nodes follow
//!   the same rules and are objects.
//!
//! Checking the JSON form, not `JSONSchemaProps`, lets the tests state schemas as the API
//! server receives them.

use std::fmt;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{Map, Value, json};

mod junctors;

/// Which structural rule a [`Violation`] breaks; stable names make tests and reports precise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// A schema node (or a junctor entry) is not a JSON object.
    NotASchema,
    /// A version has no `openAPIV3Schema`.
    SchemaMissing,
    /// A specified node has no `type`.
    TypeMissing,
    /// `type` is not a single string.
    TypeNotAString,
    /// `type: "null"`; CRDs express this with `nullable`.
    TypeNull,
    /// The root schema is not of type `object`.
    RootNotObject,
    /// `type: array` without `items`.
    ItemsMissing,
    /// `items` given as a list of schemas.
    ItemsNotASchema,
    /// `$ref` is not supported in CRD schemas.
    RefForbidden,
    /// A JSON-Schema keyword CRDs do not support.
    UnsupportedKeyword,
    /// `uniqueItems: true` is refused for its quadratic cost.
    UniqueItems,
    /// `additionalProperties` next to `properties`.
    AdditionalPropertiesWithProperties,
    /// `additionalProperties` at the root.
    AdditionalPropertiesAtRoot,
    /// A keyword that is not allowed inside `allOf`/`anyOf`/`oneOf`/`not`.
    ForbiddenInJunctor,
    /// A `metadata` property inside a junctor.
    MetadataInJunctor,
    /// A field or item named in a junctor but not specified outside of it.
    NotSpecifiedOutsideJunctor,
    /// Root `metadata` restricts more than `name` and `generateName`.
    MetadataRestricted,
    /// `metadata` of a resource is not of type `object`.
    MetadataNotObject,
    /// `kind` or `apiVersion` of a resource is not of type `string`.
    KindOrApiVersionNotString,
    /// An embedded resource is not of type `object`.
    EmbeddedResourceNotObject,
    /// An embedded resource uses `additionalProperties`.
    EmbeddedResourceAdditionalProperties,
    /// An embedded resource without properties must preserve unknown fields.
    EmbeddedResourceWithoutProperties,
    /// `x-kubernetes-int-or-string` combined with an extension it excludes.
    IntOrStringConflict,
}

/// One place where a schema is not structural.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Violation {
    /// JSON path of the offending keyword or node, e.g. `openAPIV3Schema.properties.spec.type`.
    pub path: String,
    /// The rule broken.
    pub rule: Rule,
    /// A sentence for humans.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} ({:?})", self.path, self.message, self.rule)
    }
}

/// Checks every version of a CRD; paths start at the CRD, e.g. `spec.versions[v1].schema...`.
pub fn check_crd(crd: &CustomResourceDefinition) -> Vec<Violation> {
    let mut violations = Vec::new();
    for version in &crd.spec.versions {
        let prefix = format!("spec.versions[{}].schema", version.name);
        let schema = version
            .schema
            .as_ref()
            .and_then(|validation| validation.open_api_v3_schema.as_ref());
        let Some(schema) = schema else {
            violations.push(Violation {
                path: format!("{prefix}.openAPIV3Schema"),
                rule: Rule::SchemaMissing,
                message: "every served version needs a schema".to_owned(),
            });
            continue;
        };
        match serde_json::to_value(schema) {
            Ok(value) => violations.extend(check_schema(&value).into_iter().map(|v| Violation {
                path: format!("{prefix}.{}", v.path),
                ..v
            })),
            Err(error) => violations.push(Violation {
                path: format!("{prefix}.openAPIV3Schema"),
                rule: Rule::NotASchema,
                message: format!("cannot serialize the schema: {error}"),
            }),
        }
    }
    violations
}

/// Checks one `openAPIV3Schema`; paths start with `openAPIV3Schema`. Sorted, deterministic.
pub fn check_schema(schema: &Value) -> Vec<Violation> {
    let mut checker = Checker::default();
    checker.structural(schema, Level::Root, "openAPIV3Schema");
    checker.violations.sort();
    checker.violations.dedup();
    checker.violations
}

/// Where a structural node sits, which decides the wording and the root-only rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// Collects violations while walking a schema.
#[derive(Debug, Default)]
struct Checker {
    violations: Vec<Violation>,
}

impl Checker {
    fn push(&mut self, path: impl Into<String>, rule: Rule, message: impl Into<String>) {
        self.violations.push(Violation {
            path: path.into(),
            rule,
            message: message.into(),
        });
    }

    /// Walks a node outside any junctor: these nodes define the structure.
    fn structural(&mut self, node: &Value, level: Level, path: &str) {
        let Some(node) = node.as_object() else {
            self.push(path, Rule::NotASchema, "must be a schema object");
            return;
        };
        self.everywhere(node, path);
        let node_type = node.get("type").and_then(Value::as_str).unwrap_or("");
        let int_or_string = is_true(node, "x-kubernetes-int-or-string");
        let preserve_unknown = is_true(node, "x-kubernetes-preserve-unknown-fields");
        let embedded = is_true(node, "x-kubernetes-embedded-resource");
        let properties = node.get("properties").and_then(Value::as_object);
        let has_properties = properties.is_some_and(|p| !p.is_empty());

        if node_type == "array" && !node.contains_key("items") {
            self.push(
                child(path, "items"),
                Rule::ItemsMissing,
                "must be specified for arrays",
            );
        }
        if let Some(items) = node.get("items").filter(|items| !items.is_array()) {
            self.structural(items, Level::Item, &child(path, "items"));
        }
        for (name, field) in properties.into_iter().flatten() {
            self.structural(field, Level::Field, &property(path, name));
        }
        if let Some(additional) = node.get("additionalProperties") {
            let path = child(path, "additionalProperties");
            if level == Level::Root {
                self.push(
                    &path,
                    Rule::AdditionalPropertiesAtRoot,
                    "must not be used at the root",
                );
            }
            if has_properties && additional != &Value::Bool(true) {
                self.push(
                    &path,
                    Rule::AdditionalPropertiesWithProperties,
                    "must not be used together with properties",
                );
            }
            if embedded {
                self.push(
                    &path,
                    Rule::EmbeddedResourceAdditionalProperties,
                    "must not be used if x-kubernetes-embedded-resource is true",
                );
            }
            if additional.is_object() {
                self.structural(additional, Level::Field, &path);
            }
        }
        if int_or_string && preserve_unknown {
            self.push(
                child(path, "x-kubernetes-preserve-unknown-fields"),
                Rule::IntOrStringConflict,
                "must be false if x-kubernetes-int-or-string is true",
            );
        }
        if int_or_string && embedded {
            self.push(
                child(path, "x-kubernetes-embedded-resource"),
                Rule::IntOrStringConflict,
                "must be false if x-kubernetes-int-or-string is true",
            );
        }

        let skip_any_of = is_int_or_string_any_of(node.get("anyOf"));
        let skip_first_all_of_any_of = node
            .get("allOf")
            .and_then(Value::as_array)
            .and_then(|all_of| all_of.first())
            .is_some_and(|first| is_int_or_string_any_of(first.get("anyOf")));
        self.junctors(node, skip_any_of, skip_first_all_of_any_of, path);
        self.completeness(node, Some(node), path, path);

        let type_missing = match node.get("type") {
            None => true,
            Some(Value::String(name)) => name.is_empty(),
            Some(_) => false,
        };
        let typed = int_or_string || preserve_unknown || !type_missing;
        self.node_type(node_type, level, path, embedded, typed);
        if level == Level::Root || embedded {
            self.resource_fields(properties, level, path);
        }
        if embedded && !preserve_unknown && !has_properties {
            self.push(
                child(path, "properties"),
                Rule::EmbeddedResourceWithoutProperties,
                "must not be empty if x-kubernetes-embedded-resource is true without \
                 x-kubernetes-preserve-unknown-fields",
            );
        }
    }

    /// Rules on `type` for a structural node; `typed` says a type is given or not needed.
    fn node_type(
        &mut self,
        node_type: &str,
        level: Level,
        path: &str,
        embedded: bool,
        typed: bool,
    ) {
        let type_path = child(path, "type");
        if embedded && node_type != "object" {
            self.push(
                type_path,
                Rule::EmbeddedResourceNotObject,
                "must be object if x-kubernetes-embedded-resource is true",
            );
            return;
        }
        if !typed {
            let message = match level {
                Level::Root => "must not be empty at the root",
                Level::Item => "must not be empty for specified array items",
                Level::Field => "must not be empty for specified object fields",
            };
            self.push(type_path, Rule::TypeMissing, message);
        } else if level == Level::Root && !node_type.is_empty() && node_type != "object" {
            self.push(type_path, Rule::RootNotObject, "must be object at the root");
        }
    }

    /// `kind`, `apiVersion` and `metadata` of the root or of an embedded resource.
    fn resource_fields(
        &mut self,
        properties: Option<&Map<String, Value>>,
        level: Level,
        path: &str,
    ) {
        let Some(properties) = properties else {
            return;
        };
        for name in ["kind", "apiVersion"] {
            if let Some(field) = properties.get(name)
                && field.get("type").and_then(Value::as_str) != Some("string")
            {
                self.push(
                    child(&property(path, name), "type"),
                    Rule::KindOrApiVersionNotString,
                    "must be string",
                );
            }
        }
        let Some(metadata) = properties.get("metadata").and_then(Value::as_object) else {
            return;
        };
        let metadata_path = property(path, "metadata");
        if metadata.get("type").and_then(Value::as_str) != Some("object") {
            self.push(
                child(&metadata_path, "type"),
                Rule::MetadataNotObject,
                "must be object",
            );
        }
        if level != Level::Root {
            return;
        }
        for (keyword, value) in metadata {
            let allowed = match keyword.as_str() {
                "type" | "default" => true,
                "properties" => value.as_object().is_some_and(|fields| {
                    fields
                        .keys()
                        .all(|name| name == "name" || name == "generateName")
                }),
                _ => false,
            };
            if !allowed {
                self.push(
                    child(&metadata_path, keyword),
                    Rule::MetadataRestricted,
                    "must not specify anything other than name and generateName",
                );
            }
        }
    }

    /// Rules that hold for every node, inside junctors or not.
    fn everywhere(&mut self, node: &Map<String, Value>, path: &str) {
        if node.contains_key("$ref") {
            self.push(
                child(path, "$ref"),
                Rule::RefForbidden,
                "$ref is not supported",
            );
        }
        for keyword in [
            "id",
            "additionalItems",
            "patternProperties",
            "definitions",
            "dependencies",
        ] {
            if node.contains_key(keyword) {
                self.push(
                    child(path, keyword),
                    Rule::UnsupportedKeyword,
                    format!("{keyword} is not supported"),
                );
            }
        }
        if is_true(node, "uniqueItems") {
            self.push(
                child(path, "uniqueItems"),
                Rule::UniqueItems,
                "cannot be true since the runtime complexity becomes quadratic",
            );
        }
        match node.get("type") {
            None => {}
            Some(Value::String(name)) if name == "null" => self.push(
                child(path, "type"),
                Rule::TypeNull,
                "cannot be null, use nullable instead",
            ),
            Some(Value::String(_)) => {}
            Some(_) => self.push(
                child(path, "type"),
                Rule::TypeNotAString,
                "must be a single string",
            ),
        }
        if node.get("items").is_some_and(Value::is_array) {
            self.push(
                child(path, "items"),
                Rule::ItemsNotASchema,
                "must be a schema object and not an array",
            );
        }
    }
}

/// True when `node[key]` is the JSON boolean `true`.
fn is_true(node: &Map<String, Value>, key: &str) -> bool {
    node.get(key) == Some(&Value::Bool(true))
}

/// The one `anyOf` shape allowed to carry `type` in a junctor: int-or-string.
fn is_int_or_string_any_of(any_of: Option<&Value>) -> bool {
    any_of == Some(&json!([{ "type": "integer" }, { "type": "string" }]))
}

/// `path.keyword`.
fn child(path: &str, keyword: &str) -> String {
    format!("{path}.{keyword}")
}

/// `path.properties.name`, quoting names that are not plain identifiers.
fn property(path: &str, name: &str) -> String {
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        format!("{path}.properties.{name}")
    } else {
        format!("{path}.properties[{name:?}]")
    }
}

#[cfg(test)]
mod tests;
