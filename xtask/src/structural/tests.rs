#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pretty_assertions::assert_eq;
use rstest::rstest;
use serde_json::{Value, json};

use super::{Rule, check_schema};

/// Wraps a field schema as `spec.properties.field` of an object root.
fn field(schema: Value) -> Value {
    json!({
        "type": "object",
        "properties": { "spec": { "type": "object", "properties": { "field": schema } } }
    })
}

const FIELD: &str = "openAPIV3Schema.properties.spec.properties.field";

fn at(suffix: &str) -> String {
    format!("{FIELD}{suffix}")
}

fn root(suffix: &str) -> String {
    format!("openAPIV3Schema{suffix}")
}

fn found(schema: &Value) -> Vec<(String, Rule)> {
    check_schema(schema)
        .into_iter()
        .map(|violation| (violation.path, violation.rule))
        .collect()
}

fn sorted(mut expected: Vec<(String, Rule)>) -> Vec<(String, Rule)> {
    expected.sort();
    expected
}

#[rstest]
#[case::minimal_object_root(json!({ "type": "object" }))]
#[case::scalars_arrays_and_maps(field(json!({
    "type": "object",
    "properties": {
        "replicas": { "type": "integer", "format": "int32", "minimum": 0 },
        "names": { "type": "array", "items": { "type": "string" } },
        "labels": { "type": "object", "additionalProperties": { "type": "string" } }
    }
})))]
#[case::int_or_string_without_type(field(json!({ "x-kubernetes-int-or-string": true })))]
#[case::int_or_string_any_of_pattern(field(json!({
    "x-kubernetes-int-or-string": true,
    "anyOf": [{ "type": "integer" }, { "type": "string" }]
})))]
#[case::int_or_string_all_of_pattern(field(json!({
    "x-kubernetes-int-or-string": true,
    "allOf": [
        { "anyOf": [{ "type": "integer" }, { "type": "string" }] },
        { "pattern": "^[0-9]+%?$" }
    ]
})))]
#[case::preserve_unknown_fields_without_type(field(json!({
    "x-kubernetes-preserve-unknown-fields": true
})))]
#[case::one_of_with_value_validation_only(field(json!({
    "type": "object",
    "properties": { "a": { "type": "string" }, "b": { "type": "string" } },
    "oneOf": [{ "required": ["a"] }, { "required": ["b"] }]
})))]
#[case::junctor_names_fields_specified_outside(field(json!({
    "type": "object",
    "properties": { "a": { "type": "array", "items": { "type": "string" } } },
    "anyOf": [{ "properties": { "a": { "items": { "minLength": 1 } } } }],
    "not": { "properties": { "a": { "maxItems": 0 } } }
})))]
#[case::additional_properties_true_next_to_properties(field(json!({
    "type": "object",
    "properties": { "a": { "type": "string" } },
    "additionalProperties": true
})))]
#[case::root_metadata_restricting_name(json!({
    "type": "object",
    "properties": {
        "apiVersion": { "type": "string" },
        "kind": { "type": "string" },
        "metadata": {
            "type": "object",
            "properties": {
                "name": { "type": "string", "maxLength": 52 },
                "generateName": { "type": "string" }
            }
        }
    }
}))]
#[case::nested_field_named_metadata_is_free(field(json!({
    "type": "object",
    "properties": { "metadata": { "type": "object", "description": "pod labels",
        "properties": { "labels": { "type": "object",
            "additionalProperties": { "type": "string" } } } } }
})))]
#[case::embedded_resource_preserving_unknown_fields(field(json!({
    "type": "object",
    "x-kubernetes-embedded-resource": true,
    "x-kubernetes-preserve-unknown-fields": true
})))]
fn structural_schemas_have_no_violations(#[case] schema: Value) {
    assert_eq!(found(&schema), vec![]);
}

#[rstest]
#[case::root_without_type(json!({ "properties": {} }), vec![(root(".type"), Rule::TypeMissing)])]
#[case::root_not_object(
    json!({ "type": "array", "items": { "type": "string" } }),
    vec![(root(".type"), Rule::RootNotObject)]
)]
#[case::root_not_a_schema(json!("object"), vec![(root(""), Rule::NotASchema)])]
#[case::field_without_type(
    field(json!({ "description": "no type" })),
    vec![(at(".type"), Rule::TypeMissing)]
)]
#[case::item_without_type(
    field(json!({ "type": "array", "items": {} })),
    vec![(at(".items.type"), Rule::TypeMissing)]
)]
#[case::map_value_without_type(
    field(json!({ "type": "object", "additionalProperties": {} })),
    vec![(at(".additionalProperties.type"), Rule::TypeMissing)]
)]
#[case::type_list(
    field(json!({ "type": ["string", "null"] })),
    vec![(at(".type"), Rule::TypeNotAString)]
)]
#[case::type_null(field(json!({ "type": "null" })), vec![(at(".type"), Rule::TypeNull)])]
#[case::array_without_items(
    field(json!({ "type": "array" })),
    vec![(at(".items"), Rule::ItemsMissing)]
)]
#[case::items_as_list(
    field(json!({ "type": "array", "items": [{ "type": "string" }] })),
    vec![(at(".items"), Rule::ItemsNotASchema)]
)]
#[case::ref_in_field(
    field(json!({ "type": "object", "$ref": "#/definitions/Other" })),
    vec![(at(".$ref"), Rule::RefForbidden)]
)]
#[case::ref_in_junctor(
    field(json!({ "type": "object", "allOf": [{ "$ref": "#/definitions/Other" }] })),
    vec![(at(".allOf[0].$ref"), Rule::RefForbidden)]
)]
#[case::definitions_keyword(
    json!({ "type": "object", "definitions": { "Other": { "type": "string" } } }),
    vec![(root(".definitions"), Rule::UnsupportedKeyword)]
)]
#[case::pattern_properties_keyword(
    field(json!({ "type": "object", "patternProperties": { "^a": { "type": "string" } } })),
    vec![(at(".patternProperties"), Rule::UnsupportedKeyword)]
)]
#[case::unique_items(
    field(json!({ "type": "array", "items": { "type": "string" }, "uniqueItems": true })),
    vec![(at(".uniqueItems"), Rule::UniqueItems)]
)]
#[case::additional_properties_schema_with_properties(
    field(json!({ "type": "object", "properties": { "a": { "type": "string" } },
        "additionalProperties": { "type": "string" } })),
    vec![(at(".additionalProperties"), Rule::AdditionalPropertiesWithProperties)]
)]
#[case::additional_properties_false_with_properties(
    field(json!({ "type": "object", "properties": { "a": { "type": "string" } },
        "additionalProperties": false })),
    vec![(at(".additionalProperties"), Rule::AdditionalPropertiesWithProperties)]
)]
#[case::additional_properties_at_root(
    json!({ "type": "object", "additionalProperties": { "type": "string" } }),
    vec![(root(".additionalProperties"), Rule::AdditionalPropertiesAtRoot)]
)]
#[case::type_in_any_of(
    field(json!({ "type": "string", "anyOf": [{ "type": "string" }, { "pattern": "^a" }] })),
    vec![(at(".anyOf[0].type"), Rule::ForbiddenInJunctor)]
)]
#[case::description_in_one_of(
    field(json!({ "type": "string", "oneOf": [{ "description": "first", "pattern": "^a" }] })),
    vec![(at(".oneOf[0].description"), Rule::ForbiddenInJunctor)]
)]
#[case::default_in_all_of(
    field(json!({ "type": "string", "allOf": [{ "default": "x" }] })),
    vec![(at(".allOf[0].default"), Rule::ForbiddenInJunctor)]
)]
#[case::nullable_in_not(
    field(json!({ "type": "string", "not": { "nullable": true } })),
    vec![(at(".not.nullable"), Rule::ForbiddenInJunctor)]
)]
#[case::title_in_any_of(
    field(json!({ "type": "string", "anyOf": [{ "title": "t" }] })),
    vec![(at(".anyOf[0].title"), Rule::ForbiddenInJunctor)]
)]
#[case::additional_properties_in_all_of(
    field(json!({ "type": "object", "allOf": [{ "additionalProperties": { "minLength": 1 } }] })),
    vec![(at(".allOf[0].additionalProperties"), Rule::ForbiddenInJunctor)]
)]
#[case::kubernetes_extensions_in_junctors(
    field(json!({ "type": "array", "items": { "type": "string" }, "anyOf": [
        { "x-kubernetes-list-type": "set" },
        { "x-kubernetes-preserve-unknown-fields": true },
        { "x-kubernetes-validations": [{ "rule": "self.size() > 0" }] },
        { "x-kubernetes-int-or-string": true }
    ] })),
    vec![
        (at(".anyOf[0].x-kubernetes-list-type"), Rule::ForbiddenInJunctor),
        (at(".anyOf[1].x-kubernetes-preserve-unknown-fields"), Rule::ForbiddenInJunctor),
        (at(".anyOf[2].x-kubernetes-validations"), Rule::ForbiddenInJunctor),
        (at(".anyOf[3].x-kubernetes-int-or-string"), Rule::ForbiddenInJunctor),
    ]
)]
#[case::forbidden_keyword_deep_in_junctor(
    field(json!({ "type": "object", "properties": { "a": { "type": "string" } },
        "anyOf": [{ "properties": { "a": { "type": "string" } } }] })),
    vec![(at(".anyOf[0].properties.a.type"), Rule::ForbiddenInJunctor)]
)]
#[case::int_or_string_any_of_with_a_third_type(
    field(json!({ "x-kubernetes-int-or-string": true,
        "anyOf": [{ "type": "integer" }, { "type": "string" }, { "type": "boolean" }] })),
    vec![
        (at(".anyOf[0].type"), Rule::ForbiddenInJunctor),
        (at(".anyOf[1].type"), Rule::ForbiddenInJunctor),
        (at(".anyOf[2].type"), Rule::ForbiddenInJunctor),
    ]
)]
#[case::junctor_entry_not_a_schema(
    field(json!({ "type": "string", "anyOf": ["x"] })),
    vec![(at(".anyOf[0]"), Rule::NotASchema)]
)]
#[case::junctor_field_not_specified_outside(
    field(json!({ "type": "object", "properties": { "a": { "type": "string" } },
        "anyOf": [{ "properties": { "b": { "minLength": 1 } } }] })),
    vec![(at(".properties.b"), Rule::NotSpecifiedOutsideJunctor)]
)]
#[case::junctor_items_not_specified_outside(
    field(json!({ "type": "string", "allOf": [{ "items": { "minLength": 1 } }] })),
    vec![(at(".items"), Rule::NotSpecifiedOutsideJunctor)]
)]
#[case::nested_junctor_field_not_specified_outside(
    field(json!({ "type": "object", "properties": { "a": { "type": "object" } },
        "not": { "anyOf": [{ "properties": { "a": { "properties": { "x": {} } } } }] } })),
    vec![(at(".properties.a.properties.x"), Rule::NotSpecifiedOutsideJunctor)]
)]
#[case::metadata_in_junctor(
    json!({ "type": "object", "properties": { "metadata": { "type": "object" } },
        "anyOf": [{ "properties": { "metadata": { "required": ["name"] } } }] }),
    vec![(root(".anyOf[0].properties.metadata"), Rule::MetadataInJunctor)]
)]
#[case::root_metadata_restricting_labels(
    json!({ "type": "object", "properties": { "metadata": { "type": "object",
        "properties": { "labels": { "type": "object" } } } } }),
    vec![(root(".properties.metadata.properties"), Rule::MetadataRestricted)]
)]
#[case::root_metadata_with_description(
    json!({ "type": "object", "properties": { "metadata": { "type": "object",
        "description": "standard object metadata" } } }),
    vec![(root(".properties.metadata.description"), Rule::MetadataRestricted)]
)]
#[case::root_metadata_not_object(
    json!({ "type": "object", "properties": { "metadata": { "type": "string" } } }),
    vec![(root(".properties.metadata.type"), Rule::MetadataNotObject)]
)]
#[case::root_kind_not_string(
    json!({ "type": "object", "properties": { "kind": { "type": "integer" } } }),
    vec![(root(".properties.kind.type"), Rule::KindOrApiVersionNotString)]
)]
#[case::embedded_resource_not_object(
    field(json!({ "type": "string", "x-kubernetes-embedded-resource": true,
        "x-kubernetes-preserve-unknown-fields": true })),
    vec![(at(".type"), Rule::EmbeddedResourceNotObject)]
)]
#[case::embedded_resource_without_properties(
    field(json!({ "type": "object", "x-kubernetes-embedded-resource": true })),
    vec![(at(".properties"), Rule::EmbeddedResourceWithoutProperties)]
)]
#[case::embedded_resource_with_additional_properties(
    field(json!({ "type": "object", "x-kubernetes-embedded-resource": true,
        "x-kubernetes-preserve-unknown-fields": true,
        "additionalProperties": { "type": "string" } })),
    vec![(at(".additionalProperties"), Rule::EmbeddedResourceAdditionalProperties)]
)]
#[case::int_or_string_preserving_unknown_fields(
    field(json!({ "x-kubernetes-int-or-string": true,
        "x-kubernetes-preserve-unknown-fields": true })),
    vec![(at(".x-kubernetes-preserve-unknown-fields"), Rule::IntOrStringConflict)]
)]
fn non_structural_schemas_are_reported_with_their_paths(
    #[case] schema: Value,
    #[case] expected: Vec<(String, Rule)>,
) {
    assert_eq!(found(&schema), sorted(expected));
}

#[test]
fn property_names_that_are_not_identifiers_are_quoted() {
    let schema = json!({ "type": "object",
        "properties": { "app.kubernetes.io/name": { "description": "no type" } } });
    assert_eq!(
        found(&schema),
        vec![(
            root(".properties[\"app.kubernetes.io/name\"].type"),
            Rule::TypeMissing
        )]
    );
}

#[test]
fn violations_render_path_message_and_rule() {
    let violations = check_schema(&json!({ "type": "object", "definitions": {} }));
    let lines: Vec<String> = violations.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        vec!["openAPIV3Schema.definitions: definitions is not supported (UnsupportedKeyword)"]
    );
}
