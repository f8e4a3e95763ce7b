use k8s_openapi::api::core::v1::LocalObjectReference;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rstest::rstest;

use super::*;
use crate::identity::ClusterIdentity;
use crate::identity::tests::PRODUCT;
use crate::image::ProductImage;
use crate::resources::{CpuResources, MemoryResources, NoStorage};

const HEAP: HeapRule = HeapRule {
    heap_percent: 50,
    min_memory_mib: 256,
    non_heap_reserve_mib: 0,
};

#[derive(Clone, Debug, Default)]
struct ExampleConfig {
    resources: Resources<NoStorage>,
    graceful_shutdown_timeout: Option<String>,
}

crate::common_settings!(ExampleConfig, NoStorage);

/// A merged group as the product defaults leave it: 1Gi, `500m`–`1`, `2m`.
fn merged(name: &str) -> MergedRoleGroup<ExampleConfig, ()> {
    let quantity = |value: &str| Some(Quantity(value.to_owned()));
    MergedRoleGroup {
        name: name.to_owned(),
        replicas: 3,
        config: ExampleConfig {
            resources: Resources {
                cpu: CpuResources {
                    min: quantity("500m"),
                    max: quantity("1"),
                },
                memory: MemoryResources {
                    limit: quantity("1Gi"),
                },
                storage: NoStorage {},
            },
            graceful_shutdown_timeout: Some("2m".to_owned()),
        },
        config_overrides: (),
        env_overrides: [("JAVA_OPTS".to_owned(), "-Dx=y".to_owned())].into(),
        pod_overrides: PodTemplateSpec::default(),
    }
}

fn group_identity() -> ClusterIdentity {
    ClusterIdentity::new(
        PRODUCT,
        &ObjectMeta {
            name: Some("simple".to_owned()),
            namespace: Some("ns".to_owned()),
            ..ObjectMeta::default()
        },
        &ProductImage {
            pull_secrets: Some(vec![LocalObjectReference {
                name: "registry".to_owned(),
            }]),
            ..ProductImage::default()
        },
    )
    .expect("a valid cluster")
}

fn check(
    group: &MergedRoleGroup<ExampleConfig, ()>,
) -> Result<ValidatedRoleGroup<()>, CommonSettingsError> {
    let identity = group_identity();
    let role = identity.role("server").expect("a valid role");
    ValidatedRoleGroup::check(&identity, &role, "servers", group, HEAP)
}

#[test]
fn a_valid_group_keeps_the_merged_settings_and_derives_the_rest() {
    let group = check(&merged("default")).expect("valid");
    assert_eq!(group.field, "servers.roleGroups.default");
    assert_eq!(group.name.object_name(), "simple-server-default");
    assert_eq!(group.replicas, 3);
    assert_eq!(group.resources.heap_mib, 512);
    assert_eq!(group.termination_grace_period_seconds, 120);
    assert_eq!(group.env_overrides["JAVA_OPTS"], "-Dx=y");
    let with_product = group.with("files");
    assert_eq!(with_product.product, "files");
    assert_eq!(with_product.replicas(), 3);
}

#[rstest]
#[case::invalid_group_name(
    |group: &mut MergedRoleGroup<ExampleConfig, ()>| group.name = "Not_A_Label".to_owned(),
    "InvalidRoleGroupName",
    "Not_A_Label"
)]
#[case::unparsable_timeout(
    |group: &mut MergedRoleGroup<ExampleConfig, ()>| {
        group.config.graceful_shutdown_timeout = Some("soon".to_owned());
    },
    "InvalidGracefulShutdownTimeout",
    "servers.roleGroups.default: gracefulShutdownTimeout: "
)]
#[case::memory_below_the_product_minimum(
    |group: &mut MergedRoleGroup<ExampleConfig, ()>| {
        group.config.resources.memory.limit = Some(Quantity("128Mi".to_owned()));
    },
    "MemoryLimitTooLow",
    "servers.roleGroups.default: resources.memory.limit (128Mi) is below the minimum of 256Mi"
)]
#[case::cpu_request_above_its_limit(
    |group: &mut MergedRoleGroup<ExampleConfig, ()>| {
        group.config.resources.cpu.min = Some(Quantity("2".to_owned()));
    },
    "InvalidCpuRange",
    "servers.roleGroups.default: resources.cpu.min"
)]
#[case::defaults_without_a_timeout(
    |group: &mut MergedRoleGroup<ExampleConfig, ()>| group.config.graceful_shutdown_timeout = None,
    "MissingDefault",
    "gracefulShutdownTimeout has no value"
)]
fn refused_settings_name_the_reason_and_the_field(
    #[case] break_it: fn(&mut MergedRoleGroup<ExampleConfig, ()>),
    #[case] reason: &str,
    #[case] said: &str,
) {
    let mut group = merged("default");
    break_it(&mut group);
    let error = check(&group).expect_err("refused");
    assert_eq!(error.reason(), reason);
    let message = error.to_string();
    assert!(message.contains(said), "{message} does not say {said:?}");
}

#[test]
fn the_group_names_labels_sizes_and_overrides_its_stateful_set() {
    let mut merged = merged("default");
    merged.pod_overrides = serde_json::from_value(serde_json::json!({
        "spec": {"priorityClassName": "critical"}
    }))
    .expect("a pod template");
    let group = check(&merged).expect("valid");
    let identity = group_identity();
    let stateful_set = group.stateful_set(
        &identity,
        Workload {
            parallel: false,
            pod_updates: crate::build::PodUpdates::Rolling,
            config_hash: "abc",
            pod: k8s_openapi::api::core::v1::PodSpec {
                termination_grace_period_seconds: Some(1),
                ..Default::default()
            },
            claims: Vec::new(),
        },
    );
    assert_eq!(
        stateful_set.metadata.name.as_deref(),
        Some("simple-server-default")
    );
    assert_eq!(stateful_set.metadata.namespace.as_deref(), Some("ns"));
    let spec = stateful_set.spec;
    assert_eq!(spec.replicas, Some(3));
    assert_eq!(spec.selector.match_labels, Some(group.labels.selector()));
    let template_labels = spec
        .template
        .metadata
        .as_ref()
        .and_then(|metadata| metadata.labels.clone());
    assert_eq!(template_labels, Some(group.labels.labels()));
    assert_eq!(spec.service_name.as_deref(), Some("simple-server-default"));
    let pod = spec.template.spec.expect("a pod spec");
    assert_eq!(
        pod.termination_grace_period_seconds,
        Some(120),
        "the group's gracefulShutdownTimeout wins over the product's pod"
    );
    assert_eq!(pod.priority_class_name.as_deref(), Some("critical"));
    assert_eq!(
        pod.image_pull_secrets,
        Some(vec![LocalObjectReference {
            name: "registry".to_owned()
        }]),
        "the cluster's image pull Secrets reach the pod"
    );

    let headless = group.headless_service("ns", &[]);
    assert_eq!(
        headless.metadata.name.as_deref(),
        Some("simple-server-default")
    );
    assert_eq!(
        headless.spec.and_then(|spec| spec.selector),
        Some(group.labels.selector())
    );
}
