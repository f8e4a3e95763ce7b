//! The StatefulSet of a role group and its volume claim templates.

use std::collections::BTreeMap;

use k8s_openapi::DeepMerge;
use k8s_openapi::api::apps::v1::{
    StatefulSet, StatefulSetPersistentVolumeClaimRetentionPolicy, StatefulSetSpec,
    StatefulSetUpdateStrategy,
};
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimSpec, PodSpec, PodTemplateSpec,
    VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use super::meta::CONFIG_HASH_ANNOTATION;
use crate::labels::RecommendedLabels;
use crate::resources::ValidatedPvc;

/// What makes one role group's StatefulSet; the rest is the same for every product.
#[derive(Clone, Debug)]
pub struct StatefulSetParts<'a> {
    /// The StatefulSet's, the headless Service's and the ConfigMap's name.
    pub name: &'a str,
    /// Its namespace.
    pub namespace: &'a str,
    /// The role group's labels; their selector picks its pods.
    pub labels: &'a RecommendedLabels,
    /// Replicas as the spec asks; a stopped cluster's are set to 0 by the apply step.
    pub replicas: u16,
    /// `Parallel` for quorum members, which must all start before any is ready;
    /// `OrderedReady` otherwise.
    pub parallel: bool,
    /// Who restarts pods after a template change.
    pub pod_updates: PodUpdates,
    /// The hash of the files the pods mount ([`super::config_hash`]).
    pub config_hash: &'a str,
    /// The pod spec the product built.
    pub pod: PodSpec,
    /// `podOverrides`, merged over the built template last.
    pub pod_overrides: &'a PodTemplateSpec,
    /// Volume claim templates ([`pvc_template`]).
    pub claims: Vec<PersistentVolumeClaim>,
}

/// Who restarts a StatefulSet's pods when its template changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodUpdates {
    /// The StatefulSet controller, one pod at a time from the highest
    /// ordinal, each once the previous one is Ready (`RollingUpdate`).
    Rolling,
    /// The operator, in the order and at the pace the product needs
    /// (`OnDelete`; see `strata_operator::roll`).
    ByOperator,
}

/// The StatefulSet of `parts`.
///
/// - Rolling updates replace one pod at a time, by the StatefulSet controller
///   or by the operator ([`PodUpdates`]).
/// - Claims are kept when the StatefulSet is scaled down or deleted (retention
///   `Retain`): data is never deleted by the operator.
/// - The pod template carries the config hash, so a changed file rolls the pods.
/// - Pods get no service account token and no service-link variables unless
///   the product's pod spec asks for them: product processes never call the
///   Kubernetes API, and a token they do not need is one an exploit can use;
///   service links add a variable per Service in the namespace.
/// - `podOverrides` are merged last, so they win.
pub fn stateful_set(parts: StatefulSetParts<'_>) -> StatefulSet {
    let mut pod = parts.pod;
    pod.automount_service_account_token.get_or_insert(false);
    pod.enable_service_links.get_or_insert(false);
    let mut template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(parts.labels.labels()),
            annotations: Some(BTreeMap::from([(
                CONFIG_HASH_ANNOTATION.to_owned(),
                parts.config_hash.to_owned(),
            )])),
            ..ObjectMeta::default()
        }),
        spec: Some(pod),
    };
    template.merge_from(parts.pod_overrides.clone());
    StatefulSet {
        metadata: super::object_meta(parts.name, parts.namespace, parts.labels.labels()),
        spec: StatefulSetSpec {
            replicas: Some(i32::from(parts.replicas)),
            selector: LabelSelector {
                match_labels: Some(parts.labels.selector()),
                match_expressions: None,
            },
            service_name: Some(parts.name.to_owned()),
            pod_management_policy: Some(
                if parts.parallel {
                    "Parallel"
                } else {
                    "OrderedReady"
                }
                .to_owned(),
            ),
            update_strategy: Some(StatefulSetUpdateStrategy {
                type_: Some(
                    match parts.pod_updates {
                        PodUpdates::Rolling => "RollingUpdate",
                        PodUpdates::ByOperator => "OnDelete",
                    }
                    .to_owned(),
                ),
                rolling_update: None,
            }),
            persistent_volume_claim_retention_policy: Some(
                StatefulSetPersistentVolumeClaimRetentionPolicy {
                    when_deleted: Some("Retain".to_owned()),
                    when_scaled: Some("Retain".to_owned()),
                },
            ),
            template,
            volume_claim_templates: (!parts.claims.is_empty()).then_some(parts.claims),
            ..StatefulSetSpec::default()
        },
        status: None,
    }
}

/// A `ReadWriteOnce` claim template `name` of the validated size and class, labelled
/// with `selector` so the claims of a role group can be found.
pub fn pvc_template(
    name: &str,
    selector: BTreeMap<String, String>,
    pvc: &ValidatedPvc,
) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(selector),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".to_owned()]),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_owned(),
                    pvc.capacity.clone(),
                )])),
                limits: None,
            }),
            storage_class_name: pvc.storage_class.clone(),
            ..PersistentVolumeClaimSpec::default()
        }),
        status: None,
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn built(pod: PodSpec, overrides: &PodTemplateSpec) -> PodSpec {
        let labels = RecommendedLabels::new("zookeeper", "zk", "zookeeper-operator", "3.9.5")
            .and_then(|labels| labels.for_role_group("server", "default"))
            .expect("labels");
        stateful_set(StatefulSetParts {
            name: "zk-server-default",
            namespace: "default",
            labels: &labels,
            replicas: 3,
            parallel: true,
            pod_updates: PodUpdates::Rolling,
            config_hash: "hash",
            pod,
            pod_overrides: overrides,
            claims: Vec::new(),
        })
        .spec
        .template
        .spec
        .expect("a pod spec")
    }

    #[rstest]
    #[case::product_says_nothing(None, None, Some(false))]
    #[case::product_needs_the_api(Some(true), None, Some(true))]
    #[case::user_override_wins(None, Some(true), Some(true))]
    fn pods_get_no_service_account_token_unless_asked(
        #[case] product: Option<bool>,
        #[case] user: Option<bool>,
        #[case] expected: Option<bool>,
    ) {
        let pod = PodSpec {
            automount_service_account_token: product,
            ..PodSpec::default()
        };
        let overrides = PodTemplateSpec {
            spec: Some(PodSpec {
                automount_service_account_token: user,
                ..PodSpec::default()
            }),
            ..PodTemplateSpec::default()
        };
        let spec = built(pod, &overrides);
        assert_eq!(spec.automount_service_account_token, expected);
        assert_eq!(spec.enable_service_links, Some(false));
    }
}
