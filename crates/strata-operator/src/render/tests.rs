//! The shared render rules, through [`render_manifest`] with a small test operator.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{CustomResource, CustomResourceExt, ResourceExt};
use pretty_assertions::assert_eq;
use rstest::rstest;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;

use super::*;
use crate::controller::OperatorRuntime;

/// A widget renders one ConfigMap; a widget of size 0 is skipped.
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(group = "test.strata.dev", version = "v1", kind = "Widget", namespaced)]
struct WidgetSpec {
    size: u16,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    #[schemars(schema_with = "free_form")]
    extra: Value,
}

fn free_form(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
}

#[derive(Debug)]
struct WidgetOperator;

impl Operator for WidgetOperator {
    const NAME: &'static str = "widget-operator";

    fn crds() -> Vec<CustomResourceDefinition> {
        vec![Widget::crd()]
    }

    fn registration() -> crate::rbac::OperatorRegistration {
        crate::rbac::OperatorRegistration::default()
    }

    fn render(documents: &[Value]) -> Result<Rendered, RenderError> {
        let mut rendered = Rendered::default();
        for widget in documents_of_kind::<Widget>(documents)? {
            if widget.spec.size == 0 {
                rendered.skipped.push(Skipped {
                    kind: "Widget".to_owned(),
                    name: widget.name_any(),
                    reason: "size 0 renders nothing".to_owned(),
                });
                continue;
            }
            let mut data = widget.spec.labels.clone();
            data.insert("size".to_owned(), widget.spec.size.to_string());
            rendered.objects.push(json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": widget.name_any(), "namespace": "default"},
                "data": data,
            }));
        }
        Ok(rendered)
    }

    async fn run(_runtime: OperatorRuntime) {}
}

const WIDGET: &str =
    "apiVersion: test.strata.dev/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 3\n";

fn problems(yaml: &str) -> Vec<String> {
    match render_manifest::<WidgetOperator>(yaml) {
        Err(RenderError::Rejected { problems }) => {
            problems.iter().map(ToString::to_string).collect()
        }
        other => vec![format!("not rejected: {other:?}")],
    }
}

#[test]
fn a_valid_widget_renders() {
    let manifest =
        render_manifest::<WidgetOperator>(WIDGET).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(
        manifest.yaml,
        "---\napiVersion: v1\ndata:\n  size: \"3\"\nkind: ConfigMap\nmetadata:\n  name: w\n  namespace: default\n"
    );
    assert!(manifest.skipped.is_empty());
}

#[rstest]
#[case::unknown_spec_field(
    "spec:\n  size: 3\n  colour: red\n",
    "document 1 (Widget w): spec.colour: unknown field"
)]
#[case::unknown_metadata_field(
    "spec:\n  size: 3\nmetadata:\n  name: w\n  lables: {}\n",
    "document 1 (Widget w): metadata.lables: unknown field (did you mean labels?)"
)]
#[case::unknown_top_level_field(
    "spec:\n  size: 3\nspecs: {}\n",
    "document 1 (Widget w): specs: unknown field (did you mean spec?)"
)]
fn unknown_fields_are_rejected(#[case] change: &str, #[case] expected: &str) {
    let yaml =
        format!("apiVersion: test.strata.dev/v1\nkind: Widget\nmetadata:\n  name: w\n{change}");
    assert_eq!(problems(&yaml), [expected]);
}

#[test]
fn preserved_fields_are_accepted() {
    let yaml = format!("{WIDGET}  extra:\n    anything: [1, 2]\n");
    assert!(render_manifest::<WidgetOperator>(&yaml).is_ok());
}

#[test]
fn every_document_is_checked_before_anything_is_rendered() {
    let yaml = format!(
        "{WIDGET}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n---\n{}",
        WIDGET.replace("size: 3", "size: 3\n  sise: 4")
    );
    assert_eq!(
        problems(&yaml),
        [
            "document 2 (ConfigMap c): v1 ConfigMap is not one of widget-operator's kinds (Widget)",
            "document 3 (Widget w): spec.sise: unknown field (did you mean size?)",
        ]
    );
}

#[test]
fn type_errors_name_the_resource_and_the_field() {
    let yaml = WIDGET.replace("size: 3", "size: -1");
    let error = render_manifest::<WidgetOperator>(&yaml)
        .err()
        .map(|error| error.to_string());
    assert_eq!(
        error.as_deref(),
        Some("Widget w: spec.size: expected an integer between 0 and 65535, got -1")
    );
}

#[test]
fn skipped_resources_are_reported_and_the_rest_rendered() {
    let yaml = format!(
        "{WIDGET}---\n{}",
        WIDGET
            .replace("name: w", "name: empty")
            .replace("size: 3", "size: 0")
    );
    let manifest =
        render_manifest::<WidgetOperator>(&yaml).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(manifest.objects.len(), 1);
    assert_eq!(
        manifest
            .skipped
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        ["Widget empty: size 0 renders nothing"]
    );
}

#[rstest]
#[case::empty_file("", "nothing to render: the file holds no objects")]
#[case::only_separators("---\n---\n", "nothing to render: the file holds no objects")]
#[case::empty_list(
    "apiVersion: v1\nkind: List\nitems: []\n",
    "nothing to render: the file holds no objects"
)]
#[case::everything_skipped(
    &WIDGET.replace("size: 3", "size: 0"),
    "nothing to render: every resource was skipped:\n  Widget w: size 0 renders nothing"
)]
fn nothing_rendered_is_an_error(#[case] yaml: &str, #[case] expected: &str) {
    let error = render_manifest::<WidgetOperator>(yaml)
        .err()
        .map(|error| error.to_string());
    assert_eq!(error.as_deref(), Some(expected));
}

#[test]
fn documents_are_split_and_empty_ones_skipped() {
    let documents =
        parse_documents("---\napiVersion: v1\nkind: ConfigMap\n---\n---\na: 1\n").expect("yaml");
    assert_eq!(documents.len(), 2);
}

#[test]
fn invalid_yaml_names_the_document() {
    let error = parse_documents("a: 1\n---\n: : :\n").expect_err("invalid");
    assert!(error.to_string().starts_with("document 2"), "{error}");
    let error = render_manifest::<WidgetOperator>("a: 1\n---\n: : :\n").expect_err("invalid");
    assert!(error.to_string().starts_with("document 2"), "{error}");
}

#[test]
fn only_documents_of_the_kind_are_picked() {
    let documents = vec![
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "b"}}),
    ];
    let config_maps: Vec<ConfigMap> = documents_of_kind(&documents).expect("valid");
    assert_eq!(config_maps.len(), 1);
}

#[test]
fn output_is_sorted_and_deterministic() {
    let objects = vec![
        json!({"kind": "Service", "metadata": {"name": "b", "namespace": "n"}}),
        json!({"kind": "ConfigMap", "metadata": {"name": "z", "namespace": "n"}}),
        json!({"kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"}}),
    ];
    let mut reversed = objects.clone();
    reversed.reverse();
    let yaml = to_sorted_yaml(objects);
    assert_eq!(yaml, to_sorted_yaml(reversed));
    let names: Vec<_> = yaml
        .lines()
        .filter_map(|l| l.strip_prefix("  name: "))
        .collect();
    assert_eq!(names, ["a", "z", "b"]);
}
