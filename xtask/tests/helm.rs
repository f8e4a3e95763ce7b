//! Every generated chart passes `helm lint --strict` with the real Helm v4, and what
//! `helm template` renders passes `kubernetes-validate --strict`, with default values, with
//! `watchNamespace` set, with two replicas and with `metrics.enabled=false`. Which grants
//! the chart holds is one of the shared operator checks (`strata_testing::checks`).
//!
//! Needs helm and kubernetes-validate, so ignored by plain `cargo test`; `cargo xtask test`
//! runs it with `--include-ignored` and the STRATA_* variables set. Missing variables fail.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod fixture;

use std::{
    collections::BTreeSet,
    fs,
    path::{Path, PathBuf},
    process::{Command, Output},
};

use serde_json::{Value, json};
use xtask::{
    commands::workspace_root,
    helm::{self, HELM_DIR},
    operators,
    tools::env,
};

/// One set of values the charts are rendered with, and what it must produce.
struct Variant {
    name: &'static str,
    set: &'static [&'static str],
    present: &'static [&'static str],
    absent: &'static [&'static str],
}

const VARIANTS: [Variant; 5] = [
    Variant {
        name: "default values",
        set: &[],
        present: &[
            "CustomResourceDefinition",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "Service",
            "Deployment",
        ],
        absent: &[],
    },
    Variant {
        name: "watchNamespace set",
        set: &["watchNamespace=data"],
        present: &[
            "ServiceAccount",
            "Role",
            "RoleBinding",
            "Service",
            "Deployment",
            // Only the one that keeps the operator's CRDs current.
            "ClusterRole",
            "ClusterRoleBinding",
        ],
        absent: &[],
    },
    Variant {
        name: "watchNamespace set and CRDs not managed",
        set: &["watchNamespace=data", "manageCrds=false"],
        present: &[
            "ServiceAccount",
            "Role",
            "RoleBinding",
            "Service",
            "Deployment",
        ],
        absent: &["ClusterRole", "ClusterRoleBinding"],
    },
    Variant {
        name: "two replicas",
        set: &["replicas=2"],
        present: &["Role", "RoleBinding", "Deployment"],
        absent: &[],
    },
    Variant {
        name: "metrics disabled",
        set: &["metrics.enabled=false"],
        present: &["ClusterRole", "Deployment"],
        absent: &["Service"],
    },
];

fn describe(output: &Output) -> String {
    format!(
        "{}\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn helm(args: &[&str], chart: &Path, set: &[&str]) -> Output {
    let program = env::required_path(env::HELM).unwrap_or_else(|e| panic!("{e}"));
    let mut command = Command::new(program);
    command.args(args).arg(chart);
    for value in set {
        command.args(["--set", value]);
    }
    command.output().expect("helm starts")
}

/// The committed chart of every registered operator, plus the fixture operator's chart
/// generated into `scratch`, which shows that a new operator's chart passes too.
fn charts(scratch: &Path) -> Vec<PathBuf> {
    let workspace = workspace_root();
    let mut charts: Vec<PathBuf> = operators::registered()
        .iter()
        .map(|operator| workspace.join(HELM_DIR).join(operator.name))
        .collect();
    helm::desired_tree(&[fixture::FIXTURE_OPERATOR], &workspace)
        .expect("generates")
        .write(scratch)
        .expect("writes");
    charts.push(scratch.join(HELM_DIR).join(fixture::FIXTURE_OPERATOR.name));
    charts
}

#[test]
#[ignore = "needs helm; run by cargo xtask test"]
fn every_chart_passes_strict_lint_with_every_variant() {
    let scratch = tempfile::tempdir().expect("tempdir");
    for chart in charts(scratch.path()) {
        for variant in &VARIANTS {
            let output = helm(&["lint", "--strict"], &chart, variant.set);
            assert!(
                output.status.success(),
                "{} with {}: {}",
                chart.display(),
                variant.name,
                describe(&output)
            );
            assert!(
                describe(&output).contains("1 chart(s) linted, 0 chart(s) failed"),
                "{}",
                describe(&output)
            );
        }
    }
}

fn render(chart: &Path, set: &[&str]) -> String {
    let output = helm(
        &[
            "template",
            "release",
            "--namespace",
            "operators",
            "--include-crds",
        ],
        chart,
        set,
    );
    assert!(output.status.success(), "{}", describe(&output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn documents(yaml: &str) -> Vec<Value> {
    strata_operator::render::parse_documents(yaml).expect("helm output is YAML")
}

fn kinds(documents: &[Value]) -> BTreeSet<&str> {
    documents
        .iter()
        .filter_map(|document| document["kind"].as_str())
        .collect()
}

#[test]
#[ignore = "needs helm and kubernetes-validate; run by cargo xtask test"]
fn every_rendered_variant_passes_strict_validation() {
    let validate = env::required_path(env::KUBERNETES_VALIDATE).unwrap_or_else(|e| panic!("{e}"));
    let version = env::required(env::KUBERNETES_VERSION).unwrap_or_else(|e| panic!("{e}"));
    let scratch = tempfile::tempdir().expect("tempdir");
    for chart in charts(scratch.path()) {
        for (index, variant) in VARIANTS.iter().enumerate() {
            let rendered = render(&chart, variant.set);
            let objects = documents(&rendered);
            let found = kinds(&objects);
            for kind in variant.present {
                assert!(
                    found.contains(kind),
                    "{} with {}: no {kind}",
                    chart.display(),
                    variant.name
                );
            }
            for kind in variant.absent {
                assert!(
                    !found.contains(kind),
                    "{} with {}: a {kind}",
                    chart.display(),
                    variant.name
                );
            }

            let file = scratch.path().join(format!("rendered-{index}.yaml"));
            fs::write(&file, &rendered).expect("write");
            let output = Command::new(&validate)
                .args(["--strict", "--kubernetes-version", &version])
                .arg(&file)
                .output()
                .expect("kubernetes-validate starts");
            assert!(
                output.status.success(),
                "{} with {}: {}",
                chart.display(),
                variant.name,
                describe(&output)
            );
            let passed = String::from_utf8_lossy(&output.stdout)
                .matches(" passed ")
                .count();
            assert_eq!(passed, objects.len(), "{}", describe(&output));
        }
    }
}

fn deployment(chart: &Path, set: &[&str]) -> Value {
    documents(&render(chart, set))
        .into_iter()
        .find(|document| document["kind"] == "Deployment")
        .expect("a Deployment")
}

#[test]
#[ignore = "needs helm; run by cargo xtask test"]
fn the_deployment_runs_the_operator_with_probes_env_and_a_locked_down_container() {
    let chart = workspace_root().join(HELM_DIR).join("zookeeper-operator");
    let deployment = deployment(
        &chart,
        &[
            "watchNamespace=data",
            "logLevel=debug",
            "clusterDomain=k8s.example.com",
        ],
    );
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];

    assert_eq!(deployment["spec"]["replicas"], 1);
    assert_eq!(container["args"], json!(["run"]));
    assert_eq!(
        container["image"],
        format!("ghcr.io/strata-dev/zookeeper-operator:{}", helm::VERSION)
    );
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(container["ports"][0]["containerPort"], 8080);
    assert_eq!(
        container["env"],
        json!([
            {"name": "WATCH_NAMESPACE", "value": "data"},
            {"name": "LOG_LEVEL", "value": "debug"},
            {"name": "KUBERNETES_CLUSTER_DOMAIN", "value": "k8s.example.com"},
            {"name": "MANAGE_CRDS", "value": "true"},
            {"name": "POD_SECURITY", "value": "standard"},
            {"name": "HTTP_ADDRESS", "value": "0.0.0.0:8080"},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        ])
    );
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(
        container["securityContext"]["capabilities"]["drop"],
        json!(["ALL"])
    );
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    assert_eq!(
        pod["serviceAccountName"], deployment["metadata"]["name"],
        "runs as the chart's ServiceAccount"
    );
}

#[test]
#[ignore = "needs helm; run by cargo xtask test"]
fn values_reach_the_pod() {
    let chart = workspace_root().join(HELM_DIR).join("zookeeper-operator");
    let deployment = deployment(
        &chart,
        &[
            "image.tag=dev",
            "image.pullPolicy=Always",
            "imagePullSecrets[0].name=registry",
            "nodeSelector.pool=system",
            "tolerations[0].key=dedicated",
            "tolerations[0].operator=Exists",
            "podAnnotations.team=data",
            "podLabels.tier=control",
            "replicas=2",
        ],
    );
    assert_eq!(deployment["spec"]["replicas"], 2);
    assert_eq!(
        deployment["spec"]["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}),
        "a new pod stands by before the old one releases the Lease"
    );
    let template = &deployment["spec"]["template"];
    let pod = &template["spec"];
    assert_eq!(
        pod["containers"][0]["image"],
        "ghcr.io/strata-dev/zookeeper-operator:dev"
    );
    assert_eq!(pod["containers"][0]["imagePullPolicy"], "Always");
    assert_eq!(pod["imagePullSecrets"], json!([{"name": "registry"}]));
    assert_eq!(pod["nodeSelector"], json!({"pool": "system"}));
    assert_eq!(
        pod["tolerations"],
        json!([{"key": "dedicated", "operator": "Exists"}])
    );
    assert_eq!(template["metadata"]["annotations"], json!({"team": "data"}));
    assert_eq!(template["metadata"]["labels"]["tier"], "control");
    assert_eq!(
        template["metadata"]["labels"]["app.kubernetes.io/name"],
        "zookeeper-operator"
    );
}

#[test]
#[ignore = "needs helm; run by cargo xtask test"]
fn the_metrics_service_carries_prometheus_scrape_annotations() {
    let chart = workspace_root().join(HELM_DIR).join("zookeeper-operator");
    let service = documents(&render(&chart, &[]))
        .into_iter()
        .find(|document| document["kind"] == "Service")
        .expect("a Service");
    assert_eq!(
        service["metadata"]["annotations"],
        json!({
            "prometheus.io/scrape": "true",
            "prometheus.io/port": "8080",
            "prometheus.io/path": "/metrics",
        })
    );
    assert_eq!(service["spec"]["ports"][0]["targetPort"], "http");
}
