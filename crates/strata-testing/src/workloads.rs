//! What Kubernetes' own controllers would do, for tests against the in-memory
//! API, which runs none: the StatefulSet controller's status, the kubelet's
//! Pods and the claims made from claim templates, written directly to the
//! store (not counted as the operator's requests).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateWaiting, ContainerStatus, PersistentVolumeClaim, Pod, PodSpec,
    PodStatus,
};
use kube::api::ObjectMeta;

use strata_model::labels::VERSION_LABEL;
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

/// Sets a StatefulSet's status as its controller reports a settled rollout of
/// the current generation: `replicas` Pods, `ready` of them ready and
/// available.
pub fn set_stateful_set_status<'a>(
    place: impl Into<Place<'a>>,
    name: &str,
    replicas: i32,
    ready: i32,
) {
    let place = place.into();
    let generation = stored_stateful_set(place, name)
        .metadata
        .generation
        .unwrap_or(1);
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
                "currentRevision": format!("{name}-r1"),
                "updateRevision": format!("{name}-r1"),
            }),
        )
        .unwrap_or_else(|error| panic!("the status of StatefulSet {name} is set: {error}"));
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
}

impl PodState<'static> {
    /// A healthy Pod of the current template.
    pub const RUNNING: Self = Self {
        phase: "Running",
        waiting: None,
        version: None,
    };
}

/// The labels of a StatefulSet's Pod template, as its Pods get them.
pub fn pod_template_labels<'a>(
    place: impl Into<Place<'a>>,
    stateful_set: &str,
) -> BTreeMap<String, String> {
    let place = place.into();
    stored_stateful_set(place, stateful_set)
        .spec
        .template
        .metadata
        .and_then(|metadata| metadata.labels)
        .unwrap_or_else(|| panic!("the Pod template of StatefulSet {stateful_set} has labels"))
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
    let template = stored_stateful_set(place, stateful_set).spec.template;
    let container = template
        .spec
        .as_ref()
        .and_then(|spec| spec.containers.first())
        .map_or_else(|| "main".to_owned(), |container| container.name.clone());
    let mut labels = pod_template_labels(place, stateful_set);
    if let Some(version) = state.version {
        labels.insert(VERSION_LABEL.to_owned(), version.to_owned());
    }
    let container_statuses = state.waiting.map(|reason| {
        vec![ContainerStatus {
            name: container,
            state: Some(ContainerState {
                waiting: Some(ContainerStateWaiting {
                    reason: Some(reason.to_owned()),
                    ..ContainerStateWaiting::default()
                }),
                ..ContainerState::default()
            }),
            ..ContainerStatus::default()
        }]
    });
    place
        .server
        .upsert(&Pod {
            metadata: ObjectMeta {
                name: Some(format!("{stateful_set}-{ordinal}")),
                namespace: Some(place.namespace.to_owned()),
                labels: Some(labels),
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
            let name = format!(
                "{}-{stateful_set}-{ordinal}",
                template.metadata.name.as_deref().unwrap_or_default()
            );
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
            names.push(name);
        }
    }
    names
}
