#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use rstest::rstest;
use serde_json::Value;

use super::*;
use crate::{commands::workspace_root, operators};

fn zookeeper() -> Operator {
    operators::registered()[0]
}

fn chart(operator: &Operator) -> BTreeMap<String, String> {
    chart_files(operator, &workspace_root())
        .expect("generates")
        .into_iter()
        .collect()
}

fn yaml(text: &str) -> Value {
    serde_yaml_ng::from_str(text).expect("YAML")
}

#[test]
fn a_chart_has_the_skeleton_files_and_the_operators_crds() {
    let files: Vec<String> = chart(&zookeeper()).into_keys().collect();
    assert_eq!(
        files,
        vec![
            "Chart.yaml",
            "crds/zookeeperclusters.zookeeper.strata.dev.yaml",
            "crds/zookeeperznodes.zookeeper.strata.dev.yaml",
            "templates/NOTES.txt",
            "templates/_helpers.tpl",
            "templates/_rules.tpl",
            "templates/deployment.yaml",
            "templates/rbac.yaml",
            "templates/service.yaml",
            "templates/serviceaccount.yaml",
            "values.yaml",
        ]
    );
}

#[test]
fn chart_version_and_app_version_are_the_workspace_version() {
    let chart_yaml = yaml(&chart(&zookeeper())["Chart.yaml"]);
    assert_eq!(chart_yaml["name"], "zookeeper-operator");
    assert_eq!(chart_yaml["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(chart_yaml["appVersion"], env!("CARGO_PKG_VERSION"));
    assert_eq!(chart_yaml["apiVersion"], "v2");
}

#[test]
fn crds_are_the_same_bytes_as_in_the_crds_directory() {
    let files = chart(&zookeeper());
    let tree = crds::desired_tree(&[zookeeper()]).expect("generates");
    for (path, contents) in tree.files() {
        let name = path.file_name().expect("file name").to_string_lossy();
        assert_eq!(
            files[&format!("crds/{name}")].as_bytes(),
            contents.as_slice(),
            "{name}"
        );
    }
}

#[test]
fn rules_template_holds_exactly_the_rules_of_the_registration() {
    let template = &chart(&zookeeper())["templates/_rules.tpl"];
    let body = template
        .split("{{- define \"zookeeper-operator.rules\" -}}\n")
        .nth(1)
        .and_then(|rest| rest.split("\n{{- end }}").next())
        .expect("a rules define");
    let rules: Vec<PolicyRule> = serde_yaml_ng::from_str(body).expect("rules YAML");
    assert_eq!(
        rules,
        strata_operator::rbac::rules(&<zookeeper_operator::ZookeeperOperator as strata_operator::cli::Operator>::registration())
    );
    assert!(!body.contains('*'), "no wildcard: {body}");
}

#[rstest]
#[case::image_repository("/image/repository", "ghcr.io/strata-dev/zookeeper-operator")]
#[case::image_tag_defaults_to_app_version("/image/tag", "")]
#[case::image_pull_policy("/image/pullPolicy", "IfNotPresent")]
#[case::all_namespaces_by_default("/watchNamespace", "")]
#[case::log_level("/logLevel", "info")]
#[case::metrics_on("/metrics/enabled", true)]
#[case::pod_runs_as_non_root("/podSecurityContext/runAsNonRoot", true)]
#[case::pod_runs_as_numeric_user("/podSecurityContext/runAsUser", 65532)]
#[case::pod_seccomp("/podSecurityContext/seccompProfile/type", "RuntimeDefault")]
#[case::container_non_root("/securityContext/runAsNonRoot", true)]
#[case::read_only_root("/securityContext/readOnlyRootFilesystem", true)]
#[case::no_escalation("/securityContext/allowPrivilegeEscalation", false)]
#[case::drop_all_capabilities("/securityContext/capabilities/drop", serde_json::json!(["ALL"]))]
#[case::container_seccomp("/securityContext/seccompProfile/type", "RuntimeDefault")]
#[case::no_pull_secrets("/imagePullSecrets", serde_json::json!([]))]
#[case::no_node_selector("/nodeSelector", serde_json::json!({}))]
#[case::no_tolerations("/tolerations", serde_json::json!([]))]
#[case::no_affinity("/affinity", serde_json::json!({}))]
#[case::no_pod_annotations("/podAnnotations", serde_json::json!({}))]
#[case::no_pod_labels("/podLabels", serde_json::json!({}))]
#[case::memory_limit_above_the_measured_figure("/resources/limits/memory", "256Mi")]
#[case::memory_request_covers_1000_clusters("/resources/requests/memory", "128Mi")]
#[case::one_replica("/replicas", 1)]
#[case::pod_security_detects_openshift("/podSecurity", "auto")]
fn values_have_safe_documented_defaults(#[case] pointer: &str, #[case] expected: impl Into<Value>) {
    let values = yaml(&chart(&zookeeper())["values.yaml"]);
    assert_eq!(values.pointer(pointer), Some(&expected.into()), "{pointer}");
}

#[test]
fn every_top_level_value_is_commented() {
    let text = &chart(&zookeeper())["values.yaml"];
    let lines: Vec<&str> = text.lines().collect();
    for (index, line) in lines.iter().enumerate() {
        let top_level_key = !line.starts_with([' ', '#']) && line.contains(':');
        if top_level_key && !["image:", "serviceAccount:", "metrics:"].contains(line) {
            assert!(
                index > 0 && lines[index - 1].starts_with('#'),
                "{line} has no comment above it"
            );
        }
    }
}

#[test]
fn notes_show_the_example_without_its_namespace() {
    let notes = &chart(&zookeeper())["templates/NOTES.txt"];
    assert!(
        notes.contains("kind: ZookeeperCluster\nmetadata:\n  name: simple-zk\n"),
        "{notes}"
    );
    assert!(notes.contains("wait zookeepercluster/simple-zk --for=condition=Available"));
    assert!(!notes.contains("namespace: default"), "{notes}");
    assert!(
        notes.contains(
            "zookeeperclusters.zookeeper.strata.dev, zookeeperznodes.zookeeper.strata.dev"
        )
    );
}

#[test]
fn generation_is_deterministic() {
    let workspace = workspace_root();
    let first = desired_tree(operators::registered(), &workspace).expect("generates");
    let second = desired_tree(operators::registered(), &workspace).expect("generates");
    assert_eq!(first, second);
    assert!(
        first.files().keys().all(|path| operators::registered()
            .iter()
            .any(|operator| path.starts_with(format!("helm/{}", operator.name)))),
        "{:?}",
        first.files().keys()
    );
}

#[test]
fn a_missing_example_names_the_operator_and_the_file() {
    let broken = Operator {
        example: "examples/none.yaml",
        ..zookeeper()
    };
    let error = chart_files(&broken, &workspace_root()).expect_err("fails");
    assert_eq!(error.to_string(), "the example of zookeeper-operator");
    assert!(
        format!("{:#}", anyhow::Error::from(error)).contains("cannot read"),
        "names the file"
    );
}
