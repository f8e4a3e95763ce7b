//! The shared checks reject what they exist to catch: each case breaks one
//! thing in an input that otherwise passes, and the check must say no.
//!
//! They need kubernetes-validate, its Python and Helm, which `cargo xtask test`
//! provides, so plain `cargo test` skips them.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::path::Path;

use k8s_openapi::api::rbac::v1::PolicyRule;
use rstest::rstest;
use serde_json::{Value, json};
use strata_testing::chart;
use strata_testing::tools::{self, HELM};
use strata_testing::validate::Validator;
use strata_testing::yaml::{readers_agree, to_multi_document_yaml};

fn stateful_set() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "simple-zk-server-default", "namespace": "default"},
        "spec": {
            "replicas": 3,
            "serviceName": "simple-zk-server-default",
            "selector": {"matchLabels": {"app": "zk"}},
            "template": {
                "metadata": {"labels": {"app": "zk"}},
                "spec": {"containers": [{"name": "zookeeper", "image": "zookeeper:3.9.3"}]}
            }
        }
    })
}

fn add_unknown_container_field(statefulset: &mut Value) {
    statefulset["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = json!("Always");
}

fn make_replicas_a_string(statefulset: &mut Value) {
    statefulset["spec"]["replicas"] = json!("three");
}

fn drop_required_selector(statefulset: &mut Value) {
    if let Some(spec) = statefulset["spec"].as_object_mut() {
        spec.remove("selector");
    }
}

/// A kind kubernetes-validate has no schema for: it only warns, and exits 0.
fn turn_into_unknown_kind(statefulset: &mut Value) {
    statefulset["apiVersion"] = json!("zookeeper.strata.dev/v1alpha1");
    statefulset["kind"] = json!("ZookeeperCluster");
}

#[rstest]
#[case::unknown_field_in_a_container(add_unknown_container_field)]
#[case::replicas_as_a_string(make_replicas_a_string)]
#[case::missing_required_selector(drop_required_selector)]
#[case::kind_without_a_schema(turn_into_unknown_kind)]
#[ignore = "needs kubernetes-validate (STRATA_KUBERNETES_VALIDATE, STRATA_KUBERNETES_VERSION); run by cargo xtask test"]
fn strict_validation_rejects_a_broken_object(#[case] break_object: fn(&mut Value)) {
    let validator = Validator::from_env().unwrap_or_else(|missing| panic!("{missing}"));
    let mut documents = vec![
        stateful_set(),
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "simple-zk", "namespace": "default"},
            "data": {"ZOOKEEPER": "simple-zk:2181"}
        }),
    ];
    let untouched = to_multi_document_yaml(&documents).unwrap();
    validator
        .check("the untouched objects", &untouched, documents.len())
        .expect("the unbroken objects must pass, or this test proves nothing");

    break_object(&mut documents[0]);
    let broken = to_multi_document_yaml(&documents).unwrap();
    let verdict = validator.validate(&broken).unwrap();
    assert!(!verdict.accepts(documents.len()), "{verdict:#?}");
    assert!(
        verdict.problems.iter().any(|problem| {
            problem.contains("simple-zk-server-default") || problem.contains("ZookeeperCluster")
        }),
        "the problem should name the broken object: {verdict:#?}"
    );
}

/// A ServiceMonitor and an HTTPRoute as the operators build them.
fn other_projects_objects() -> Vec<Value> {
    vec![
        json!({
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "ServiceMonitor",
            "metadata": {"name": "simple-zk", "namespace": "default"},
            "spec": {
                "selector": {"matchLabels": {"app.kubernetes.io/instance": "simple-zk"}},
                "namespaceSelector": {"matchNames": ["default"]},
                "endpoints": [{"port": "metrics", "path": "/metrics", "scheme": "http"}]
            }
        }),
        json!({
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "HTTPRoute",
            "metadata": {"name": "simple-trino", "namespace": "default"},
            "spec": {
                "parentRefs": [{"name": "public"}],
                "hostnames": ["trino.example.com"],
                "rules": [{"backendRefs": [{"name": "simple-trino-coordinator", "port": 8443}]}]
            }
        }),
    ]
}

fn misspell_an_endpoint_field(documents: &mut [Value]) {
    documents[0]["spec"]["endpoints"][0]["intervall"] = json!("30s");
}

fn make_a_backend_port_a_name(documents: &mut [Value]) {
    documents[1]["spec"]["rules"][0]["backendRefs"][0]["port"] = json!("https");
}

fn add_a_field_at_the_top(documents: &mut [Value]) {
    documents[1]["specs"] = json!({});
}

fn ask_for_a_kind_no_crd_defines(documents: &mut [Value]) {
    documents[1]["kind"] = json!("TCPRoute");
}

#[rstest]
#[case::unknown_field_in_an_endpoint(misspell_an_endpoint_field, "intervall")]
#[case::a_port_as_a_string(make_a_backend_port_a_name, "port")]
#[case::unknown_top_level_field(add_a_field_at_the_top, "specs")]
#[case::a_kind_without_a_crd(ask_for_a_kind_no_crd_defines, "no CRD defines it")]
#[ignore = "needs the venv's jsonschema and the provisioned CRDs (STRATA_KUBERNETES_VALIDATE, STRATA_PROMETHEUS_OPERATOR_CRDS, STRATA_GATEWAY_API_CRDS); run by cargo xtask test"]
fn the_crd_check_rejects_a_broken_object_of_another_project(
    #[case] break_objects: fn(&mut [Value]),
    #[case] named: &str,
) {
    let schemas = strata_testing::crd_schema::CrdSchemas::from_env()
        .unwrap_or_else(|missing| panic!("{missing}"));
    let mut documents = other_projects_objects();
    schemas
        .check("the untouched objects", &documents)
        .expect("the unbroken objects must pass, or this test proves nothing");
    break_objects(&mut documents);
    let refused = schemas
        .check("the broken objects", &documents)
        .expect_err("refused");
    assert!(refused.contains(named), "{refused}");
}

#[rstest]
#[case::yes_as_a_boolean("flag: yes\n", "flag: \"yes\"\n")]
#[case::octal_number("mode: 0o17\n", "mode: \"0o17\"\n")]
#[case::sexagesimal_number("time: 1:30\n", "time: \"1:30\"\n")]
#[case::timestamp("date: 2001-12-14\n", "date: \"2001-12-14\"\n")]
#[case::boolean_key("on: value\n", "\"on\": value\n")]
#[ignore = "needs PyYAML from the kubernetes-validate venv (STRATA_KUBERNETES_VALIDATE); run by cargo xtask test"]
fn the_yaml_check_notices_what_a_yaml_1_1_reader_reads_differently(
    #[case] yaml: &str,
    #[case] quoted: &str,
) {
    let python = tools::venv_python().unwrap_or_else(|missing| panic!("{missing}"));
    readers_agree(&python, quoted).expect("quoted, both readers read a string");
    let error = readers_agree(&python, yaml).expect_err("unquoted, PyYAML reads something else");
    assert!(
        error.contains("PyYAML") || error.contains("read as"),
        "{error}"
    );
}

/// A chart with one ClusterRole granting `verbs` on ConfigMaps.
fn chart_granting(dir: &Path, verbs: &[&str]) {
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(
        dir.join("Chart.yaml"),
        "apiVersion: v2\nname: fixture\nversion: 0.1.0\n",
    )
    .unwrap();
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "fixture"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": verbs}]
    });
    std::fs::write(
        dir.join("templates/rbac.yaml"),
        serde_yaml_ng::to_string(&role).unwrap(),
    )
    .unwrap();
}

#[test]
#[ignore = "needs helm (STRATA_HELM); run by cargo xtask test"]
fn the_chart_check_reads_the_grants_helm_renders() {
    let helm = tools::tool(HELM);
    let dir = tempfile::tempdir().unwrap();
    chart_granting(dir.path(), &["list", "watch"]);
    let documents = chart::template(&helm, dir.path(), "operators", &[]).unwrap();
    let grants = chart::grants(&documents).unwrap();
    let expected: Vec<PolicyRule> = serde_json::from_value(json!([
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list", "watch"]}
    ]))
    .unwrap();
    assert_eq!(grants.len(), 1);
    assert_eq!(grants[0].rules, expected);

    let dir = tempfile::tempdir().unwrap();
    chart_granting(dir.path(), &["list"]);
    let documents = chart::template(&helm, dir.path(), "operators", &[]).unwrap();
    assert_ne!(
        chart::grants(&documents).unwrap()[0].rules,
        expected,
        "a missing verb shows"
    );
}
