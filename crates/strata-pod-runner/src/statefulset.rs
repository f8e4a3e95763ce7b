//! The pods a StatefulSet's controller would create, for running rendered manifests
//! without a control plane: `<set>-<ordinal>`, with the set's `serviceName` as
//! subdomain, the `statefulset.kubernetes.io/pod-name` label, and each claim template
//! as the claim `<template>-<set>-<ordinal>`, as the real controller names them.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolumeClaimVolumeSource, Pod, Volume};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The label the StatefulSet controller puts on each pod.
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";

/// The pod with `ordinal` of `set`.
pub fn pod(set: &StatefulSet, ordinal: u32) -> Pod {
    let set_name = set.metadata.name.clone().unwrap_or_default();
    let name = format!("{set_name}-{ordinal}");
    let spec = set.spec.clone();
    let template = spec.template;
    let mut labels: BTreeMap<String, String> = template
        .metadata
        .as_ref()
        .and_then(|metadata| metadata.labels.clone())
        .unwrap_or_default();
    labels.insert(POD_NAME_LABEL.to_owned(), name.clone());
    labels.insert(
        "apps.kubernetes.io/pod-index".to_owned(),
        ordinal.to_string(),
    );
    let mut pod_spec = template.spec.unwrap_or_default();
    pod_spec.hostname = Some(name.clone());
    pod_spec.subdomain =
        Some(spec.service_name.clone().unwrap_or_default()).filter(|service| !service.is_empty());
    for claim in spec.volume_claim_templates.iter().flatten() {
        let template_name = claim.metadata.name.clone().unwrap_or_default();
        let volume = Volume {
            name: template_name.clone(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: format!("{template_name}-{name}"),
                read_only: None,
            }),
            ..Volume::default()
        };
        let volumes = pod_spec.volumes.get_or_insert_with(Vec::new);
        volumes.retain(|existing| existing.name != template_name);
        volumes.push(volume);
    }
    Pod {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: set.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: template.metadata.and_then(|metadata| metadata.annotations),
            ..ObjectMeta::default()
        },
        spec: Some(pod_spec),
        status: None,
    }
}

/// Every pod of `set`, for its `replicas` (1 when unset).
pub fn pods(set: &StatefulSet) -> Vec<Pod> {
    let replicas = set.spec.replicas.unwrap_or(1);
    (0..u32::try_from(replicas).unwrap_or(0))
        .map(|ordinal| pod(set, ordinal))
        .collect()
}
