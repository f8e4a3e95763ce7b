//! OpenShift's `restricted-v2` refuses a pod whose uid, gid or `fsGroup` lies outside
//! the namespace's range. Under the `openshift` policy, neither the operator's own pod
//! (as the chart renders it) nor any product pod (as `render --pod-security openshift`
//! renders the examples) may name one; under `standard`, each does, so the check can
//! fail.

use std::path::Path;

use serde_json::Value;

use super::{OperatorUnderTest, Outcome, RELEASE_NAMESPACE, examples, invoke, parse};
use crate::chart;

/// The fields `restricted-v2` assigns from the namespace's range.
const ASSIGNED: [&str; 3] = ["runAsUser", "runAsGroup", "fsGroup"];

/// Every place in `value` where one of [`ASSIGNED`] is set, as JSON paths.
fn assigned_fields(value: &Value, path: &str, found: &mut Vec<String>) {
    match value {
        Value::Object(fields) => {
            for (key, field) in fields {
                let here = format!("{path}/{key}");
                if ASSIGNED.contains(&key.as_str()) && !field.is_null() {
                    found.push(here.clone());
                }
                assigned_fields(field, &here, found);
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                assigned_fields(item, &format!("{path}/{index}"), found);
            }
        }
        _ => {}
    }
}

/// The operator Deployment's pod security policy variable and its assigned fields.
fn operator_pod(documents: &[Value]) -> Result<(String, Vec<String>), String> {
    let deployment = documents
        .iter()
        .find(|document| document["kind"] == "Deployment")
        .ok_or("the chart renders no Deployment")?;
    let template = &deployment["spec"]["template"];
    let policy = template["spec"]["containers"][0]["env"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|variable| variable["name"] == "POD_SECURITY")
        .and_then(|variable| variable["value"].as_str())
        .ok_or("the operator container has no POD_SECURITY")?
        .to_owned();
    let mut found = Vec::new();
    assigned_fields(template, "", &mut found);
    Ok((policy, found))
}

fn chart_resolves_the_policy(operator: &OperatorUnderTest, helm: &Path) -> Outcome {
    for (set, api_versions, expected) in [
        (vec![], vec![], "standard"),
        (vec![], vec!["security.openshift.io/v1"], "openshift"),
        (vec!["podSecurity=openshift"], vec![], "openshift"),
        (
            vec!["podSecurity=standard"],
            vec!["security.openshift.io/v1"],
            "standard",
        ),
    ] {
        let what = format!("helm template --set {set:?} --api-versions {api_versions:?}");
        let documents = chart::template_on(
            helm,
            &operator.chart,
            RELEASE_NAMESPACE,
            &set,
            &api_versions,
        )?;
        let (policy, assigned) = operator_pod(&documents)?;
        if policy != expected {
            return Err(format!("{what}: POD_SECURITY is {policy}, not {expected}"));
        }
        if (expected == "openshift") != assigned.is_empty() {
            return Err(format!(
                "{what}: the operator's pod names {assigned:?} under {policy}"
            ));
        }
    }
    if chart::template(
        helm,
        &operator.chart,
        RELEASE_NAMESPACE,
        &["podSecurity=root"],
    )
    .is_ok()
    {
        return Err("helm template accepts podSecurity=root".to_owned());
    }
    Ok(String::new())
}

fn rendered_pods_follow_the_policy(operator: &OperatorUnderTest) -> Outcome {
    let mut workloads = 0;
    for example in examples(&operator.examples)? {
        for policy in ["standard", "openshift"] {
            let rendered = invoke(
                operator,
                &[
                    "render".as_ref(),
                    "-f".as_ref(),
                    example.as_os_str(),
                    "--pod-security".as_ref(),
                    policy.as_ref(),
                ],
            )?;
            for document in parse(&example, &rendered)? {
                let Some(template) = document.pointer("/spec/template/spec") else {
                    continue;
                };
                let mut found = Vec::new();
                assigned_fields(template, "", &mut found);
                let name = format!("{}: {}", example.display(), document["metadata"]["name"]);
                match policy {
                    "openshift" if !found.is_empty() => {
                        return Err(format!("{name} names {found:?} under openshift"));
                    }
                    "standard" if found.is_empty() => {
                        return Err(format!("{name} names no user under standard"));
                    }
                    "standard" => workloads += 1,
                    _ => {}
                }
            }
        }
    }
    Ok(format!("{workloads} workloads"))
}

/// Runs both halves: the chart's own pod, and the product pods.
pub(super) fn openshift_pods_name_no_user(operator: &OperatorUnderTest, helm: &Path) -> Outcome {
    chart_resolves_the_policy(operator, helm)?;
    rendered_pods_follow_the_policy(operator)
        .map(|workloads| format!("the operator's pod, and {workloads} in the examples"))
}
