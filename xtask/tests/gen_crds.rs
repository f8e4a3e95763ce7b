//! gen-crds against a temporary workspace, with a fixture operator and the real registry.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod fixture;

use std::fs;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use pretty_assertions::assert_eq;
use xtask::{
    commands::workspace_root,
    crds::{self, CrdError, HEADER},
    generated::DriftKind,
    operators::{self, Operator},
    structural,
};

use fixture::FIXTURE_OPERATOR;

const WIDGETS: &str = "crds/widgets.fixture.strata.dev.yaml";
const GADGETS: &str = "crds/gadgets.fixture.strata.dev.yaml";

#[test]
fn every_registered_crd_is_structural() {
    let mut checked = 0;
    for operator in operators::registered().iter().chain([&FIXTURE_OPERATOR]) {
        for crd in (operator.crds)() {
            let violations = structural::check_crd(&crd);
            assert!(
                violations.is_empty(),
                "{} of {}:\n{violations:#?}",
                crds::file_name(&crd),
                operator.name
            );
            checked += 1;
        }
    }
    assert!(
        checked >= 2,
        "the fixture alone has two CRDs, checked {checked}"
    );
}

#[test]
fn registry_has_no_problems() {
    assert_eq!(
        operators::registry_problems(operators::registered(), &workspace_root()),
        Vec::<String>::new()
    );
}

#[test]
fn registry_problems_name_duplicates_and_missing_crates() {
    let missing = Operator {
        crate_dir: "operators/does-not-exist",
        example: "examples/does-not-exist.yaml",
        ..FIXTURE_OPERATOR
    };
    assert_eq!(
        operators::registry_problems(&[FIXTURE_OPERATOR, missing], &workspace_root()),
        vec![
            "fixture-operator is registered twice".to_owned(),
            "fixture-operator: operators/does-not-exist/Cargo.toml does not exist".to_owned(),
            "fixture-operator: example examples/does-not-exist.yaml does not exist".to_owned(),
        ]
    );
}

#[test]
fn committed_crds_match_the_registered_operators() {
    let tree = crds::desired_tree(operators::registered()).expect("generates");
    let drifts = tree.check(&workspace_root()).expect("checks");
    let lines: Vec<String> = drifts.iter().map(ToString::to_string).collect();
    assert_eq!(lines, Vec::<String>::new(), "run `cargo xtask gen-crds`");
}

#[test]
fn one_file_per_kind_named_plural_dot_group_with_a_header() {
    let workspace = tempfile::tempdir().expect("tempdir");
    let tree = crds::desired_tree(&[FIXTURE_OPERATOR]).expect("generates");
    tree.write(workspace.path()).expect("writes");

    let mut names: Vec<String> = fs::read_dir(workspace.path().join("crds"))
        .expect("crds dir")
        .map(|entry| {
            format!(
                "crds/{}",
                entry.expect("entry").file_name().to_string_lossy()
            )
        })
        .collect();
    names.sort();
    assert_eq!(names, vec![GADGETS.to_owned(), WIDGETS.to_owned()]);

    let text = fs::read_to_string(workspace.path().join(WIDGETS)).expect("read");
    assert!(text.starts_with(HEADER), "{text}");
    let parsed: CustomResourceDefinition = serde_yaml_ng::from_str(&text).expect("valid YAML");
    assert_eq!(parsed, fixture::crds()[0]);
}

#[test]
fn generation_is_deterministic() {
    let first = crds::desired_tree(&[FIXTURE_OPERATOR]).expect("generates");
    let second = crds::desired_tree(&[FIXTURE_OPERATOR]).expect("generates");
    assert_eq!(first, second);
}

#[test]
fn an_empty_registry_wants_an_empty_crds_directory() {
    let workspace = tempfile::tempdir().expect("tempdir");
    crds::desired_tree(&[FIXTURE_OPERATOR])
        .expect("generates")
        .write(workspace.path())
        .expect("writes");
    let empty = crds::desired_tree(&[]).expect("generates");

    let drifts = empty.check(workspace.path()).expect("checks");
    assert_eq!(
        drifts.iter().map(|d| d.kind.clone()).collect::<Vec<_>>(),
        vec![DriftKind::Extra, DriftKind::Extra]
    );
    let summary = empty.write(workspace.path()).expect("writes");
    assert_eq!(summary.removed.len(), 2);
}

#[test]
fn check_names_stale_missing_and_extra_crd_files() {
    let workspace = tempfile::tempdir().expect("tempdir");
    let tree = crds::desired_tree(&[FIXTURE_OPERATOR]).expect("generates");
    tree.write(workspace.path()).expect("writes");
    let root = workspace.path();
    let edited = fs::read_to_string(root.join(WIDGETS))
        .expect("read")
        .replace("Widget", "Gizmo");
    fs::write(root.join(WIDGETS), edited).expect("edit");
    fs::remove_file(root.join(GADGETS)).expect("remove");
    fs::write(root.join("crds/old.fixture.strata.dev.yaml"), "kind: Old\n").expect("extra");

    let drifts = tree.check(root).expect("checks");
    let summary: Vec<(String, &str)> = drifts
        .iter()
        .map(|drift| {
            let kind = match drift.kind {
                DriftKind::Missing => "missing",
                DriftKind::Stale(_) => "stale",
                DriftKind::Extra => "extra",
            };
            (drift.path.display().to_string(), kind)
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (GADGETS.to_owned(), "missing"),
            ("crds/old.fixture.strata.dev.yaml".to_owned(), "extra"),
            (WIDGETS.to_owned(), "stale"),
        ]
    );

    tree.write(root).expect("rewrites");
    assert_eq!(tree.check(root).expect("checks"), vec![]);
}

#[test]
fn the_same_kind_from_two_operators_is_a_conflict() {
    let error = crds::desired_tree(&[FIXTURE_OPERATOR, FIXTURE_OPERATOR]).unwrap_err();
    assert!(matches!(error, CrdError::Conflict { .. }), "{error}");
    assert!(
        error
            .to_string()
            .contains(WIDGETS.trim_start_matches("crds/"))
    );
}

fn untyped_crds() -> Vec<CustomResourceDefinition> {
    let mut crds = fixture::crds();
    let schema = crds[0].spec.versions[0]
        .schema
        .as_mut()
        .and_then(|validation| validation.open_api_v3_schema.as_mut())
        .expect("fixture has a schema");
    let spec = schema
        .properties
        .as_mut()
        .and_then(|properties| properties.get_mut("spec"))
        .expect("fixture has a spec");
    spec.type_ = None;
    crds
}

#[test]
fn a_non_structural_crd_is_refused_with_its_violations() {
    let broken = Operator {
        name: "broken-operator",
        crds: untyped_crds,
        ..FIXTURE_OPERATOR
    };
    let error = crds::desired_tree(&[broken]).unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, CrdError::NotStructural { .. }), "{message}");
    assert!(
        message.contains(
            "spec.versions[v1alpha1].schema.openAPIV3Schema.properties.spec.type: \
             must not be empty for specified object fields"
        ),
        "{message}"
    );
}
