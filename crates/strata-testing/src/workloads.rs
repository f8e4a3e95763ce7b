//! What Kubernetes' own controllers would do, for tests against the in-memory
//! API, which runs none: the StatefulSet controller's status, the kubelet's
//! Pods and the claims made from claim templates, written directly to the
//! store (not counted as the operator's requests).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateWaiting, ContainerStatus,
    PersistentVolumeClaim, Pod, PodSpec, PodStatus, PodTemplateSpec,
};
use kube::api::ObjectMeta;

use strata_model::build::config_hash;
use strata_model::labels::VERSION_LABEL;
use strata_operator::roll::REVISION_LABEL;
use strata_test_apiserver::TestApiServer;

use crate::Harness;

/// Where the simulated controllers act: an API and a namespace. A [`Harness`]
/// is one; so is a `(&TestApiServer, namespace)` pair, for an operator that
/// runs in another process.
#[derive(Clone, Copy, Debug)]
pub struct Place<'a> {
    server: &'a TestApiServer,
    namespace: &'a str,
}

impl<'a> From<&'a Harness> for Place<'a> {
    fn from(harness: &'a Harness) -> Self {
        Self {
            server: &harness.server,
            namespace: harness.namespace,
        }
    }
}

impl<'a> From<(&'a TestApiServer, &'a str)> for Place<'a> {
    fn from((server, namespace): (&'a TestApiServer, &'a str)) -> Self {
        Self { server, namespace }
    }
}

fn stored_stateful_set(place: Place<'_>, name: &str) -> StatefulSet {
    place
        .server
        .get_typed::<StatefulSet>(place.namespace, name)
        .unwrap_or_else(|| panic!("StatefulSet {name} exists"))
}

/// The revision name the StatefulSet controller gives the current template:
/// `<statefulset>-<hash of the template>`, so a changed template is a new
/// revision and pods created before the change keep the old one.
pub fn template_revision(stateful_set: &StatefulSet) -> String {
    let template = serde_json::to_string(&stateful_set.spec.template).unwrap_or_default();
    let hash = config_hash(&BTreeMap::from([("template".to_owned(), template)]));
    format!(
        "{}-{}",
        stateful_set.metadata.name.as_deref().unwrap_or_default(),
        hash.get(..10).unwrap_or(&hash)
    )
}

/// Sets a StatefulSet's status as its controller reports a settled rollout of
/// the current generation: `replicas` Pods, `ready` of them ready and
/// available, the current template as the update revision.
pub fn set_stateful_set_status<'a>(
    place: impl Into<Place<'a>>,
    name: &str,
    replicas: i32,
    ready: i32,
) {
    let place = place.into();
    stored_stateful_set(place, name);
    assert!(
        write_stateful_set_status(place, name, replicas, ready),
        "the status of StatefulSet {name} is set"
    );
}

/// [`set_stateful_set_status`] for the running simulation, where a user may delete
/// the StatefulSet at any moment: false when it is gone.
fn write_stateful_set_status(place: Place<'_>, name: &str, replicas: i32, ready: i32) -> bool {
    let Some(stored) = place.server.get_typed::<StatefulSet>(place.namespace, name) else {
        return false;
    };
    let generation = stored.metadata.generation.unwrap_or(1);
    let revision = template_revision(&stored);
    place
        .server
        .patch_status_direct::<StatefulSet>(
            place.namespace,
            name,
            serde_json::json!({
                "observedGeneration": generation,
                "replicas": replicas,
                "readyReplicas": ready,
                "availableReplicas": ready,
                "updatedReplicas": replicas,
                "currentRevision": revision,
                "updateRevision": revision,
            }),
        )
        .is_ok()
}

/// How the kubelet reports one Pod.
#[derive(Clone, Copy, Debug)]
pub struct PodState<'a> {
    /// `Running`, `Pending`, `Failed` or `Unknown`.
    pub phase: &'a str,
    /// A waiting reason of the Pod's first container, such as `CrashLoopBackOff`.
    pub waiting: Option<&'a str>,
    /// Replaces the `app.kubernetes.io/version` label of the Pod template, as
    /// Pods created from an older template still carry the old one.
    pub version: Option<&'a str>,
    /// Whether the readiness probe passes, for a Pod that runs.
    pub ready: bool,
}

impl PodState<'static> {
    /// A healthy Pod of the current template.
    pub const RUNNING: Self = Self {
        phase: "Running",
        waiting: None,
        version: None,
        ready: true,
    };

    /// A Pod whose container runs but whose readiness probe fails, such as a
    /// quorum member waiting for the others.
    pub const NOT_READY: Self = Self {
        ready: false,
        ..Self::RUNNING
    };
}

/// Creates or replaces Pod `<stateful_set>-<ordinal>` with the template's
/// labels, in `state`.
pub fn set_pod<'a>(
    place: impl Into<Place<'a>>,
    stateful_set: &str,
    ordinal: u16,
    state: PodState<'_>,
) {
    let place = place.into();
    store_pod(
        place,
        &stored_stateful_set(place, stateful_set),
        ordinal,
        state,
    );
}

/// Stores Pod `<stateful_set>-<ordinal>` from the template of `stateful_set` as
/// listed, so the simulation never reads a StatefulSet again that a user may have
/// deleted since.
fn store_pod(place: Place<'_>, stateful_set: &StatefulSet, ordinal: u16, state: PodState<'_>) {
    let name = stateful_set.metadata.name.as_deref().unwrap_or_default();
    store_template_pod(
        place,
        &format!("{name}-{ordinal}"),
        &stateful_set.spec.template,
        BTreeMap::from([(REVISION_LABEL.to_owned(), template_revision(stateful_set))]),
        state,
    );
}

/// Stores the Pod `pod_name` from `template`, with its labels, `extra_labels` and
/// annotations, as the kubelet reports it in `state`.
fn store_template_pod(
    place: Place<'_>,
    pod_name: &str,
    template: &PodTemplateSpec,
    extra_labels: BTreeMap<String, String>,
    state: PodState<'_>,
) {
    let container = template
        .spec
        .as_ref()
        .and_then(|spec| spec.containers.first())
        .map_or_else(|| "main".to_owned(), |container| container.name.clone());
    let mut labels = template
        .metadata
        .as_ref()
        .and_then(|metadata| metadata.labels.clone())
        .unwrap_or_default();
    if let Some(version) = state.version {
        labels.insert(VERSION_LABEL.to_owned(), version.to_owned());
    }
    labels.extend(extra_labels);
    let container_state = match state.waiting {
        Some(reason) => ContainerState {
            waiting: Some(ContainerStateWaiting {
                reason: Some(reason.to_owned()),
                ..ContainerStateWaiting::default()
            }),
            ..ContainerState::default()
        },
        None if state.phase == "Running" => ContainerState {
            running: Some(ContainerStateRunning::default()),
            ..ContainerState::default()
        },
        None => ContainerState::default(),
    };
    let container_statuses = Some(vec![ContainerStatus {
        name: container,
        ready: state.ready && state.waiting.is_none() && state.phase == "Running",
        state: Some(container_state),
        ..ContainerStatus::default()
    }]);
    place
        .server
        .upsert(&Pod {
            metadata: ObjectMeta {
                name: Some(pod_name.to_owned()),
                namespace: Some(place.namespace.to_owned()),
                labels: Some(labels),
                annotations: template
                    .metadata
                    .as_ref()
                    .and_then(|metadata| metadata.annotations.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec::default()),
            status: Some(PodStatus {
                phase: Some(state.phase.to_owned()),
                container_statuses,
                ..PodStatus::default()
            }),
        })
        .unwrap_or_else(|error| panic!("the Pod is stored: {error}"));
}

/// A StatefulSet whose `replicas` Pods all run and are ready.
pub fn run_group<'a>(place: impl Into<Place<'a>>, stateful_set: &str, replicas: u16) {
    let place = place.into();
    for ordinal in 0..replicas {
        set_pod(place, stateful_set, ordinal, PodState::RUNNING);
    }
    let replicas = i32::from(replicas);
    set_stateful_set_status(place, stateful_set, replicas, replicas);
}

/// Creates the claims the StatefulSet controller makes from each claim
/// template, `<template>-<stateful_set>-<ordinal>`, labelled as the template
/// says and without an owner reference (retention policy `Retain`).
pub fn create_claims<'a>(
    place: impl Into<Place<'a>>,
    stateful_set: &str,
    replicas: u16,
) -> Vec<String> {
    let place = place.into();
    let templates = stored_stateful_set(place, stateful_set)
        .spec
        .volume_claim_templates
        .unwrap_or_else(|| panic!("StatefulSet {stateful_set} has claim templates"));
    let mut names = Vec::new();
    for template in &templates {
        for ordinal in 0..replicas {
            names.push(store_claim(
                place,
                template,
                stateful_set,
                i32::from(ordinal),
            ));
        }
    }
    names
}

/// Stores the claim `<template>-<stateful_set>-<ordinal>`, labelled as the
/// template says and without an owner reference (retention policy `Retain`), and
/// returns its name.
fn store_claim(
    place: Place<'_>,
    template: &PersistentVolumeClaim,
    stateful_set: &str,
    ordinal: i32,
) -> String {
    let name = claim_name(template, stateful_set, ordinal);
    place
        .server
        .upsert(&PersistentVolumeClaim {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(place.namespace.to_owned()),
                labels: template.metadata.labels.clone(),
                ..ObjectMeta::default()
            },
            spec: template.spec.clone(),
            status: None,
        })
        .unwrap_or_else(|error| panic!("the claim is stored: {error}"));
    name
}

fn claim_name(template: &PersistentVolumeClaim, stateful_set: &str, ordinal: i32) -> String {
    format!(
        "{}-{stateful_set}-{ordinal}",
        template.metadata.name.as_deref().unwrap_or_default()
    )
}

/// What the StatefulSet controller and the volume provisioner do for claims: every
/// pod of every StatefulSet in the namespace gets its claims from the claim
/// templates, `<template>-<statefulset>-<ordinal>`, when they do not exist yet.
/// Claims are never deleted, as with retention `Retain`. Returns whether any was
/// created.
pub fn provision_claims<'a>(place: impl Into<Place<'a>>) -> bool {
    let place = place.into();
    let mut created = false;
    for stateful_set in place.server.list_typed::<StatefulSet>() {
        if stateful_set.metadata.namespace.as_deref() != Some(place.namespace) {
            continue;
        }
        let name = stateful_set.metadata.name.clone().unwrap_or_default();
        let replicas = stateful_set.spec.replicas.unwrap_or(1).max(0);
        for template in stateful_set.spec.volume_claim_templates.iter().flatten() {
            for ordinal in 0..replicas {
                let claim = claim_name(template, &name, ordinal);
                if place
                    .server
                    .get_typed::<PersistentVolumeClaim>(place.namespace, &claim)
                    .is_none()
                {
                    store_claim(place, template, &name, ordinal);
                    created = true;
                }
            }
        }
    }
    created
}

/// A pod template annotation that makes [`step_stateful_sets`] create the pods
/// failing: their container waits with the annotation's value as its reason, such
/// as `CrashLoopBackOff` or `ImagePullBackOff`, and they never get ready. Set it
/// through a cluster's `podOverrides` to see Degraded in the sandbox.
pub const SIMULATED_FAILURE_ANNOTATION: &str = "sandbox.strata.dev/simulate-failure";

/// The waiting reason [`SIMULATED_FAILURE_ANNOTATION`] asks for, if any.
fn simulated_failure(stateful_set: &StatefulSet) -> Option<String> {
    template_failure(&stateful_set.spec.template)
}

/// The [`SIMULATED_FAILURE_ANNOTATION`] of a Pod template.
fn template_failure(template: &PodTemplateSpec) -> Option<String> {
    template
        .metadata
        .as_ref()?
        .annotations
        .as_ref()?
        .get(SIMULATED_FAILURE_ANNOTATION)
        .cloned()
}

/// One pass of what the StatefulSet controller and the kubelets do for every
/// StatefulSet in the namespace: pods missing below `spec.replicas` are
/// created from the current template and run ready (or fail, with
/// [`SIMULATED_FAILURE_ANNOTATION`]), pods at or above it are
/// removed (highest ordinal first, all in one pass), and the status reports
/// the current generation and template. With the `OnDelete` strategy, pods that
/// exist keep their template revision; with `RollingUpdate` (the default) one
/// outdated pod is replaced per pass, as the StatefulSet controller picks it.
/// Returns whether anything
/// changed, so a test can repeat passes until the operator stops moving.
pub fn step_stateful_sets<'a>(place: impl Into<Place<'a>>) -> bool {
    let place = place.into();
    let mut changed = false;
    let stateful_sets: Vec<StatefulSet> = place
        .server
        .list_typed::<StatefulSet>()
        .into_iter()
        .filter(|stateful_set| stateful_set.metadata.namespace.as_deref() == Some(place.namespace))
        .collect();
    let pods: Vec<Pod> = place.server.list_typed::<Pod>();
    for stateful_set in stateful_sets {
        let name = stateful_set.metadata.name.clone().unwrap_or_default();
        let replicas = stateful_set.spec.replicas.unwrap_or(1).max(0);
        let prefix = format!("{name}-");
        let mut existing = Vec::new();
        for pod in &pods {
            let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
            let Some(ordinal) = pod_name
                .strip_prefix(&prefix)
                .and_then(|ordinal| ordinal.parse::<i32>().ok())
            else {
                continue;
            };
            if pod.metadata.namespace.as_deref() != Some(place.namespace) {
                continue;
            }
            if ordinal >= replicas {
                // An error means the pod is gone already (the garbage collector
                // took it with its StatefulSet).
                changed |= place
                    .server
                    .delete_direct::<Pod>(place.namespace, pod_name)
                    .is_ok();
            } else {
                existing.push(ordinal);
            }
        }
        if strata_operator::roll::rolls_by_itself(&stateful_set)
            && let Some(ordinal) = next_rolling_replacement(place, &stateful_set, &existing)
        {
            // The StatefulSet controller replaces one outdated pod per pass.
            let pod_name = format!("{prefix}{ordinal}");
            changed |= place
                .server
                .delete_direct::<Pod>(place.namespace, &pod_name)
                .is_ok();
            existing.retain(|existing| *existing != ordinal);
        }
        let failure = simulated_failure(&stateful_set);
        for ordinal in 0..replicas {
            if !existing.contains(&ordinal) {
                let ordinal = u16::try_from(ordinal).unwrap_or(u16::MAX);
                let state = match failure.as_deref() {
                    Some(reason) => PodState {
                        waiting: Some(reason),
                        ready: false,
                        ..PodState::RUNNING
                    },
                    None => PodState::RUNNING,
                };
                store_pod(place, &stateful_set, ordinal, state);
                changed = true;
            }
        }
        let observed = stateful_set
            .status
            .as_ref()
            .and_then(|status| status.observed_generation);
        let revision = stateful_set
            .status
            .as_ref()
            .and_then(|status| status.update_revision.clone());
        let current = template_revision(&stateful_set);
        let ready = stateful_set
            .status
            .as_ref()
            .and_then(|status| status.ready_replicas);
        let ready_now = ready_pods(place, &prefix, replicas);
        if observed != stateful_set.metadata.generation
            || revision.as_deref() != Some(current.as_str())
            || ready != Some(ready_now)
        {
            // A StatefulSet deleted since the listing is skipped, as the
            // real controller would.
            changed |= write_stateful_set_status(place, &name, replicas, ready_now);
        }
    }
    changed
}

/// The pod a rolling update replaces next, as the StatefulSet controller picks it.
///
/// With `OrderedReady` (the default) the controller first walks the pods in ordinal
/// order and stops at the first one that is not Running and Ready
/// (`updateStatefulSet`'s monotonic check), so no pod is replaced while any is
/// failing: a crash-looping pod of a bad template stays after the template is fixed,
/// until someone deletes it (kubernetes/kubernetes#67250). With `Parallel` it does
/// not stop there. Then, walking down from the highest ordinal, it replaces the first
/// pod on an older template (even a failing one), unless a pod above it that already
/// runs the current template is not Ready yet.
fn next_rolling_replacement(
    place: Place<'_>,
    stateful_set: &StatefulSet,
    existing: &[i32],
) -> Option<i32> {
    let name = stateful_set.metadata.name.clone().unwrap_or_default();
    let current = template_revision(stateful_set);
    let mut ordinals = existing.to_vec();
    ordinals.sort_unstable_by(|a, b| b.cmp(a));
    let pods: Vec<Pod> = ordinals
        .iter()
        .map(|ordinal| {
            place
                .server
                .get_typed::<Pod>(place.namespace, &format!("{name}-{ordinal}"))
        })
        .collect::<Option<_>>()?;
    let ordered_ready = stateful_set
        .spec
        .pod_management_policy
        .as_deref()
        .is_none_or(|policy| policy == "OrderedReady");
    if ordered_ready && !pods.iter().all(pod_ready) {
        return None;
    }
    for (ordinal, pod) in ordinals.into_iter().zip(pods) {
        let revision = pod
            .metadata
            .labels
            .as_ref()
            .and_then(|labels| labels.get(REVISION_LABEL));
        if revision != Some(&current) {
            return Some(ordinal);
        }
        if !pod_ready(&pod) {
            return None;
        }
    }
    None
}

/// Whether every container of `pod` is ready (the pod's Ready condition, as the
/// simulated kubelet sets no conditions).
fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|status| status.container_statuses.as_deref())
        .is_some_and(|containers| {
            !containers.is_empty() && containers.iter().all(|container| container.ready)
        })
}

/// How many pods `<prefix><ordinal>` below `replicas` have every container ready.
fn ready_pods(place: Place<'_>, prefix: &str, replicas: i32) -> i32 {
    let ready = place
        .server
        .list_typed::<Pod>()
        .into_iter()
        .filter(|pod| pod.metadata.namespace.as_deref() == Some(place.namespace))
        .filter(|pod| {
            pod.metadata
                .name
                .as_deref()
                .and_then(|name| name.strip_prefix(prefix))
                .and_then(|ordinal| ordinal.parse::<i32>().ok())
                .is_some_and(|ordinal| ordinal < replicas)
        })
        .filter(pod_ready)
        .count();
    i32::try_from(ready).unwrap_or(i32::MAX)
}

/// Lets the operator and the simulated StatefulSet controller
/// ([`step_stateful_sets`]) take turns until neither changes anything, calling
/// `after_each_pass` after every turn, so a test can record the steps an
/// operator-driven change goes through. Panics after 200 passes.
pub async fn run_until_settled(harness: &Harness, mut after_each_pass: impl FnMut()) {
    let mut quiet_passes = 0;
    for _ in 0..200 {
        harness.settle().await;
        after_each_pass();
        if step_stateful_sets(harness) {
            quiet_passes = 0;
        } else {
            quiet_passes += 1;
            if quiet_passes == 2 {
                return;
            }
        }
    }
    panic!("the operator and the StatefulSets did not settle in 200 passes");
}
