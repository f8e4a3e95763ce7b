//! The documents of a manifest file, and the checks `kubectl apply` would make before the
//! operator sees them: a known kind in a served version, a name, and no unknown field.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde_json::Value;

use super::schema::{similar, unknown_fields};
use super::{Problem, RenderError};

/// One object of the file, with where it came from for messages.
#[derive(Debug)]
pub(crate) struct Document {
    /// `document 2`, or `document 2, item 1` inside a `List`.
    pub(crate) source: String,
    /// The object as JSON.
    pub(crate) value: Value,
}

/// Splits `yaml` into objects: empty documents are dropped and the items of a `v1 List`
/// take its place. A `List` whose `items` is not a list is a problem.
pub(crate) fn read(yaml: &str) -> Result<(Vec<Document>, Vec<Problem>), RenderError> {
    let mut documents = Vec::new();
    let mut problems = Vec::new();
    for (index, document) in serde_yaml_ng::Deserializer::from_str(yaml).enumerate() {
        let value = Value::deserialize(document).map_err(|source| RenderError::Yaml {
            index: index + 1,
            source,
        })?;
        let source = format!("document {}", index + 1);
        expand(source, value, &mut documents, &mut problems);
    }
    Ok((documents, problems))
}

fn expand(
    source: String,
    value: Value,
    documents: &mut Vec<Document>,
    problems: &mut Vec<Problem>,
) {
    if value.is_null() {
        return;
    }
    if !(value["apiVersion"] == "v1" && value["kind"] == "List") {
        documents.push(Document { source, value });
        return;
    }
    match value.get("items") {
        Some(Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                let item_source = format!("{source}, item {}", index + 1);
                expand(item_source, item.clone(), documents, problems);
            }
        }
        None | Some(Value::Null) => {}
        Some(_) => problems.push(Problem::new(source, "items: expected a list")),
    }
}

/// The kinds an operator renders, from its CRDs: per kind, each served version's schema.
#[derive(Debug)]
pub(crate) struct Kinds {
    operator: String,
    kinds: Vec<Kind>,
}

#[derive(Debug)]
struct Kind {
    kind: String,
    /// `group/version` to that version's `openAPIV3Schema` (`Null` when it has none).
    versions: Vec<(String, Value)>,
}

impl Kinds {
    /// The served kinds and versions of `crds`, for the operator called `operator`.
    pub(crate) fn new(
        operator: &str,
        crds: &[CustomResourceDefinition],
    ) -> Result<Self, RenderError> {
        let mut kinds = Vec::new();
        for crd in crds {
            let mut versions = Vec::new();
            for version in crd.spec.versions.iter().filter(|version| version.served) {
                let schema = version
                    .schema
                    .as_ref()
                    .and_then(|schema| schema.open_api_v3_schema.as_ref());
                let schema =
                    serde_json::to_value(schema).map_err(|source| RenderError::CrdSchema {
                        crd: crd.metadata.name.clone().unwrap_or_default(),
                        source,
                    })?;
                versions.push((format!("{}/{}", crd.spec.group, version.name), schema));
            }
            kinds.push(Kind {
                kind: crd.spec.names.kind.clone(),
                versions,
            });
        }
        Ok(Self {
            operator: operator.to_owned(),
            kinds,
        })
    }

    /// Everything `kubectl apply` or this operator would refuse about `document`.
    pub(crate) fn check(&self, document: &Document) -> Vec<Problem> {
        let value = &document.value;
        let Some(fields) = value.as_object() else {
            return vec![Problem::new(
                &document.source,
                format!(
                    "not a Kubernetes object: expected a mapping with apiVersion and kind, got {}",
                    json_kind(value)
                ),
            )];
        };
        let type_meta = |field: &str| match fields.get(field) {
            Some(Value::String(text)) if !text.is_empty() => Ok(text.as_str()),
            None | Some(Value::Null | Value::String(_)) => {
                Err(format!("{field}: required field is missing"))
            }
            Some(other) => Err(format!(
                "{field}: expected a string, got {}",
                json_kind(other)
            )),
        };
        let (api_version, kind) = match (type_meta("apiVersion"), type_meta("kind")) {
            (Ok(api_version), Ok(kind)) => (api_version, kind),
            (api_version, kind) => {
                return [api_version.err(), kind.err()]
                    .into_iter()
                    .flatten()
                    .map(|message| Problem::new(&document.source, message))
                    .collect();
            }
        };
        let source = format!("{} ({kind} {})", document.source, qualified_name(value));
        let schema = match self.schema(api_version, kind) {
            Ok(schema) => schema,
            Err(message) => return vec![Problem::new(source, message)],
        };

        let mut messages = metadata_problems(value.get("metadata"));
        let mut body = fields.clone();
        for field in ["apiVersion", "kind", "metadata"] {
            body.remove(field);
        }
        if !schema.is_null() {
            messages.extend(unknown_fields(schema, &Value::Object(body), ""));
        }
        messages
            .into_iter()
            .map(|message| Problem::new(&source, message))
            .collect()
    }

    /// The schema of `kind` in `api_version`, or why the operator does not render it.
    fn schema(&self, api_version: &str, kind: &str) -> Result<&Value, String> {
        let Some(known) = self.kinds.iter().find(|known| known.kind == kind) else {
            let names = self.kinds.iter().map(|known| known.kind.as_str());
            let hint = similar(kind, names.clone())
                .map(|name| format!("; did you mean {name}?"))
                .unwrap_or_default();
            return Err(format!(
                "{api_version} {kind} is not one of {}'s kinds ({}){hint}",
                self.operator,
                names.collect::<Vec<_>>().join(", ")
            ));
        };
        match known
            .versions
            .iter()
            .find(|(served, _)| served == api_version)
        {
            Some((_, schema)) => Ok(schema),
            None => Err(format!(
                "apiVersion {api_version} is not served for {kind}; use {}",
                known
                    .versions
                    .iter()
                    .map(|(served, _)| served.as_str())
                    .collect::<Vec<_>>()
                    .join(" or ")
            )),
        }
    }
}

/// `namespace/name`, `name`, or `<unnamed>`, for messages.
fn qualified_name(value: &Value) -> String {
    let metadata = &value["metadata"];
    match (metadata["namespace"].as_str(), metadata["name"].as_str()) {
        (Some(namespace), Some(name)) => format!("{namespace}/{name}"),
        (None, Some(name)) => name.to_owned(),
        _ => "<unnamed>".to_owned(),
    }
}

/// The fields of `ObjectMeta`, derived from its type, for the strict check of `metadata`.
static OBJECT_META_FIELDS: LazyLock<BTreeSet<String>> = LazyLock::new(|| {
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<ObjectMeta>();
    schema
        .as_value()
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default()
});

/// A missing name (`kubectl apply` needs one) and unknown `metadata` fields; the types of
/// the known fields are checked when the resource is deserialised.
fn metadata_problems(metadata: Option<&Value>) -> Vec<String> {
    let mut messages = Vec::new();
    let name = metadata.and_then(|metadata| metadata.get("name"));
    if name.is_none_or(|name| name.is_null() || name == "") {
        messages.push("metadata.name: required field is missing".to_owned());
    }
    if let Some(fields) = metadata.and_then(Value::as_object)
        && !OBJECT_META_FIELDS.is_empty()
    {
        for field in fields
            .keys()
            .filter(|field| !OBJECT_META_FIELDS.contains(*field))
        {
            let known = OBJECT_META_FIELDS.iter().map(String::as_str);
            messages.push(match similar(field, known) {
                Some(hint) => format!("metadata.{field}: unknown field (did you mean {hint}?)"),
                None => format!("metadata.{field}: unknown field"),
            });
        }
    }
    messages
}

/// The JSON type of a value that is not an object, for messages.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Array(_) => "a list",
        Value::String(_) => "a string",
        Value::Number(_) => "a number",
        Value::Bool(_) => "a boolean",
        Value::Null => "null",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[test]
    fn object_meta_fields_come_from_the_type() {
        for field in [
            "name",
            "namespace",
            "labels",
            "annotations",
            "ownerReferences",
        ] {
            assert!(OBJECT_META_FIELDS.contains(field), "{OBJECT_META_FIELDS:?}");
        }
    }

    #[rstest]
    #[case::plain("a: 1\n---\nb: 2\n", &["document 1", "document 2"])]
    #[case::empty_documents_are_dropped("---\n---\na: 1\n---\n", &["document 2"])]
    #[case::list_items_replace_the_list(
        "apiVersion: v1\nkind: List\nitems:\n- a: 1\n- b: 2\n---\nc: 3\n",
        &["document 1, item 1", "document 1, item 2", "document 2"]
    )]
    #[case::nested_lists_are_expanded(
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: List\n  items:\n  - a: 1\n",
        &["document 1, item 1, item 1"]
    )]
    #[case::an_empty_list_gives_nothing("apiVersion: v1\nkind: List\nitems: []\n", &[])]
    #[case::other_lists_stay("apiVersion: v2\nkind: List\nitems: []\n", &["document 1"])]
    fn documents_are_read_and_lists_expanded(#[case] yaml: &str, #[case] sources: &[&str]) {
        let (documents, problems) = read(yaml).unwrap_or_else(|error| panic!("{error}"));
        assert!(problems.is_empty(), "{problems:?}");
        let found: Vec<&str> = documents
            .iter()
            .map(|document| document.source.as_str())
            .collect();
        assert_eq!(found, sources);
    }

    #[test]
    fn a_list_without_a_list_of_items_is_a_problem() {
        let (_, problems) = read("apiVersion: v1\nkind: List\nitems: {}\n")
            .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(
            problems.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["document 1: items: expected a list"]
        );
    }
}
