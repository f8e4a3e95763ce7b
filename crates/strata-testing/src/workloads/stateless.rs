//! The Deployment, DaemonSet and Job controllers and their kubelets, as the sandbox
//! plays them: Pods from the current template, ready at once (or waiting with the
//! [`SIMULATED_FAILURE_ANNOTATION`]'s reason), and a status that says so.
//!
//! - **Deployments** get `<deployment>-<template hash>-<index>` Pods; a changed
//!   template replaces every Pod in one pass (ReplicaSets are not simulated).
//! - **DaemonSets** run on one simulated node: one Pod, `<daemonset>-<template hash>`.
//! - **Jobs** run `completions` Pods (default 1) that succeed at once, and the Job is
//!   Complete; with the failure annotation they fail and the Job is Failed
//!   (`BackoffLimitExceeded`).
//!
//! Every Pod carries [`WORKLOAD_LABEL`] and [`OWNER_LABEL`], so a workload's Pods are
//! told apart from others with similar names. Pods get no owner references: the Pods of
//! a deleted workload stay, as in the StatefulSet simulation.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use kube::Resource;
use serde_json::{Value, json};
use strata_model::build::config_hash;

use super::{Place, PodState, store_template_pod, template_failure};

/// The label that names the kind of workload a simulated Pod belongs to.
pub const WORKLOAD_LABEL: &str = "sandbox.strata.dev/workload";
/// The label that names the workload a simulated Pod belongs to (its first 63
/// characters, as label values allow), so `web` never takes `web-x`'s Pods.
pub const OWNER_LABEL: &str = "sandbox.strata.dev/owner";
/// The label of the template hash, as the Deployment controller sets it.
const TEMPLATE_HASH_LABEL: &str = "pod-template-hash";
/// When the sandbox says a Job started and finished.
const TIMESTAMP: &str = "1970-01-01T00:00:00Z";

/// The first ten hex characters of the template's hash.
fn template_hash(template: &PodTemplateSpec) -> String {
    let text = serde_json::to_string(template).unwrap_or_default();
    let hash = config_hash(&BTreeMap::from([("template".to_owned(), text)]));
    hash.get(..10).unwrap_or(&hash).to_owned()
}

/// The objects of kind `K` in the place's namespace.
fn in_namespace<K>(place: Place<'_>) -> Vec<K>
where
    K: Resource<DynamicType = ()> + serde::de::DeserializeOwned + Clone,
{
    place
        .server
        .list_typed::<K>()
        .into_iter()
        .filter(|object| object.meta().namespace.as_deref() == Some(place.namespace))
        .collect()
}

/// The Pods of the place's namespace simulated for the workload `kind`/`name`, as
/// `(pod name, the rest of the name after `<name>-`, template hash label)`.
fn workload_pods(place: Place<'_>, kind: &str, name: &str) -> Vec<(String, String, String)> {
    let prefix = format!("{name}-");
    in_namespace::<Pod>(place)
        .into_iter()
        .filter_map(|pod| {
            let labels = pod.metadata.labels.unwrap_or_default();
            let pod_name = pod.metadata.name.unwrap_or_default();
            let rest = pod_name.strip_prefix(&prefix)?.to_owned();
            let owned = labels.get(WORKLOAD_LABEL).map(String::as_str) == Some(kind)
                && labels.get(OWNER_LABEL).map(String::as_str) == Some(owner_value(name));
            owned.then(|| {
                let hash = labels.get(TEMPLATE_HASH_LABEL).cloned().unwrap_or_default();
                (pod_name.clone(), rest, hash)
            })
        })
        .collect()
}

fn pod_state(failure: Option<&str>) -> PodState<'_> {
    match failure {
        Some(reason) => PodState {
            waiting: Some(reason),
            ready: false,
            ..PodState::RUNNING
        },
        None => PodState::RUNNING,
    }
}

/// The [`OWNER_LABEL`] value of the workload `name`.
fn owner_value(name: &str) -> &str {
    name.get(..63).unwrap_or(name)
}

fn labels(kind: &str, name: &str, hash: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (WORKLOAD_LABEL.to_owned(), kind.to_owned()),
        (OWNER_LABEL.to_owned(), owner_value(name).to_owned()),
        (TEMPLATE_HASH_LABEL.to_owned(), hash.to_owned()),
    ])
}

/// Writes `status` when it differs from `stored`; returns whether it wrote.
fn write_status<K>(place: Place<'_>, name: &str, stored: Option<Value>, status: Value) -> bool
where
    K: Resource<DynamicType = ()> + serde::de::DeserializeOwned,
{
    let differs = stored.as_ref().is_none_or(|stored| {
        status
            .as_object()
            .into_iter()
            .flatten()
            .any(|(key, value)| stored.get(key) != Some(value))
    });
    differs
        && place
            .server
            .patch_status_direct::<K>(place.namespace, name, status)
            .is_ok()
}

fn delete_pod(place: Place<'_>, pod: &str) -> bool {
    // An error means the pod is gone already.
    place
        .server
        .delete_direct::<Pod>(place.namespace, pod)
        .is_ok()
}

/// One pass of the Deployment controller and the kubelets in the namespace.
/// Returns whether anything changed.
pub fn step_deployments<'a>(place: impl Into<Place<'a>>) -> bool {
    let place = place.into();
    let mut changed = false;
    for deployment in in_namespace::<Deployment>(place) {
        let name = deployment.metadata.name.clone().unwrap_or_default();
        let spec = deployment.spec.clone();
        let replicas = spec.replicas.unwrap_or(1).max(0);
        let hash = template_hash(&spec.template);
        let failure = template_failure(&spec.template);
        let mut current = Vec::new();
        for (pod, rest, pod_hash) in workload_pods(place, "Deployment", &name) {
            let index = rest
                .strip_prefix(&format!("{hash}-"))
                .and_then(|index| index.parse::<i32>().ok());
            match index {
                Some(index) if pod_hash == hash && index < replicas => current.push(index),
                _ => changed |= delete_pod(place, &pod),
            }
        }
        for index in (0..replicas).filter(|index| !current.contains(index)) {
            store_template_pod(
                place,
                &format!("{name}-{hash}-{index}"),
                &spec.template,
                labels("Deployment", &name, &hash),
                pod_state(failure.as_deref()),
            );
            changed = true;
        }
        let ready = if failure.is_some() { 0 } else { replicas };
        let available = if ready == replicas { "True" } else { "False" };
        let status = json!({
            "observedGeneration": deployment.metadata.generation.unwrap_or(1),
            "replicas": replicas,
            "updatedReplicas": replicas,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "unavailableReplicas": replicas - ready,
            "conditions": [
                {"type": "Available", "status": available,
                 "reason": if ready == replicas { "MinimumReplicasAvailable" } else { "MinimumReplicasUnavailable" },
                 "message": format!("{ready} of {replicas} replicas are available."),
                 "lastUpdateTime": TIMESTAMP, "lastTransitionTime": TIMESTAMP},
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                 "message": "The sandbox rolled out the current template.",
                 "lastUpdateTime": TIMESTAMP, "lastTransitionTime": TIMESTAMP}
            ]
        });
        let stored = serde_json::to_value(&deployment.status).ok();
        changed |= write_status::<Deployment>(place, &name, stored, status);
    }
    changed
}

/// One pass of the DaemonSet controller and the kubelet of the one simulated node.
/// Returns whether anything changed.
pub fn step_daemon_sets<'a>(place: impl Into<Place<'a>>) -> bool {
    let place = place.into();
    let mut changed = false;
    for daemon_set in in_namespace::<DaemonSet>(place) {
        let name = daemon_set.metadata.name.clone().unwrap_or_default();
        let spec = daemon_set.spec.clone();
        let hash = template_hash(&spec.template);
        let failure = template_failure(&spec.template);
        let mut running = false;
        for (pod, _, pod_hash) in workload_pods(place, "DaemonSet", &name) {
            if pod_hash == hash && pod == format!("{name}-{hash}") {
                running = true;
            } else {
                changed |= delete_pod(place, &pod);
            }
        }
        if !running {
            store_template_pod(
                place,
                &format!("{name}-{hash}"),
                &spec.template,
                labels("DaemonSet", &name, &hash),
                pod_state(failure.as_deref()),
            );
            changed = true;
        }
        let ready = i32::from(failure.is_none());
        let status = json!({
            "observedGeneration": daemon_set.metadata.generation.unwrap_or(1),
            "desiredNumberScheduled": 1,
            "currentNumberScheduled": 1,
            "updatedNumberScheduled": 1,
            "numberMisscheduled": 0,
            "numberReady": ready,
            "numberAvailable": ready,
            "numberUnavailable": 1 - ready
        });
        let stored = serde_json::to_value(&daemon_set.status).ok();
        changed |= write_status::<DaemonSet>(place, &name, stored, status);
    }
    changed
}

/// One pass of the Job controller and the kubelets: an unfinished Job runs its
/// `completions` Pods to success (or, with the failure annotation, to failure) and is
/// marked Complete (or Failed). Finished Jobs are left alone. Returns whether anything
/// changed.
pub fn step_jobs<'a>(place: impl Into<Place<'a>>) -> bool {
    let place = place.into();
    let mut changed = false;
    for job in in_namespace::<Job>(place) {
        let finished = job.status.as_ref().is_some_and(|status| {
            status.conditions.iter().flatten().any(|condition| {
                (condition.type_ == "Complete" || condition.type_ == "Failed")
                    && condition.status == "True"
            })
        });
        if finished {
            continue;
        }
        let name = job.metadata.name.clone().unwrap_or_default();
        let spec = job.spec.clone().unwrap_or_default();
        let completions = spec.completions.unwrap_or(1).max(1);
        let hash = template_hash(&spec.template);
        let failed = template_failure(&spec.template).is_some();
        let phase = if failed { "Failed" } else { "Succeeded" };
        for index in 0..completions {
            store_template_pod(
                place,
                &format!("{name}-{index}"),
                &spec.template,
                labels("Job", &name, &hash),
                PodState {
                    phase,
                    waiting: None,
                    version: None,
                    ready: false,
                },
            );
        }
        let status = if failed {
            json!({
                "startTime": TIMESTAMP,
                "active": 0,
                "failed": spec.backoff_limit.unwrap_or(6) + 1,
                "conditions": [
                    {"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded",
                     "message": "Job has reached the specified backoff limit",
                     "lastProbeTime": TIMESTAMP, "lastTransitionTime": TIMESTAMP},
                    {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                     "message": "Job has reached the specified backoff limit",
                     "lastProbeTime": TIMESTAMP, "lastTransitionTime": TIMESTAMP}
                ]
            })
        } else {
            json!({
                "startTime": TIMESTAMP,
                "completionTime": TIMESTAMP,
                "active": 0,
                "succeeded": completions,
                "conditions": [
                    {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached",
                     "message": "Reached expected number of succeeded pods",
                     "lastProbeTime": TIMESTAMP, "lastTransitionTime": TIMESTAMP},
                    {"type": "Complete", "status": "True", "reason": "CompletionsReached",
                     "message": "Reached expected number of succeeded pods",
                     "lastProbeTime": TIMESTAMP, "lastTransitionTime": TIMESTAMP}
                ]
            })
        };
        changed |= write_status::<Job>(place, &name, None, status);
    }
    changed
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
    use k8s_openapi::api::batch::v1::Job;
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;
    use strata_test_apiserver::TestApiServer;

    use super::*;

    const NAMESPACE: &str = "default";

    fn server() -> TestApiServer {
        TestApiServer::new()
    }

    fn template(annotations: serde_json::Value) -> serde_json::Value {
        json!({
            "metadata": {"labels": {"app": "web"}, "annotations": annotations},
            "spec": {"containers": [{"name": "web", "image": "web:1"}]}
        })
    }

    fn store<
        K: serde::Serialize + serde::de::DeserializeOwned + Resource<DynamicType = ()> + Clone,
    >(
        server: &TestApiServer,
        object: serde_json::Value,
    ) {
        let object: K = serde_json::from_value(object).unwrap_or_else(|error| panic!("{error}"));
        server
            .upsert(&object)
            .unwrap_or_else(|error| panic!("{error}"));
    }

    fn pods(server: &TestApiServer) -> Vec<(String, String)> {
        let mut pods: Vec<(String, String)> = server
            .list_typed::<Pod>()
            .into_iter()
            .map(|pod| {
                (
                    pod.metadata.name.unwrap_or_default(),
                    pod.status
                        .and_then(|status| status.phase)
                        .unwrap_or_default(),
                )
            })
            .collect();
        pods.sort();
        pods
    }

    #[test]
    fn a_deployment_gets_its_replicas_ready_and_a_new_template_replaces_them() {
        let server = server();
        let deployment = |image: &str| {
            let mut template = template(json!({}));
            template["spec"]["containers"][0]["image"] = json!(image);
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": NAMESPACE},
                "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": template}
            })
        };
        store::<Deployment>(&server, deployment("web:1"));
        assert!(step_deployments((&server, NAMESPACE)));
        let first = pods(&server);
        assert_eq!(first.len(), 2, "{first:?}");
        assert!(first.iter().all(|(_, phase)| phase == "Running"));
        let status = server
            .get_typed::<Deployment>(NAMESPACE, "web")
            .and_then(|deployment| deployment.status)
            .unwrap_or_default();
        assert_eq!(status.ready_replicas, Some(2));
        assert!(
            !step_deployments((&server, NAMESPACE)),
            "a settled Deployment stays put"
        );

        store::<Deployment>(&server, deployment("web:2"));
        step_deployments((&server, NAMESPACE));
        let second = pods(&server);
        assert_eq!(second.len(), 2);
        assert!(second.iter().all(|pod| !first.contains(pod)), "{second:?}");
    }

    #[test]
    fn deployments_whose_names_share_a_prefix_keep_their_own_pods() {
        let server = server();
        for name in ["web", "web-x"] {
            store::<Deployment>(
                &server,
                json!({
                    "apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": name, "namespace": NAMESPACE},
                    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                             "template": template(json!({}))}
                }),
            );
        }
        step_deployments((&server, NAMESPACE));
        let first = pods(&server);
        assert_eq!(first.len(), 2, "{first:?}");
        assert!(
            !step_deployments((&server, NAMESPACE)),
            "no pass deletes another's pods"
        );
        assert_eq!(pods(&server), first);
    }

    #[test]
    fn a_daemon_set_runs_one_pod_and_a_failing_template_is_not_ready() {
        let server = server();
        store::<DaemonSet>(
            &server,
            json!({
                "apiVersion": "apps/v1", "kind": "DaemonSet",
                "metadata": {"name": "agent", "namespace": NAMESPACE},
                "spec": {"selector": {"matchLabels": {"app": "web"}},
                         "template": template(json!({super::super::SIMULATED_FAILURE_ANNOTATION: "ImagePullBackOff"}))}
            }),
        );
        step_daemon_sets((&server, NAMESPACE));
        assert_eq!(pods(&server).len(), 1);
        let status = server
            .get_typed::<DaemonSet>(NAMESPACE, "agent")
            .and_then(|daemon_set| daemon_set.status)
            .unwrap_or_default();
        assert_eq!(
            (status.desired_number_scheduled, status.number_ready),
            (1, 0)
        );
    }

    #[test]
    fn jobs_complete_or_fail_once() {
        let server = server();
        for (name, annotations) in [
            ("migrate", json!({})),
            (
                "broken",
                json!({super::super::SIMULATED_FAILURE_ANNOTATION: "Error"}),
            ),
        ] {
            store::<Job>(
                &server,
                json!({
                    "apiVersion": "batch/v1", "kind": "Job",
                    "metadata": {"name": name, "namespace": NAMESPACE},
                    "spec": {"completions": 2, "template": template(annotations)}
                }),
            );
        }
        assert!(step_jobs((&server, NAMESPACE)));
        assert!(
            !step_jobs((&server, NAMESPACE)),
            "finished Jobs are left alone"
        );
        let condition = |name: &str| {
            server
                .get_typed::<Job>(NAMESPACE, name)
                .and_then(|job| job.status)
                .and_then(|status| status.conditions)
                .unwrap_or_default()
                .into_iter()
                .filter(|condition| condition.status == "True")
                .map(|condition| condition.type_)
                .collect::<Vec<_>>()
        };
        assert!(condition("migrate").contains(&"Complete".to_owned()));
        assert!(condition("broken").contains(&"Failed".to_owned()));
        assert_eq!(
            pods(&server),
            [
                ("broken-0".to_owned(), "Failed".to_owned()),
                ("broken-1".to_owned(), "Failed".to_owned()),
                ("migrate-0".to_owned(), "Succeeded".to_owned()),
                ("migrate-1".to_owned(), "Succeeded".to_owned()),
            ]
        );
    }
}
