//! What the StatefulSet controller, the kubelet and the volume provisioner would do:
//! StatefulSet status, Pods and PersistentVolumeClaims, created directly in the store.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateWaiting, ContainerStatus, PersistentVolumeClaim, Pod, PodSpec,
    PodStatus,
};
use kube::api::ObjectMeta;
use strata_operator::labels::VERSION_LABEL;
use zookeeper_operator::build::container::ZOOKEEPER_CONTAINER;

use super::{Harness, stored};

/// Sets a StatefulSet's status as its controller reports a settled rollout of the current
/// generation: `replicas` Pods, `ready` of them ready and available.
pub fn set_stateful_set_status(harness: &Harness, name: &str, replicas: i32, ready: i32) {
    let generation = stored::<StatefulSet>(harness, name)
        .metadata
        .generation
        .expect("a stored StatefulSet has a generation");
    harness
        .server
        .patch_status_direct::<StatefulSet>(
            harness.namespace,
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
        .expect("the StatefulSet status is set");
}

/// How the kubelet reports one Pod.
#[derive(Clone, Copy, Debug)]
pub struct PodState<'a> {
    /// `Running`, `Pending`, `Failed`, `Unknown`.
    pub phase: &'a str,
    /// A waiting reason of the ZooKeeper container, such as `CrashLoopBackOff`.
    pub waiting: Option<&'a str>,
    /// Replaces the `app.kubernetes.io/version` label of the Pod template, as Pods
    /// created from an older template still carry the old one.
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
pub fn pod_template_labels(harness: &Harness, stateful_set: &str) -> BTreeMap<String, String> {
    stored::<StatefulSet>(harness, stateful_set)
        .spec
        .and_then(|spec| spec.template.metadata)
        .and_then(|metadata| metadata.labels)
        .expect("the Pod template has labels")
}

/// Creates or replaces Pod `<stateful_set>-<ordinal>` with the template's labels.
pub fn set_pod(harness: &Harness, stateful_set: &str, ordinal: u16, state: PodState<'_>) {
    let mut labels = pod_template_labels(harness, stateful_set);
    if let Some(version) = state.version {
        labels.insert(VERSION_LABEL.to_owned(), version.to_owned());
    }
    let container_statuses = state.waiting.map(|reason| {
        vec![ContainerStatus {
            name: ZOOKEEPER_CONTAINER.to_owned(),
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
    harness
        .server
        .upsert(&Pod {
            metadata: ObjectMeta {
                name: Some(format!("{stateful_set}-{ordinal}")),
                namespace: Some(harness.namespace.to_owned()),
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
        .expect("the Pod is stored");
}

/// A role group whose `replicas` Pods all run and are ready.
pub fn run_group(harness: &Harness, stateful_set: &str, replicas: u16) {
    for ordinal in 0..replicas {
        set_pod(harness, stateful_set, ordinal, PodState::RUNNING);
    }
    let replicas = i32::from(replicas);
    set_stateful_set_status(harness, stateful_set, replicas, replicas);
}

/// Creates the claims the StatefulSet controller makes from each claim template:
/// `<template>-<stateful_set>-<ordinal>`, labelled as the template says, without an
/// owner reference (retention policy `Retain`).
pub fn create_claims(harness: &Harness, stateful_set: &str, replicas: u16) -> Vec<String> {
    let spec = stored::<StatefulSet>(harness, stateful_set)
        .spec
        .expect("the StatefulSet has a spec");
    let templates = spec
        .volume_claim_templates
        .expect("the StatefulSet has claim templates");
    let mut names = Vec::new();
    for template in &templates {
        for ordinal in 0..replicas {
            let name = format!(
                "{}-{stateful_set}-{ordinal}",
                template.metadata.name.as_deref().unwrap_or_default()
            );
            harness
                .server
                .upsert(&PersistentVolumeClaim {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        namespace: Some(harness.namespace.to_owned()),
                        labels: template.metadata.labels.clone(),
                        ..ObjectMeta::default()
                    },
                    spec: template.spec.clone(),
                    status: None,
                })
                .expect("the claim is stored");
            names.push(name);
        }
    }
    names
}

/// Names of the claims still stored in the test namespace.
pub fn stored_claims(harness: &Harness) -> Vec<String> {
    super::stored_names::<PersistentVolumeClaim>(harness)
        .into_iter()
        .collect()
}
