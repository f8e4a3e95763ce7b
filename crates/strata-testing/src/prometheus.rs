//! What the tests take from the Prometheus projects: `promtool`, which unit-tests an
//! operator's alert rules, and the Prometheus Operator's CRDs, which a real control
//! plane installs to take the ServiceMonitors and PrometheusRules the operators apply.
//!
//! The rules are the ones the operator puts in a cluster's PrometheusRule, written
//! to a rule file; `promtool check rules` proves that Prometheus loads them, and
//! `promtool test rules` runs the operator's committed test file (input series over
//! time, and the alerts expected to fire at given moments) against them.

use std::path::Path;
use std::process::Command;

use strata_model::monitoring::RuleGroup;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use crate::tools::{PROMETHEUS_OPERATOR_CRDS, PROMTOOL, crds_in, tool};

/// The name under which the rules are written; a test file's `rule_files` names it.
pub const RULE_FILE: &str = "rules.yaml";

/// Writes `groups` as [`RULE_FILE`] beside a copy of `test_file`, then has `promtool`
/// check the rules and run the tests. Panics with promtool's output when either fails.
pub fn test_rules(groups: &[RuleGroup], test_file: &Path) {
    let promtool = tool(PROMTOOL);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let rules = serde_yaml_ng::to_string(&serde_json::json!({ "groups": groups }))
        .expect("the rules as YAML");
    std::fs::write(dir.path().join(RULE_FILE), &rules).expect("the rule file is written");
    let tests = dir.path().join("tests.yaml");
    std::fs::copy(test_file, &tests)
        .unwrap_or_else(|error| panic!("cannot copy {}: {error}", test_file.display()));
    for args in [
        ["check", "rules", RULE_FILE],
        ["test", "rules", "tests.yaml"],
    ] {
        let output = Command::new(&promtool)
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap_or_else(|error| panic!("cannot run {}: {error}", promtool.display()));
        assert!(
            output.status.success(),
            "promtool {} failed:\n{}{}\nThe rules:\n{rules}",
            args.join(" "),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
        );
    }
}

/// The ServiceMonitor and PrometheusRule CRDs of the provisioned Prometheus Operator
/// release, for [`crate::control_plane::ControlPlane::install_crds`].
pub fn operator_crds() -> Vec<CustomResourceDefinition> {
    crds_in(PROMETHEUS_OPERATOR_CRDS)
}
