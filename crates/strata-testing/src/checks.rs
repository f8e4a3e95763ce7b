//! The checks every operator passes, whatever its product: its binary renders
//! every example to objects that real validators accept, its CRDs are valid,
//! and its chart grants exactly what its registration declares.
//!
//! `cargo xtask test` runs them for every operator in the registry, so a new
//! operator gets them by being registered; nothing is copied into its crate.

use std::path::{Path, PathBuf};
use std::process::Command;

use k8s_openapi::api::rbac::v1::PolicyRule;
use serde_json::Value;

mod pod_security;

use crate::chart::{self, Grant};
use crate::crd_schema::CrdSchemas;
use crate::tools::{self, MissingTool};
use crate::validate::{OLDEST_SUPPORTED_KUBERNETES, Validator};
use crate::yaml;

/// The release namespace the chart checks install into.
pub(crate) const RELEASE_NAMESPACE: &str = "operators";
/// The namespace the one-namespace chart check watches.
const WATCHED_NAMESPACE: &str = "team-a";

/// One operator, as the checks see it.
#[derive(Clone, Debug)]
pub struct OperatorUnderTest {
    /// Its name, e.g. `zookeeper-operator`.
    pub name: String,
    /// Its built binary.
    pub binary: PathBuf,
    /// The directory of its example manifests.
    pub examples: PathBuf,
    /// Its generated chart.
    pub chart: PathBuf,
    /// The names of the CRDs it owns, from its types.
    pub crd_names: Vec<String>,
    /// Its RBAC rules, from its registration.
    pub rules: Vec<PolicyRule>,
    /// Its leader-election rules.
    pub lease_rules: Vec<PolicyRule>,
    /// The rules of its CRD ClusterRole.
    pub crd_rules: Vec<PolicyRule>,
}

/// The external tools the checks run.
#[derive(Clone, Debug)]
pub struct Tools {
    /// kubernetes-validate for the newest schemas.
    pub validator: Validator,
    /// Other projects' CRDs, for the objects of their kinds.
    pub crd_schemas: CrdSchemas,
    /// The venv's Python, with PyYAML.
    pub python: PathBuf,
    /// Helm.
    pub helm: PathBuf,
}

impl Tools {
    /// The tools `cargo xtask tools` provisions, from their variables.
    pub fn from_env() -> Result<Self, String> {
        let missing = |missing: MissingTool| missing.to_string();
        Ok(Self {
            validator: Validator::from_env().map_err(missing)?,
            crd_schemas: CrdSchemas::from_env()?,
            python: tools::venv_python().map_err(missing)?,
            helm: tools::required_path(tools::HELM).map_err(missing)?,
        })
    }
}

/// One check's outcome: what passed, in a line, or why not.
pub type Outcome = Result<String, String>;

/// Runs every check on `operator` and returns each one's name and outcome.
pub fn run_all(operator: &OperatorUnderTest, tools: &Tools) -> Vec<(&'static str, Outcome)> {
    vec![
        (
            "every example renders deterministic, complete multi-document YAML",
            examples_render_deterministically(operator),
        ),
        (
            "rendered examples pass kubernetes-validate --strict (newest and oldest supported), other projects' kinds their CRDs",
            examples_pass_strict_validation(operator, &tools.validator, &tools.crd_schemas),
        ),
        (
            "rendered examples read the same in PyYAML (YAML 1.1) and YAML 1.2",
            yaml_readers_agree(operator, &tools.python),
        ),
        (
            "the CRDs pass kubernetes-validate --strict",
            crds_pass_strict_validation(operator, &tools.validator),
        ),
        (
            "the chart grants exactly the registration's rules, and leader election its own",
            chart_grants_the_registration(operator, &tools.helm),
        ),
        (
            "on OpenShift (podSecurity, or auto on a cluster serving security.openshift.io) no pod names a uid",
            pod_security::openshift_pods_name_no_user(operator, &tools.helm),
        ),
    ]
}

/// Every YAML file in the examples directory, sorted, so a new example is
/// covered without touching a test.
pub fn examples(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir).map_err(|error| format!("{}: {error}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            matches!(
                path.extension().and_then(|extension| extension.to_str()),
                Some("yaml" | "yml")
            )
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!("no examples in {}", dir.display()));
    }
    Ok(files)
}

/// Runs the operator binary and returns its stdout; failure carries the stderr.
pub(crate) fn invoke(
    operator: &OperatorUnderTest,
    args: &[&std::ffi::OsStr],
) -> Result<String, String> {
    let output = Command::new(&operator.binary)
        .args(args)
        .output()
        .map_err(|error| format!("starting {}: {error}", operator.binary.display()))?;
    if !output.status.success() {
        return Err(format!(
            "{} {args:?} failed with {}: {}",
            operator.name,
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    String::from_utf8(output.stdout).map_err(|error| error.to_string())
}

fn render(operator: &OperatorUnderTest, example: &Path) -> Result<String, String> {
    invoke(
        operator,
        &["render".as_ref(), "-f".as_ref(), example.as_os_str()],
    )
}

/// Each example's rendered documents, by example path.
fn rendered_examples(operator: &OperatorUnderTest) -> Result<Vec<(PathBuf, String)>, String> {
    examples(&operator.examples)?
        .into_iter()
        .map(|example| render(operator, &example).map(|yaml| (example, yaml)))
        .collect()
}

pub(crate) fn parse(what: &Path, yaml: &str) -> Result<Vec<Value>, String> {
    yaml::documents(yaml).map_err(|error| format!("{}: {error}", what.display()))
}

fn examples_render_deterministically(operator: &OperatorUnderTest) -> Outcome {
    let mut count = 0;
    for (example, first) in rendered_examples(operator)? {
        if render(operator, &example)? != first {
            return Err(format!(
                "{} renders differently on a second run",
                example.display()
            ));
        }
        if !first.starts_with("---\n") {
            return Err(format!("{}:\n{first}", example.display()));
        }
        let documents = parse(&example, &first)?;
        if documents.len() < 2 {
            return Err(format!(
                "{} rendered {} documents:\n{first}",
                example.display(),
                documents.len()
            ));
        }
        for document in &documents {
            for field in [
                "/apiVersion",
                "/kind",
                "/metadata/name",
                "/metadata/namespace",
            ] {
                if document.pointer(field).and_then(Value::as_str).is_none() {
                    return Err(format!(
                        "{}: a document lacks {field}: {document}",
                        example.display()
                    ));
                }
            }
        }
        count += 1;
    }
    Ok(format!("{count} examples"))
}

/// Every rendered object, strictly: Kubernetes' own kinds with kubernetes-validate
/// (which only warns about kinds it has no schema for), the Prometheus Operator's and
/// the Gateway API's with their own CRDs.
fn examples_pass_strict_validation(
    operator: &OperatorUnderTest,
    validator: &Validator,
    crd_schemas: &CrdSchemas,
) -> Outcome {
    let oldest = validator.for_version(OLDEST_SUPPORTED_KUBERNETES);
    let (mut objects, mut others) = (0, 0);
    for (example, rendered) in rendered_examples(operator)? {
        let (theirs, kubernetes): (Vec<Value>, Vec<Value>) = parse(&example, &rendered)?
            .into_iter()
            .partition(|document| crd_schemas.covers(document));
        let what = example.display().to_string();
        let yaml = yaml::to_multi_document_yaml(&kubernetes)
            .map_err(|error| format!("{what}: {error}"))?;
        validator.check(&what, &yaml, kubernetes.len())?;
        oldest.check(&what, &yaml, kubernetes.len())?;
        crd_schemas.check(&what, &theirs)?;
        objects += kubernetes.len();
        others += theirs.len();
    }
    Ok(format!(
        "{objects} objects against Kubernetes {} and {OLDEST_SUPPORTED_KUBERNETES}, {others} against their projects' CRDs",
        validator.version()
    ))
}

fn yaml_readers_agree(operator: &OperatorUnderTest, python: &Path) -> Outcome {
    let mut readings = 0;
    for (example, rendered) in rendered_examples(operator)? {
        readings += yaml::readers_agree(python, &rendered)
            .map_err(|error| format!("{}: {error}", example.display()))?;
    }
    Ok(format!("{readings} readings"))
}

fn crds_pass_strict_validation(operator: &OperatorUnderTest, validator: &Validator) -> Outcome {
    let printed = invoke(operator, &["crd".as_ref()])?;
    let crds = yaml::documents(&printed).map_err(|error| format!("`crd` output: {error}"))?;
    let names: Vec<String> = crds
        .iter()
        .filter(|crd| crd["kind"] == "CustomResourceDefinition")
        .filter_map(|crd| crd["metadata"]["name"].as_str().map(str::to_owned))
        .collect();
    if names != operator.crd_names {
        return Err(format!(
            "`{} crd` prints {names:?}, its types define {:?}",
            operator.name, operator.crd_names
        ));
    }
    validator.check("the CRDs", &printed, crds.len())?;
    Ok(format!("{} CRDs", crds.len()))
}

fn expect_grant(
    grants: &[Grant],
    kind: &str,
    namespace: Option<&str>,
    rules: &[PolicyRule],
    what: &str,
) -> Result<(), String> {
    let found: Vec<&Grant> = grants.iter().filter(|grant| grant.kind == kind).collect();
    match found.as_slice() {
        [grant] if grant.namespace.as_deref() == namespace && grant.rules == rules => Ok(()),
        _ => Err(format!(
            "{what}: expected one {kind} in {namespace:?} with rules {rules:#?}; found {found:#?}"
        )),
    }
}

fn chart_grants_the_registration(operator: &OperatorUnderTest, helm: &Path) -> Outcome {
    let watched = format!("watchNamespace={WATCHED_NAMESPACE}");
    let unmanaged = "manageCrds=false";
    for (values, kind, namespace, manages_crds) in [
        (vec![], "ClusterRole", None, true),
        (
            vec![watched.as_str()],
            "Role",
            Some(WATCHED_NAMESPACE),
            true,
        ),
        (
            vec![watched.as_str(), unmanaged],
            "Role",
            Some(WATCHED_NAMESPACE),
            false,
        ),
    ] {
        let what = format!("helm template {values:?}");
        let documents = chart::template(helm, &operator.chart, RELEASE_NAMESPACE, &values)?;
        let grants = chart::grants(&documents)?;
        let (leader_election, others): (Vec<Grant>, Vec<Grant>) =
            grants.into_iter().partition(Grant::is_leader_election);
        let (crd_grants, operator_grants): (Vec<Grant>, Vec<Grant>) =
            others.into_iter().partition(Grant::is_crd_management);
        expect_grant(&operator_grants, kind, namespace, &operator.rules, &what)?;
        if operator_grants.len() != 1 {
            return Err(format!("{what}: more than one grant: {operator_grants:#?}"));
        }
        expect_grant(
            &leader_election,
            "Role",
            Some(RELEASE_NAMESPACE),
            &operator.lease_rules,
            &format!("{what}, leader election"),
        )?;
        if manages_crds {
            expect_grant(
                &crd_grants,
                "ClusterRole",
                None,
                &operator.crd_rules,
                &format!("{what}, CRD management"),
            )?;
        } else if !crd_grants.is_empty() {
            return Err(format!("{what}: a CRD grant although manageCrds is false"));
        }
        let cluster_wide = chart::cluster_wide_outside_crd_management(&documents);
        if namespace.is_some() && !cluster_wide.is_empty() {
            return Err(format!(
                "{what}: a cluster-wide grant although one namespace is watched: {cluster_wide:?}"
            ));
        }
    }
    Ok(
        "ClusterRole, Role with watchNamespace, leader-election Role, CRD ClusterRole unless \
         manageCrds=false"
            .to_owned(),
    )
}
