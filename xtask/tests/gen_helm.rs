//! gen-helm with the real registry and with a fixture operator: every registered operator
//! gets a chart, the committed charts are current, and `--check` notices drift.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod fixture;

use std::fs;

use k8s_openapi::api::rbac::v1::PolicyRule;
use pretty_assertions::assert_eq;
use xtask::{
    commands::workspace_root,
    generated::DriftKind,
    helm::{self, HELM_DIR},
    operators,
};

use fixture::FIXTURE_OPERATOR;

#[test]
fn committed_charts_match_the_registered_operators() {
    let workspace = workspace_root();
    let tree = helm::desired_tree(operators::registered(), &workspace).expect("generates");
    let drifts = tree.check(&workspace).expect("checks");
    let lines: Vec<String> = drifts.iter().map(ToString::to_string).collect();
    assert_eq!(lines, Vec::<String>::new(), "run `cargo xtask gen-helm`");
}

#[test]
fn every_registered_operator_has_a_chart_named_after_it() {
    let tree = helm::desired_tree(operators::registered(), &workspace_root()).expect("generates");
    for operator in operators::registered() {
        let chart = format!("{HELM_DIR}/{}/Chart.yaml", operator.name);
        let text = tree
            .files()
            .get(std::path::Path::new(&chart))
            .unwrap_or_else(|| panic!("{chart} is generated"));
        assert!(
            String::from_utf8_lossy(text).contains(&format!("\nname: {}\n", operator.name)),
            "{chart}"
        );
    }
}

#[test]
fn a_new_operator_gets_a_chart_with_its_own_rules_and_crds() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let tree = helm::desired_tree(&[FIXTURE_OPERATOR], &workspace_root()).expect("generates");
    tree.write(scratch.path()).expect("writes");
    let chart = scratch.path().join("helm/fixture-operator");

    let mut crds: Vec<String> = fs::read_dir(chart.join("crds"))
        .expect("crds/")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    crds.sort();
    assert_eq!(
        crds,
        vec![
            "gadgets.fixture.strata.dev.yaml",
            "widgets.fixture.strata.dev.yaml"
        ]
    );

    let rules_tpl = fs::read_to_string(chart.join("templates/_rules.tpl")).expect("rules");
    let body = rules_tpl
        .split("{{- define \"fixture-operator.rules\" -}}\n")
        .nth(1)
        .and_then(|rest| rest.split("\n{{- end }}").next())
        .expect("a rules define named after the chart");
    let rules: Vec<PolicyRule> = serde_yaml_ng::from_str(body).expect("rules");
    assert_eq!(
        rules,
        strata_operator::rbac::rules(&fixture::registration())
    );
    assert!(
        rules
            .iter()
            .any(|rule| rule.resources == Some(vec!["gadgets".to_owned()])
                && rule.verbs == ["list", "watch", "patch"]),
        "the finalizer of the gadget controller is granted: {rules:#?}"
    );

    let notes = fs::read_to_string(chart.join("templates/NOTES.txt")).expect("notes");
    assert!(notes.contains("wait widget/first-widget"), "{notes}");
    let helpers = fs::read_to_string(chart.join("templates/_helpers.tpl")).expect("helpers");
    assert!(!helpers.contains("zookeeper"), "{helpers}");
}

#[test]
fn check_notices_a_hand_edited_and_an_extra_chart_file() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let tree = helm::desired_tree(&[FIXTURE_OPERATOR], &workspace_root()).expect("generates");
    tree.write(scratch.path()).expect("writes");
    let chart = scratch.path().join("helm/fixture-operator");
    let values = fs::read_to_string(chart.join("values.yaml")).expect("read");
    fs::write(
        chart.join("values.yaml"),
        values.replace("logLevel: info", "logLevel: debug"),
    )
    .expect("edit");
    fs::write(chart.join("templates/extra.yaml"), "kind: Extra\n").expect("extra");

    let drifts = tree.check(scratch.path()).expect("checks");
    let kinds: Vec<(String, bool)> = drifts
        .iter()
        .map(|drift| {
            (
                drift.path.display().to_string(),
                matches!(drift.kind, DriftKind::Stale(_)),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            (
                "helm/fixture-operator/templates/extra.yaml".to_owned(),
                false
            ),
            ("helm/fixture-operator/values.yaml".to_owned(), true),
        ]
    );
}
