//! The scripted demo: each example Available, Degraded, healed, Stopped and deleted, with
//! `kubectl get` and the conditions shown; the ZooKeeper, HDFS and Trino examples run for
//! real on the pod runner's node.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use strata_testing::control_plane::{ControlPlane, SIMULATED_FAILURE_ANNOTATION};

use super::kubectl::Kubectl;
use super::node::placement;
use super::operator_pods::OperatorPods;
use super::{DEMO_TIMEOUT, GARBAGE_COLLECTION_TIMEOUT, POLL_PERIOD, REAL_DEMO_TIMEOUT};
use super::{hdfs, trino, zookeeper};
use crate::operators::{Operator, RealCheck};
use crate::tools::SandboxTools;

/// A JVM option no JVM knows: the JVM refuses to start with it.
const BAD_JVM_OPTION: &str = "-XX:+StrataNoSuchOption";

/// Runs each operator's example through the demo's steps. A control-plane component
/// that dies, or an operator that restarts, ends it.
pub(super) async fn demo(
    workspace: &Path,
    tools: &SandboxTools,
    kubectl: &Kubectl,
    operators: &[Operator],
    pods: &OperatorPods<'_>,
    control_plane: &mut ControlPlane,
) -> anyhow::Result<()> {
    for operator in operators {
        control_plane.check_alive()?;
        let example = workspace.join(operator.example);
        let mut target = first_resource(&example)?;
        let real_prerequisite = operator.sandbox_runner.and_then(|real| real.prerequisite);
        let prerequisite = match real_prerequisite {
            Some(path) => {
                let placed = on_runner(&workspace.join(path), &kubectl.home, |_| {})?;
                eprintln!(
                    "==> kubectl apply --server-side -f {path} (the real product the example \
                     needs, on the pod runner's node)"
                );
                Some(placed.to_string_lossy().into_owned())
            }
            None => operator.sandbox_prerequisite.map(|path| {
                eprintln!(
                    "==> kubectl apply --server-side -f {path} (what another operator would publish)"
                );
                workspace.join(path).to_string_lossy().into_owned()
            }),
        };
        if let Some(prerequisite) = &prerequisite {
            kubectl.run(&["apply", "--server-side", "-f", prerequisite])?;
        }
        match operator.sandbox_runner {
            Some(real) => {
                target.timeout = REAL_DEMO_TIMEOUT;
                let placed = on_runner(&example, &kubectl.home, real.fit)?;
                eprintln!(
                    "==> kubectl apply --server-side -f {} (on the pod runner's node: its \
                     selector and toleration in each role's podOverrides)",
                    operator.example
                );
                kubectl.run(&["apply", "--server-side", "-f", &placed.to_string_lossy()])?;
                show(kubectl, &target, "Available=True", pods)?;
                // A catalog the operator found after the first pods started rolls them.
                show(kubectl, &target, "Progressing=False", pods)?;
                match real.check {
                    RealCheck::Zookeeper(step) => {
                        zookeeper::real_ensemble(workspace, tools, kubectl, pods, &target, step)
                            .await?;
                    }
                    RealCheck::Trino { coordinator_role } => {
                        trino::answers_tpch(kubectl, pods, &target, coordinator_role).await?;
                    }
                    RealCheck::Hdfs => hdfs::real_cluster(pods, &target).await?,
                }
                if real.lifecycle {
                    let failing = json!({"spec": {"containers": [{"name": real.container,
                        "env": [{"name": "JAVA_TOOL_OPTIONS", "value": BAD_JVM_OPTION}]}]}});
                    let healing = json!({"spec": {"containers": null}});
                    lifecycle(
                        kubectl,
                        pods,
                        &target,
                        &failing,
                        &healing,
                        &format!(
                            "JAVA_TOOL_OPTIONS={BAD_JVM_OPTION} in container {}",
                            real.container
                        ),
                    )?;
                }
            }
            None => {
                eprintln!("==> kubectl apply --server-side -f {}", operator.example);
                kubectl.run(&["apply", "--server-side", "-f", &example.to_string_lossy()])?;
                show(kubectl, &target, "Available=True", pods)?;
                let failing = json!({"metadata": {"annotations": {SIMULATED_FAILURE_ANNOTATION: "CrashLoopBackOff"}}});
                lifecycle(
                    kubectl,
                    pods,
                    &target,
                    &failing,
                    &Value::Null,
                    "simulated CrashLoopBackOff",
                )?;
            }
        }
        delete(kubectl, control_plane, &target, prerequisite.as_deref()).await?;
    }
    eprintln!("==> the demo finished");
    Ok(())
}

/// The example sized by `fit` and placed on the runner's node
/// ([`on_runner_documents`]), written to `dir/<example file>`.
fn on_runner(example: &Path, dir: &Path, fit: fn(&mut Vec<Value>)) -> anyhow::Result<PathBuf> {
    let text = fs::read_to_string(example)?;
    let mut documents = strata_testing::yaml::documents(&text)
        .map_err(|error| anyhow::anyhow!("{}: {error}", example.display()))?;
    fit(&mut documents);
    let file_name = example
        .file_name()
        .context("the example has no file name")?
        .to_string_lossy();
    on_runner_documents(&documents, dir, &file_name)
}

/// `documents` with the runner's node selector and toleration in the `podOverrides` of
/// every role of every cluster document, written to `dir/file_name`.
pub(super) fn on_runner_documents(
    documents: &[Value],
    dir: &Path,
    file_name: &str,
) -> anyhow::Result<PathBuf> {
    let mut documents = documents.to_vec();
    let placement = placement();
    for document in &mut documents {
        let Some(spec) = document.get_mut("spec").and_then(Value::as_object_mut) else {
            continue;
        };
        for role in spec.values_mut() {
            if role.get("roleGroups").is_none() {
                continue;
            }
            let overrides = &mut role["podOverrides"]["spec"];
            overrides["nodeSelector"] = placement["nodeSelector"].clone();
            overrides["tolerations"] = placement["tolerations"].clone();
        }
    }
    let yaml = documents
        .iter()
        .map(serde_yaml_ng::to_string)
        .collect::<Result<Vec<_>, _>>()?
        .join("---\n");
    let placed = dir.join(file_name);
    fs::write(&placed, yaml).with_context(|| format!("writing {}", placed.display()))?;
    Ok(placed)
}

/// Degraded through `failing` in the first role's `podOverrides`, healed by
/// `healing`; Stopped through the `operator-command` annotation, with the volume claims
/// kept; Available again.
fn lifecycle(
    kubectl: &Kubectl,
    pods: &OperatorPods<'_>,
    target: &DemoTarget,
    failing: &Value,
    healing: &Value,
    fault: &str,
) -> anyhow::Result<()> {
    eprintln!("==> {fault} through spec.{}.podOverrides", target.role);
    target.patch_role(kubectl, failing)?;
    show(kubectl, target, "Degraded=True", pods)?;
    describe_shows_degraded_event(kubectl, target)?;
    eprintln!("==> the fault taken back out of podOverrides");
    target.patch_role(kubectl, healing)?;
    show(kubectl, target, "Available=True", pods)?;
    let claims = volume_claims(kubectl, target)?;

    eprintln!(
        "==> kubectl annotate {} operator-command=Stopped",
        target.resource
    );
    target.kubectl(kubectl, "annotate", &["operator-command=Stopped"])?;
    show(kubectl, target, "Stopped=True", pods)?;
    let replicas = target.children(
        kubectl,
        "statefulsets",
        "jsonpath={.items[*].spec.replicas}",
    )?;
    if replicas.split_whitespace().any(|count| count != "0") {
        bail!(
            "{} is stopped, but its StatefulSets have replicas {replicas:?}",
            target.resource
        );
    }
    let kept = volume_claims(kubectl, target)?;
    if let Some(lost) = claims.iter().find(|claim| !kept.contains(claim)) {
        bail!(
            "{} is stopped, and its volume claim {lost} is gone",
            target.resource
        );
    }
    eprintln!(
        "==> stopped: every StatefulSet at 0 replicas ({}), its {} volume claims stay; \
         kubectl annotate {} operator-command-",
        replicas.trim(),
        kept.len(),
        target.resource
    );
    target.kubectl(kubectl, "annotate", &["operator-command-"])?;
    show(kubectl, target, "Available=True", pods)
}

/// Deletes the cluster (and the prerequisite), waits for the garbage collector to
/// remove its children, and checks that its volume claims stay.
async fn delete(
    kubectl: &Kubectl,
    control_plane: &mut ControlPlane,
    target: &DemoTarget,
    prerequisite: Option<&str>,
) -> anyhow::Result<()> {
    let kept = volume_claims(kubectl, target)?;
    eprintln!("==> kubectl delete {}", target.resource);
    target.kubectl(kubectl, "delete", &["--wait=true"])?;
    if let Some(prerequisite) = prerequisite {
        kubectl.run(&["delete", "-f", prerequisite, "--wait=true"])?;
    }
    // kube-controller-manager's garbage collector removes the children in the
    // background, so the demo waits for it as a user would.
    let mut waited = Duration::ZERO;
    loop {
        let left = target.children(
            kubectl,
            "statefulsets,configmaps,services,poddisruptionbudgets,pods",
            "name",
        )?;
        if left.trim().is_empty() {
            break;
        }
        if waited >= GARBAGE_COLLECTION_TIMEOUT {
            bail!(
                "children of {} outlived it by {} s:\n{left}",
                target.resource,
                waited.as_secs()
            );
        }
        control_plane.check_alive()?;
        tokio::time::sleep(POLL_PERIOD).await;
        waited += POLL_PERIOD;
    }
    let left = volume_claims(kubectl, target)?;
    if let Some(lost) = kept.iter().find(|claim| !left.contains(claim)) {
        bail!("{lost} went away with {}", target.resource);
    }
    println!("{}", left.join("\n"));
    eprintln!(
        "==> the garbage collector removed its children after {:.1} s; its {} volume claims stay",
        waited.as_secs_f64(),
        left.len()
    );
    Ok(())
}

/// The volume claims of the demo's cluster: `<template>-<cluster>-<role>-<group>-<n>`.
pub(super) fn volume_claims(kubectl: &Kubectl, target: &DemoTarget) -> anyhow::Result<Vec<String>> {
    let cluster = target.name();
    let marker = format!("-{cluster}-");
    Ok(kubectl
        .in_namespace(
            "get",
            &target.namespace,
            &["persistentvolumeclaims", "-o", "name"],
        )?
        .lines()
        .filter(|claim| claim.contains(&marker))
        .map(str::to_owned)
        .collect())
}

/// `kubectl describe` of a Degraded resource lists a Warning Event with the Degraded
/// condition's reason, as the operator published it.
pub(super) fn describe_shows_degraded_event(
    kubectl: &Kubectl,
    target: &DemoTarget,
) -> anyhow::Result<()> {
    let reason = target.kubectl(
        kubectl,
        "get",
        &[
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Degraded\")].reason}",
        ],
    )?;
    let described = target.kubectl(kubectl, "describe", &[])?;
    let events = described
        .split_once("Events:")
        .map(|(_, events)| events)
        .unwrap_or_default();
    let line = events
        .lines()
        .find(|line| line.contains("Warning") && line.contains(reason.trim()));
    match line {
        Some(line) => {
            eprintln!("==> kubectl describe {} lists the Event:", target.resource);
            println!("{}", line.trim());
            Ok(())
        }
        None => bail!(
            "kubectl describe {} shows no Warning Event {reason:?}:\n{described}",
            target.resource
        ),
    }
}

/// Waits for `condition` (`Type=Status`) and prints `kubectl get` and the conditions.
pub(super) fn show(
    kubectl: &Kubectl,
    target: &DemoTarget,
    condition: &str,
    pods: &OperatorPods<'_>,
) -> anyhow::Result<()> {
    eprintln!(
        "==> kubectl wait {} --for=condition={condition}",
        target.resource
    );
    let waited = target.kubectl(
        kubectl,
        "wait",
        &[
            &format!("--for=condition={condition}"),
            &format!("--timeout={}", target.timeout),
        ],
    );
    pods.check()?;
    let conditions = || {
        target.kubectl(kubectl, "get", &["-o",
            "jsonpath={range .status.conditions[*]}{.type}={.status} ({.reason}): {.message}{\"\\n\"}{end}",])
    };
    if let Err(error) = waited {
        let workloads = target.children(kubectl, "statefulsets,pods", "wide");
        let pod_states = target.children(
            kubectl,
            "pods",
            "jsonpath={range .items[*]}{.metadata.name}: {.status.conditions[?(@.type==\"Ready\")].message} {.status.containerStatuses[*].state}{\"\\n\"}{end}",
        );
        bail!(
            "{error:#}\nits conditions:\n{}\nits workloads:\n{}\nits pods:\n{}",
            conditions().unwrap_or_else(|error| error.to_string()),
            workloads.unwrap_or_else(|error| error.to_string()),
            pod_states.unwrap_or_else(|error| error.to_string())
        );
    }
    println!("{}", target.kubectl(kubectl, "get", &[])?);
    println!("{}", conditions()?);
    Ok(())
}

/// The object a demo drives: `<kind>/<name>`, its namespace and its first role.
pub(super) struct DemoTarget {
    pub(super) resource: String,
    pub(super) namespace: String,
    pub(super) role: String,
    /// How long `kubectl wait` waits for each condition.
    pub(super) timeout: &'static str,
}

impl DemoTarget {
    /// The resource's name, without its kind.
    pub(super) fn name(&self) -> &str {
        self.resource
            .split_once('/')
            .map_or(self.resource.as_str(), |(_, name)| name)
    }

    /// `kubectl <verb> --namespace <namespace> <kind>/<name> <args>`.
    pub(super) fn kubectl(
        &self,
        kubectl: &Kubectl,
        verb: &str,
        args: &[&str],
    ) -> anyhow::Result<String> {
        let mut all = vec![self.resource.as_str()];
        all.extend_from_slice(args);
        kubectl.in_namespace(verb, &self.namespace, &all)
    }

    /// `kubectl get <kinds> -o <output>` of the objects of the cluster (its instance
    /// label).
    pub(super) fn children(
        &self,
        kubectl: &Kubectl,
        kinds: &str,
        output: &str,
    ) -> anyhow::Result<String> {
        kubectl.in_namespace(
            "get",
            &self.namespace,
            &[
                kinds,
                "--selector",
                &format!("app.kubernetes.io/instance={}", self.name()),
                "-o",
                output,
            ],
        )
    }

    /// Sets the replicas of the first role's `default` role group with a merge patch.
    pub(super) fn patch_role_group_replicas(
        &self,
        kubectl: &Kubectl,
        replicas: usize,
    ) -> anyhow::Result<()> {
        let patch = json!({"spec": {self.role.as_str(): {"roleGroups": {"default": {"replicas": replicas}}}}});
        self.kubectl(
            kubectl,
            "patch",
            &["--type", "merge", "-p", &patch.to_string()],
        )?;
        Ok(())
    }

    /// Sets (or with `null`, removes) the role's `podOverrides` with a merge patch.
    pub(super) fn patch_role(
        &self,
        kubectl: &Kubectl,
        pod_overrides: &Value,
    ) -> anyhow::Result<()> {
        let patch = json!({"spec": {self.role.as_str(): {"podOverrides": pod_overrides}}});
        self.kubectl(
            kubectl,
            "patch",
            &["--type", "merge", "-p", &patch.to_string()],
        )?;
        Ok(())
    }
}

/// The first document of an example: `<kind>/<name>`, its namespace, and the first
/// `spec` field that holds `roleGroups` (its first role).
pub(super) fn first_resource(example: &Path) -> anyhow::Result<DemoTarget> {
    let text = fs::read_to_string(example)?;
    let documents = strata_testing::yaml::documents(&text)
        .map_err(|error| anyhow::anyhow!("{}: {error}", example.display()))?;
    let first = documents
        .first()
        .with_context(|| format!("{} has no document", example.display()))?;
    let kind = first["kind"].as_str().unwrap_or_default().to_lowercase();
    let name = first["metadata"]["name"].as_str().unwrap_or_default();
    let role = first["spec"]
        .as_object()
        .and_then(|spec| {
            spec.iter()
                .find(|(_, value)| value.get("roleGroups").is_some())
                .map(|(key, _)| key.clone())
        })
        .with_context(|| format!("{} has no role with roleGroups", example.display()))?;
    Ok(DemoTarget {
        resource: format!("{kind}/{name}"),
        namespace: first["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default")
            .to_owned(),
        role,
        timeout: DEMO_TIMEOUT,
    })
}
