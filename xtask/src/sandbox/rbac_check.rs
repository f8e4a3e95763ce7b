//! The demo's last step: a revoked grant must make the sandbox name the refused request.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::bail;
use serde_json::{Value, json};
use strata_testing::control_plane::{AuditEvent, ControlPlane};

use super::demo::first_resource;
use super::kubectl::Kubectl;
use super::operator_pods::OperatorPods;
use super::{OPERATOR_NAMESPACE, POLL_PERIOD, refused_operator_requests};
use crate::operators::Operator;

/// How long the revoked grant may take to show as a refused request. The step follows
/// the Lease handover at once: the new leader may still be starting its term and its
/// watches, and the replacement pod starting beside it, on a 2-core machine that also
/// runs the control plane. 30 s were once not enough in CI (a handover that took 15.7 s).
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(90);

/// The RBAC enforcement proves itself: `patch` on core ConfigMaps is revoked from
/// `operator`'s ClusterRole, its example is applied, and the API server's audit log must
/// show the refused request; then the role is restored and the example deleted. Returns
/// the audit ids of the refusals this step provoked (that user's `patch` on ConfigMaps),
/// which the final check does not count; any other refusal still fails the sandbox.
pub(super) async fn revoked_verb_is_named(
    workspace: &Path,
    dir: &Path,
    kubectl: &Kubectl,
    control_plane: &ControlPlane,
    operator: &Operator,
    pods: &OperatorPods<'_>,
) -> anyhow::Result<Vec<String>> {
    let role_file = |name: &str, role: &Value| -> anyhow::Result<PathBuf> {
        let path = dir.join(name);
        fs::write(&path, serde_json::to_string_pretty(role)?)?;
        Ok(path)
    };
    let mut original: Value = serde_json::from_str(&kubectl.run(&[
        "get",
        "clusterrole",
        operator.name,
        "-o",
        "json",
    ])?)?;
    if let Some(metadata) = original["metadata"].as_object_mut() {
        for field in [
            "resourceVersion",
            "managedFields",
            "uid",
            "creationTimestamp",
        ] {
            metadata.remove(field);
        }
    }
    let revoked = without_configmap_patch(&original);
    let revoked_file = role_file("revoked-clusterrole.json", &revoked)?;
    let original_file = role_file("original-clusterrole.json", &original)?;
    eprintln!(
        "==> kubectl replace clusterrole/{}: patch on ConfigMaps revoked",
        operator.name
    );
    kubectl.run(&["replace", "-f", &revoked_file.to_string_lossy()])?;
    let before: Vec<String> = refused_operator_requests(control_plane)?
        .into_iter()
        .map(|request| request.audit_id)
        .collect();
    let example = workspace.join(operator.example);
    let target = first_resource(&example)?;
    let user = format!(
        "system:serviceaccount:{OPERATOR_NAMESPACE}:{}",
        operator.name
    );
    let provoked = |request: &AuditEvent| {
        request.user == user
            && request.verb == "patch"
            && request.api_group.is_empty()
            && request.resource == "configmaps"
            && !before.contains(&request.audit_id)
    };
    let named = async {
        kubectl.run(&["apply", "--server-side", "-f", &example.to_string_lossy()])?;
        let mut waited = Duration::ZERO;
        loop {
            pods.check()?;
            if let Some(request) = refused_operator_requests(control_plane)?
                .iter()
                .find(|request| provoked(request))
            {
                return anyhow::Ok(request.describe());
            }
            if waited >= REFUSAL_TIMEOUT {
                let holder = super::lease::holder_pod(kubectl, operator)
                    .unwrap_or_default()
                    .unwrap_or_else(|| "nobody".to_owned());
                bail!(
                    "with patch on ConfigMaps revoked, the audit log shows no refused request \
                     of {} within {} s (lease/{} held by {holder}); the last lines of its \
                     log:\n{}",
                    operator.name,
                    REFUSAL_TIMEOUT.as_secs(),
                    operator.name,
                    pods.last_log_lines(&holder, 40)
                );
            }
            tokio::time::sleep(POLL_PERIOD).await;
            waited += POLL_PERIOD;
        }
    }
    .await;
    // The role comes back whatever happened, so the other checks see the chart's own.
    kubectl.run(&["replace", "-f", &original_file.to_string_lossy()])?;
    eprintln!("==> the audit log names the refused request: {}", named?);
    target.kubectl(kubectl, "delete", &["--wait=true"])?;
    eprintln!(
        "==> clusterrole/{} restored and {} deleted",
        operator.name, target.resource
    );
    Ok(refused_operator_requests(control_plane)?
        .into_iter()
        .filter(|request| provoked(request))
        .map(|request| request.audit_id)
        .collect())
}

/// `role` with `patch` on core ConfigMaps removed (server-side apply, which creates
/// and updates them, is a PATCH); the other resources of the rule keep their verbs.
pub(super) fn without_configmap_patch(role: &Value) -> Value {
    let mut role = role.clone();
    let rules = role["rules"].as_array().cloned().unwrap_or_default();
    let mut changed = Vec::new();
    for rule in rules {
        let core = rule["apiGroups"]
            .as_array()
            .is_some_and(|groups| groups.iter().any(|group| group == ""));
        let resources = rule["resources"].as_array().cloned().unwrap_or_default();
        if !core || !resources.iter().any(|resource| resource == "configmaps") {
            changed.push(rule);
            continue;
        }
        let others: Vec<Value> = resources
            .into_iter()
            .filter(|resource| resource != "configmaps")
            .collect();
        if !others.is_empty() {
            let mut rest = rule.clone();
            rest["resources"] = Value::Array(others);
            changed.push(rest);
        }
        let mut configmaps = rule.clone();
        configmaps["resources"] = json!(["configmaps"]);
        configmaps["verbs"] = Value::Array(
            rule["verbs"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|verb| *verb != "patch" && *verb != "*")
                .cloned()
                .collect(),
        );
        changed.push(configmaps);
    }
    role["rules"] = Value::Array(changed);
    role
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(super) fn revoking_patch_on_configmaps_keeps_every_other_grant() {
        let role = json!({"rules": [
            {"apiGroups": [""], "resources": ["configmaps", "services"],
             "verbs": ["get", "list", "watch", "create", "patch", "delete"]},
            {"apiGroups": ["apps"], "resources": ["statefulsets"], "verbs": ["create"]}
        ]});
        let revoked = without_configmap_patch(&role);
        assert_eq!(
            revoked["rules"],
            json!([
                {"apiGroups": [""], "resources": ["services"],
                 "verbs": ["get", "list", "watch", "create", "patch", "delete"]},
                {"apiGroups": [""], "resources": ["configmaps"],
                 "verbs": ["get", "list", "watch", "create", "delete"]},
                {"apiGroups": ["apps"], "resources": ["statefulsets"], "verbs": ["create"]}
            ])
        );
    }
}
