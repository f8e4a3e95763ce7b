//! What CI pipelines see: every manifest in `examples/zookeeper/` renders through the real
//! `zookeeper-operator render -f`, deterministically, to objects that pass
//! `kubernetes-validate --strict` against the upstream Kubernetes schemas; the CRDs printed
//! by `zookeeper-operator crd` pass as well.
//!
//! kubernetes-validate only warns about kinds it has no schema for and still exits 0, so a
//! run counts as passed only when every document got its own "passed" line and nothing was
//! reported; the negative cases prove that this check rejects broken objects.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use pretty_assertions::assert_eq;
use rstest::rstest;
use serde::Deserialize;
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The binary under test, built by cargo for this integration test.
const OPERATOR: &str = env!("CARGO_BIN_EXE_zookeeper-operator");
/// Path of the `kubernetes-validate` executable, exported by `cargo xtask test`.
const VALIDATE_ENV: &str = "STRATA_KUBERNETES_VALIDATE";
/// Kubernetes version whose schemas to validate against, exported alongside.
const VERSION_ENV: &str = "STRATA_KUBERNETES_VERSION";
/// The oldest Kubernetes the operators support (DESIGN.md). The objects are built with
/// the newest API types, so they are checked against the oldest schemas too.
const OLDEST_SUPPORTED_KUBERNETES: &str = "1.30.0";

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/zookeeper")
}

/// Every YAML file in the examples directory, sorted, so a new example is covered without
/// touching this test.
fn examples() -> Result<Vec<PathBuf>, Box<dyn std::error::Error>> {
    let mut files = Vec::new();
    for entry in fs::read_dir(examples_dir())? {
        let path = entry?.path();
        if matches!(
            path.extension().and_then(OsStr::to_str),
            Some("yaml" | "yml")
        ) {
            files.push(path);
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(format!("no examples in {}", examples_dir().display()).into());
    }
    Ok(files)
}

/// Runs the operator binary and returns its stdout; failure carries the stderr.
fn operator(args: &[&OsStr]) -> Result<String, Box<dyn std::error::Error>> {
    let output = Command::new(OPERATOR).args(args).output()?;
    if !output.status.success() {
        return Err(format!(
            "zookeeper-operator {args:?} failed with {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    Ok(String::from_utf8(output.stdout)?)
}

fn render(file: &Path) -> Result<String, Box<dyn std::error::Error>> {
    operator(&["render".as_ref(), "-f".as_ref(), file.as_os_str()])
}

fn documents(yaml: &str) -> Result<Vec<Value>, serde_yaml_ng::Error> {
    let mut documents = Vec::new();
    for document in serde_yaml_ng::Deserializer::from_str(yaml) {
        let value = Value::deserialize(document)?;
        if !value.is_null() {
            documents.push(value);
        }
    }
    Ok(documents)
}

fn to_multi_document_yaml(documents: &[Value]) -> Result<String, serde_yaml_ng::Error> {
    let mut yaml = String::new();
    for document in documents {
        yaml.push_str("---\n");
        yaml.push_str(&serde_yaml_ng::to_string(document)?);
    }
    Ok(yaml)
}

/// What kubernetes-validate said about one file.
#[derive(Debug)]
struct Verdict {
    /// Whether it exited 0.
    exit_ok: bool,
    /// Documents it validated successfully.
    passed: usize,
    /// Its ERROR and WARN lines.
    problems: Vec<String>,
    /// Everything it printed, for failure messages.
    output: String,
}

impl Verdict {
    /// Strict success: exit 0, nothing reported, and each of `documents` validated.
    fn accepts(&self, documents: usize) -> bool {
        self.exit_ok && self.problems.is_empty() && self.passed == documents
    }
}

/// `kubernetes-validate --strict -k <version>` from the variables `cargo xtask test`
/// exports.
#[derive(Debug)]
struct Validator {
    program: String,
    version: String,
}

impl Validator {
    fn from_env() -> Result<Self, String> {
        let required = |var: &str| {
            std::env::var(var)
                .ok()
                .filter(|value| !value.is_empty())
                .ok_or_else(|| {
                    format!(
                        "{var} is not set: this test needs kubernetes-validate; run it through \
                         `cargo xtask test`, or export the variables printed by `cargo xtask tools`"
                    )
                })
        };
        Ok(Self {
            program: required(VALIDATE_ENV)?,
            version: required(VERSION_ENV)?,
        })
    }

    /// The same validator against another Kubernetes version's schemas.
    fn for_version(self, version: &str) -> Self {
        Self {
            version: version.to_owned(),
            ..self
        }
    }

    fn validate(&self, yaml: &str) -> Result<Verdict, Box<dyn std::error::Error>> {
        let file = tempfile::Builder::new()
            .prefix("rendered-")
            .suffix(".yaml")
            .tempfile()?;
        fs::write(file.path(), yaml)?;
        let output = Command::new(&self.program)
            .args(["--strict", "-k", &self.version])
            .arg(file.path())
            .output()?;
        let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stderr));
        Ok(Verdict {
            exit_ok: output.status.success(),
            passed: text
                .lines()
                .filter(|line| line.starts_with("INFO") && line.contains(" passed for resource "))
                .count(),
            problems: text
                .lines()
                .filter(|line| line.starts_with("ERROR") || line.starts_with("WARN"))
                .map(str::to_owned)
                .collect(),
            output: text,
        })
    }
}

#[test]
fn every_example_renders_deterministic_multi_document_yaml() -> TestResult {
    for example in examples()? {
        let first = render(&example)?;
        let second = render(&example)?;
        assert!(
            first == second,
            "{} renders differently on a second run",
            example.display()
        );
        assert!(
            first.starts_with("---\n"),
            "{}:\n{first}",
            example.display()
        );

        let documents = documents(&first)?;
        assert!(
            documents.len() > 1,
            "{} rendered {} documents:\n{first}",
            example.display(),
            documents.len()
        );
        for document in &documents {
            for field in [
                "/apiVersion",
                "/kind",
                "/metadata/name",
                "/metadata/namespace",
            ] {
                assert!(
                    document.pointer(field).and_then(Value::as_str).is_some(),
                    "{}: a document lacks {field}: {document}",
                    example.display()
                );
            }
        }
    }
    Ok(())
}

#[test]
#[ignore = "needs kubernetes-validate (STRATA_KUBERNETES_VALIDATE, STRATA_KUBERNETES_VERSION); run by cargo xtask test"]
fn every_example_renders_objects_that_pass_strict_validation() -> TestResult {
    let validator = Validator::from_env()?;
    let mut validated = 0;
    for example in examples()? {
        let rendered = render(&example)?;
        let count = documents(&rendered)?.len();
        let verdict = validator.validate(&rendered)?;
        assert!(
            verdict.accepts(count),
            "{}: {count} documents, {} passed, problems {:?}:\n{}",
            example.display(),
            verdict.passed,
            verdict.problems,
            verdict.output
        );
        validated += count;
    }
    eprintln!("kubernetes-validate --strict accepted {validated} rendered objects");
    Ok(())
}

#[test]
#[ignore = "needs kubernetes-validate (STRATA_KUBERNETES_VALIDATE, STRATA_KUBERNETES_VERSION); run by cargo xtask test"]
fn every_example_is_valid_for_the_oldest_supported_kubernetes() -> TestResult {
    let validator = Validator::from_env()?.for_version(OLDEST_SUPPORTED_KUBERNETES);
    for example in examples()? {
        let rendered = render(&example)?;
        let count = documents(&rendered)?.len();
        let verdict = validator.validate(&rendered)?;
        assert!(
            verdict.accepts(count),
            "{} against Kubernetes {OLDEST_SUPPORTED_KUBERNETES}: {count} documents, {} passed, \
             problems {:?}:\n{}",
            example.display(),
            verdict.passed,
            verdict.problems,
            verdict.output
        );
    }
    Ok(())
}

#[test]
#[ignore = "needs kubernetes-validate (STRATA_KUBERNETES_VALIDATE, STRATA_KUBERNETES_VERSION); run by cargo xtask test"]
fn crds_pass_strict_validation() -> TestResult {
    let validator = Validator::from_env()?;
    let printed = operator(&["crd".as_ref()])?;
    let crds = documents(&printed)?;
    let names: Vec<&str> = crds
        .iter()
        .filter(|crd| crd["kind"] == "CustomResourceDefinition")
        .filter_map(|crd| crd["metadata"]["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "zookeeperclusters.zookeeper.strata.dev",
            "zookeeperznodes.zookeeper.strata.dev"
        ]
    );
    let verdict = validator.validate(&printed)?;
    assert!(verdict.accepts(crds.len()), "{verdict:#?}");
    Ok(())
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

/// Turns the object into a kind kubernetes-validate has no schema for; it only warns.
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
fn strict_validation_rejects_a_broken_rendered_object(
    #[case] break_object: fn(&mut Value),
) -> TestResult {
    let validator = Validator::from_env()?;
    let rendered = render(&examples_dir().join("simple-cluster.yaml"))?;
    let mut documents = documents(&rendered)?;
    let untouched = to_multi_document_yaml(&documents)?;
    assert!(
        validator.validate(&untouched)?.accepts(documents.len()),
        "the unbroken documents must pass, or this test proves nothing"
    );

    let statefulset = documents
        .iter_mut()
        .find(|document| document["kind"] == "StatefulSet")
        .ok_or("the simple cluster renders no StatefulSet")?;
    break_object(statefulset);
    let verdict = validator.validate(&to_multi_document_yaml(&documents)?)?;
    assert!(!verdict.accepts(documents.len()), "{verdict:#?}");
    assert!(
        verdict
            .problems
            .iter()
            .any(|problem| problem.contains("simple-zk-server-default")
                || problem.contains("ZookeeperCluster")),
        "the problem should name the broken object: {verdict:#?}"
    );
    Ok(())
}
