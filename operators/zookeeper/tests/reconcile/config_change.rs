//! A config change rewrites the ConfigMap and changes the config hash in the Pod template,
//! which rolls the Pods; groups whose files did not change keep their hash.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::ConfigMap;
use rstest::rstest;
use serde_json::{Value, json};
use strata_testing::workloads::run_until_settled;
use zookeeper_operator::build::statefulset::CONFIG_HASH_ANNOTATION;

use crate::support::inspect::{config_map_hash, template_config_hash};
use crate::support::{
    ExpectedObjects, Harness, cluster, create, patch_spec, start, stored, two_group_spec, wait_for,
    wait_for_objects,
};

const GROUPS: [&str; 2] = ["primary", "secondary"];

fn object_name(group: &str) -> String {
    format!("zk-server-{group}")
}

fn hashes(harness: &Harness) -> BTreeMap<&'static str, String> {
    GROUPS
        .iter()
        .map(|&group| (group, template_config_hash(harness, &object_name(group))))
        .collect()
}

fn config_file(harness: &Harness, group: &str, file: &str) -> String {
    stored::<ConfigMap>(harness, &object_name(group))
        .data
        .and_then(|mut data| data.remove(file))
        .unwrap_or_else(|| panic!("{} has {file}", object_name(group)))
}

#[rstest]
#[case::role_override_of_tick_time(
    json!({"servers": {"configOverrides": {"zoo.cfg": {"tickTime": "3000"}}}}),
    &["primary", "secondary"], "zoo.cfg", "\ntickTime=3000\n"
)]
#[case::role_config_tick_time(
    json!({"servers": {"config": {"tickTime": 2500}}}),
    &["primary", "secondary"], "zoo.cfg", "\ntickTime=2500\n"
)]
#[case::group_override_rolls_only_its_group(
    json!({"servers": {"roleGroups": {"secondary": {"configOverrides": {"zoo.cfg": {"syncLimit": "7"}}}}}}),
    &["secondary"], "zoo.cfg", "\nsyncLimit=7\n"
)]
#[case::group_log_level_rolls_only_its_group(
    json!({"servers": {"roleGroups": {"primary": {"configOverrides": {"logback.xml": {"ROOT": "DEBUG"}}}}}}),
    &["primary"], "logback.xml", "DEBUG"
)]
#[case::scaling_one_group_rolls_every_group(
    json!({"servers": {"roleGroups": {"primary": {"replicas": 4}}}}),
    &["primary", "secondary"], "zoo.cfg", "\nserver.4=zk-server-primary-3."
)]
#[tokio::test]
async fn a_config_change_rolls_exactly_the_groups_whose_files_changed(
    #[case] change: Value,
    #[case] changed: &[&str],
    #[case] file: &str,
    #[case] needle: &str,
) {
    let harness = start();
    create(&harness, &cluster("zk", two_group_spec())).await;
    wait_for_objects(&harness, &ExpectedObjects::new("zk", &GROUPS)).await;
    run_until_settled(&harness, || ()).await;
    let before = hashes(&harness);

    patch_spec(&harness, "zk", change).await;
    run_until_settled(&harness, || ()).await;
    for &group in changed {
        let old = before[group].clone();
        wait_for::<StatefulSet>(&harness, &object_name(group), "a new config hash", |sts| {
            sts.spec
                .template
                .metadata
                .as_ref()
                .and_then(|meta| meta.annotations.as_ref())
                .and_then(|annotations| annotations.get(CONFIG_HASH_ANNOTATION))
                .is_some_and(|hash| *hash != old)
        })
        .await;
    }
    harness.settle().await;

    let after = hashes(&harness);
    for group in GROUPS {
        let name = object_name(group);
        assert_eq!(
            after[group],
            config_map_hash(&harness, &name),
            "{name}: the template's hash matches the stored ConfigMap"
        );
        let contents = config_file(&harness, group, file);
        if changed.contains(&group) {
            assert_ne!(after[group], before[group], "{name} rolls");
            assert!(
                contents.contains(needle),
                "{name} {file} has {needle:?}:\n{contents}"
            );
        } else {
            assert_eq!(after[group], before[group], "{name} does not roll");
            assert!(
                !contents.contains(needle),
                "{name} {file} is unchanged:\n{contents}"
            );
        }
    }
}
