//! Pod-level parts: the security context, scratch and config volumes, spreading.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, ConfigMapVolumeSource, EmptyDirVolumeSource, PodAffinityTerm, PodAntiAffinity,
    PodSecurityContext, SeccompProfile, SecretVolumeSource, Volume, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Runs the pod as `uid` (and group `uid`); `fsGroup` makes volumes writable for it,
/// changing ownership only when a volume's root does not match yet (fast restarts on
/// large volumes); the runtime's default seccomp profile.
///
/// Upstream images often name their user without a numeric `USER`, so `runAsNonRoot`
/// needs the number spelled out.
pub fn pod_security_context(uid: i64) -> PodSecurityContext {
    pod_security_context_as(uid, uid)
}

/// [`pod_security_context`] for images whose user's primary group is not its uid
/// (the `hadoop` user of `apache/hadoop` 3.4 is uid 1000 in group 100).
pub fn pod_security_context_as(uid: i64, gid: i64) -> PodSecurityContext {
    PodSecurityContext {
        run_as_user: Some(uid),
        run_as_group: Some(gid),
        fs_group: Some(gid),
        fs_group_change_policy: Some("OnRootMismatch".to_owned()),
        run_as_non_root: Some(true),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".to_owned(),
            localhost_profile: None,
        }),
        ..PodSecurityContext::default()
    }
}

/// A writable `emptyDir` of at most `size_limit`, for the paths a read-only root
/// filesystem leaves a product without (`/tmp`, log directories).
pub fn scratch_volume(name: &str, size_limit: &str) -> Volume {
    Volume {
        name: name.to_owned(),
        empty_dir: Some(EmptyDirVolumeSource {
            size_limit: Some(Quantity(size_limit.to_owned())),
            ..EmptyDirVolumeSource::default()
        }),
        ..Volume::default()
    }
}

/// The Secret `secret` as the volume `name`, its files readable by their owner and the
/// pod's group (`fsGroup`) alone (0440).
pub fn secret_volume(name: &str, secret: &str) -> Volume {
    Volume {
        name: name.to_owned(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(secret.to_owned()),
            default_mode: Some(0o440),
            ..SecretVolumeSource::default()
        }),
        ..Volume::default()
    }
}

/// An in-memory scratch volume, for files that must never reach a disk (a keystore
/// built from a Secret).
pub fn memory_volume(name: &str, size_limit: &str) -> Volume {
    Volume {
        name: name.to_owned(),
        empty_dir: Some(EmptyDirVolumeSource {
            medium: Some("Memory".to_owned()),
            size_limit: Some(Quantity(size_limit.to_owned())),
            ..EmptyDirVolumeSource::default()
        }),
        ..Volume::default()
    }
}

/// The ConfigMap `config_map` as the volume `name`.
pub fn config_map_volume(name: &str, config_map: &str) -> Volume {
    Volume {
        name: name.to_owned(),
        config_map: Some(ConfigMapVolumeSource {
            name: config_map.to_owned(),
            ..ConfigMapVolumeSource::default()
        }),
        ..Volume::default()
    }
}

/// Prefers to place the pods `selector` picks on different nodes, so losing a node
/// costs at most one of them where the cluster has room. Preferred, not required, so
/// small clusters (fewer nodes than pods) still schedule.
pub fn preferred_spread(selector: BTreeMap<String, String>) -> Affinity {
    Affinity {
        pod_anti_affinity: Some(PodAntiAffinity {
            preferred_during_scheduling_ignored_during_execution: Some(vec![
                WeightedPodAffinityTerm {
                    weight: 70,
                    pod_affinity_term: PodAffinityTerm {
                        label_selector: Some(LabelSelector {
                            match_labels: Some(selector),
                            match_expressions: None,
                        }),
                        topology_key: "kubernetes.io/hostname".to_owned(),
                        ..PodAffinityTerm::default()
                    },
                },
            ]),
            required_during_scheduling_ignored_during_execution: None,
        }),
        ..Affinity::default()
    }
}
