//! The StatefulSet of a role group.

use std::collections::BTreeMap;

use k8s_openapi::DeepMerge;
use k8s_openapi::api::apps::v1::{
    StatefulSet, StatefulSetPersistentVolumeClaimRetentionPolicy, StatefulSetSpec,
    StatefulSetUpdateStrategy,
};
use k8s_openapi::api::core::v1::{
    Affinity, ConfigMapVolumeSource, EmptyDirVolumeSource, PersistentVolumeClaim,
    PersistentVolumeClaimSpec, PodAffinityTerm, PodAntiAffinity, PodSecurityContext, PodSpec,
    PodTemplateSpec, SeccompProfile, Volume, VolumeResourceRequirements, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use super::container::{
    CONFIG_VOLUME, DATA_VOLUME, LOG_VOLUME, TMP_VOLUME, myid_container, zookeeper_container,
};
use super::metadata;
use crate::validate::{ValidatedCluster, ValidatedRoleGroup};

/// Pod template annotation holding the hash of the role group's ConfigMap.
pub const CONFIG_HASH_ANNOTATION: &str = "strata.dev/config-hash";
/// uid and gid of the `zookeeper` user in the official image. The image names its user
/// but sets no numeric `USER`, so `runAsNonRoot` needs the number spelled out.
pub const ZOOKEEPER_UID: i64 = 1000;
/// Size limit of each scratch volume (`/tmp`, `/logs`); both hold only small files
/// because logs go to the console.
pub const SCRATCH_SIZE_LIMIT: &str = "64Mi";

/// `<cluster>-server-<group>`: Pods `<name>-<ordinal>` with `myid = myidOffset + ordinal`.
///
/// - `podManagementPolicy: Parallel`: a fresh ensemble needs a quorum before any server
///   becomes ready, so starting Pods one at a time (waiting for readiness) would never
///   get past the first Pod. Rolling updates still replace one Pod at a time.
/// - The `data` claim template is kept when the StatefulSet is scaled down or deleted
///   (retention policy `Retain`): data is never deleted by the operator.
/// - `podOverrides` are merged over the generated template last, so they win.
pub fn stateful_set(
    cluster: &ValidatedCluster,
    group: &ValidatedRoleGroup,
    config_hash: &str,
) -> StatefulSet {
    let name = group.name.object_name();
    StatefulSet {
        metadata: metadata(name, &cluster.namespace, group.labels.labels()),
        spec: StatefulSetSpec {
            replicas: Some(i32::from(group.replicas)),
            selector: LabelSelector {
                match_labels: Some(group.labels.selector()),
                match_expressions: None,
            },
            service_name: Some(name.to_owned()),
            pod_management_policy: Some("Parallel".to_owned()),
            update_strategy: Some(StatefulSetUpdateStrategy {
                type_: Some("RollingUpdate".to_owned()),
                rolling_update: None,
            }),
            persistent_volume_claim_retention_policy: Some(
                StatefulSetPersistentVolumeClaimRetentionPolicy {
                    when_deleted: Some("Retain".to_owned()),
                    when_scaled: Some("Retain".to_owned()),
                },
            ),
            template: pod_template(cluster, group, config_hash),
            volume_claim_templates: Some(vec![data_claim(group)]),
            ..StatefulSetSpec::default()
        },
        status: None,
    }
}

fn pod_template(
    cluster: &ValidatedCluster,
    group: &ValidatedRoleGroup,
    config_hash: &str,
) -> PodTemplateSpec {
    let mut template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(group.labels.labels()),
            annotations: Some(BTreeMap::from([(
                CONFIG_HASH_ANNOTATION.to_owned(),
                config_hash.to_owned(),
            )])),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            init_containers: Some(vec![myid_container(cluster, group)]),
            containers: vec![zookeeper_container(cluster, group)],
            volumes: Some(volumes(group)),
            security_context: Some(pod_security_context()),
            termination_grace_period_seconds: Some(group.termination_grace_period_seconds),
            image_pull_secrets: cluster.image.pull_secrets.clone(),
            affinity: Some(spread_servers(cluster)),
            enable_service_links: Some(false),
            ..PodSpec::default()
        }),
    };
    template.merge_from(group.pod_overrides.clone());
    template
}

/// Runs as the image's `zookeeper` user; `fsGroup` makes the data volume writable for it,
/// changing ownership only when the volume's root does not match yet (fast restarts on
/// large volumes).
fn pod_security_context() -> PodSecurityContext {
    PodSecurityContext {
        run_as_user: Some(ZOOKEEPER_UID),
        run_as_group: Some(ZOOKEEPER_UID),
        fs_group: Some(ZOOKEEPER_UID),
        fs_group_change_policy: Some("OnRootMismatch".to_owned()),
        run_as_non_root: Some(true),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".to_owned(),
            localhost_profile: None,
        }),
        ..PodSecurityContext::default()
    }
}

/// Prefers to place servers of this cluster on different nodes, so losing a node costs
/// the quorum at most one voter where the cluster has room. Preferred, not required, so
/// small clusters (fewer nodes than servers) still schedule.
fn spread_servers(cluster: &ValidatedCluster) -> Affinity {
    Affinity {
        pod_anti_affinity: Some(PodAntiAffinity {
            preferred_during_scheduling_ignored_during_execution: Some(vec![
                WeightedPodAffinityTerm {
                    weight: 70,
                    pod_affinity_term: PodAffinityTerm {
                        label_selector: Some(LabelSelector {
                            match_labels: Some(cluster.role_labels.selector()),
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

fn volumes(group: &ValidatedRoleGroup) -> Vec<Volume> {
    let scratch = |name: &str| Volume {
        name: name.to_owned(),
        empty_dir: Some(EmptyDirVolumeSource {
            size_limit: Some(Quantity(SCRATCH_SIZE_LIMIT.to_owned())),
            ..EmptyDirVolumeSource::default()
        }),
        ..Volume::default()
    };
    vec![
        Volume {
            name: CONFIG_VOLUME.to_owned(),
            config_map: Some(ConfigMapVolumeSource {
                name: group.name.object_name().to_owned(),
                ..ConfigMapVolumeSource::default()
            }),
            ..Volume::default()
        },
        scratch(TMP_VOLUME),
        scratch(LOG_VOLUME),
    ]
}

fn data_claim(group: &ValidatedRoleGroup) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(DATA_VOLUME.to_owned()),
            labels: Some(group.labels.selector()),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".to_owned()]),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_owned(),
                    group.resources.storage_capacity.clone(),
                )])),
                limits: None,
            }),
            storage_class_name: group.resources.storage_class.clone(),
            ..PersistentVolumeClaimSpec::default()
        }),
        status: None,
    }
}
