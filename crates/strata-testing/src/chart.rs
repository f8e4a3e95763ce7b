//! An operator's Helm chart as the real Helm renders it, and the RBAC grants in
//! it.

use std::path::Path;
use std::process::Command;

use k8s_openapi::api::rbac::v1::PolicyRule;
use serde_json::Value;

/// Suffix of the leader-election Role and RoleBinding, which every chart has in
/// the release namespace, whatever `watchNamespace` says.
pub const LEADER_ELECTION_SUFFIX: &str = "-leader-election";
/// Suffix of the ClusterRole and binding with which the operator keeps its own
/// CRDs current (`manageCrds`).
pub const CRD_MANAGEMENT_SUFFIX: &str = "-crds";

/// `helm template <release> <chart> --namespace <namespace> --set ...`, as
/// parsed documents.
pub fn template(
    helm: &Path,
    chart: &Path,
    namespace: &str,
    set: &[&str],
) -> Result<Vec<Value>, String> {
    template_on(helm, chart, namespace, set, &[])
}

/// [`template`] for a cluster that also serves `api_versions` (`--api-versions`), as
/// `.Capabilities.APIVersions` sees them.
pub fn template_on(
    helm: &Path,
    chart: &Path,
    namespace: &str,
    set: &[&str],
    api_versions: &[&str],
) -> Result<Vec<Value>, String> {
    let mut command = Command::new(helm);
    command
        .args(["template", "chart-test"])
        .arg(chart)
        .args(["--namespace", namespace]);
    for value in set {
        command.args(["--set", value]);
    }
    for api_version in api_versions {
        command.args(["--api-versions", api_version]);
    }
    let output = command
        .output()
        .map_err(|error| format!("starting {}: {error}", helm.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!(
            "helm template {} {set:?} failed with {}: {}",
            chart.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    crate::yaml::documents(&stdout).map_err(|error| format!("helm output: {error}"))
}

/// One Role or ClusterRole of a rendered chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Grant {
    /// `Role` or `ClusterRole`.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its namespace, for a Role.
    pub namespace: Option<String>,
    /// Its rules.
    pub rules: Vec<PolicyRule>,
}

impl Grant {
    /// Whether this is the leader-election Role.
    pub fn is_leader_election(&self) -> bool {
        self.name.ends_with(LEADER_ELECTION_SUFFIX)
    }

    /// Whether this is the CRD management ClusterRole.
    pub fn is_crd_management(&self) -> bool {
        self.name.ends_with(CRD_MANAGEMENT_SUFFIX)
    }
}

/// Every Role and ClusterRole in `documents`.
pub fn grants(documents: &[Value]) -> Result<Vec<Grant>, String> {
    documents
        .iter()
        .filter(|document| document["kind"] == "Role" || document["kind"] == "ClusterRole")
        .map(|document| {
            let name = document["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            Ok(Grant {
                kind: document["kind"].as_str().unwrap_or_default().to_owned(),
                namespace: document["metadata"]["namespace"]
                    .as_str()
                    .map(str::to_owned),
                rules: serde_json::from_value(document["rules"].clone())
                    .map_err(|error| format!("the rules of {name}: {error}"))?,
                name,
            })
        })
        .collect()
}

/// The names of the ClusterRoles and ClusterRoleBindings in `documents` other than
/// the CRD management ones.
pub fn cluster_wide_outside_crd_management(documents: &[Value]) -> Vec<String> {
    documents
        .iter()
        .filter(|document| {
            document["kind"] == "ClusterRole" || document["kind"] == "ClusterRoleBinding"
        })
        .filter_map(|document| document["metadata"]["name"].as_str())
        .filter(|name| !name.ends_with(CRD_MANAGEMENT_SUFFIX))
        .map(str::to_owned)
        .collect()
}
