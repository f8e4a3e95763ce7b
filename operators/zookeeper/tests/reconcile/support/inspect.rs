//! Looking inside the stored objects: `zoo.cfg` lines, the config hash, owner references
//! and recommended labels.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::Value;
use strata_model::build::config_hash;
use zookeeper_operator::build::config_map::ZOO_CFG;
use zookeeper_operator::build::statefulset::CONFIG_HASH_ANNOTATION;
use zookeeper_operator::crd::ZookeeperCluster;

use super::{Harness, stored};

/// The kinds the cluster controller creates, as the in-memory API names them.
pub const CHILD_RESOURCES: [&str; 4] = [
    "configmaps",
    "services",
    "statefulsets.apps",
    "poddisruptionbudgets.policy",
];

/// One stored `zoo.cfg`.
pub fn zoo_cfg(harness: &Harness, config_map: &str) -> String {
    stored::<ConfigMap>(harness, config_map)
        .data
        .and_then(|mut data| data.remove(ZOO_CFG))
        .unwrap_or_else(|| panic!("ConfigMap {config_map} has {ZOO_CFG}"))
}

/// The plain `key=value` properties of a `zoo.cfg`.
pub fn properties(zoo_cfg: &str) -> BTreeMap<String, String> {
    zoo_cfg
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split_once('='))
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect()
}

/// The `server.N` lines of a `zoo.cfg`: server id to address. Panics on a duplicate id,
/// which ZooKeeper would reject too.
pub fn server_lines(zoo_cfg: &str) -> BTreeMap<u32, String> {
    let mut servers = BTreeMap::new();
    for (key, value) in properties(zoo_cfg) {
        if let Some(id) = key.strip_prefix("server.") {
            let id: u32 = id.parse().expect("a numeric server id");
            assert!(
                servers.insert(id, value).is_none(),
                "server.{id} appears twice in {zoo_cfg}"
            );
        }
    }
    servers
}

/// The `server.N` lines a set of role groups should produce: for each `(group, replicas,
/// myid offset)`, one line per Pod with its stable DNS name.
pub fn expected_server_lines(cluster: &str, groups: &[(&str, u16, u32)]) -> BTreeMap<u32, String> {
    let mut servers = BTreeMap::new();
    for &(group, replicas, offset) in groups {
        let stateful_set = format!("{cluster}-server-{group}");
        for ordinal in 0..replicas {
            servers.insert(
                offset + u32::from(ordinal),
                format!(
                    "{stateful_set}-{ordinal}.{stateful_set}.{}.svc.{}:2888:3888",
                    super::NAMESPACE,
                    super::CLUSTER_DOMAIN
                ),
            );
        }
    }
    servers
}

/// The config hash annotation of a StatefulSet's Pod template.
pub fn template_config_hash(harness: &Harness, stateful_set: &str) -> String {
    stored::<StatefulSet>(harness, stateful_set)
        .spec
        .template
        .metadata
        .and_then(|metadata| metadata.annotations)
        .and_then(|mut annotations| annotations.remove(CONFIG_HASH_ANNOTATION))
        .unwrap_or_else(|| panic!("StatefulSet {stateful_set} has {CONFIG_HASH_ANNOTATION}"))
}

/// The hash of the stored ConfigMap's files, as the operator computes it.
pub fn config_map_hash(harness: &Harness, config_map: &str) -> String {
    let data = stored::<ConfigMap>(harness, config_map)
        .data
        .unwrap_or_else(|| panic!("ConfigMap {config_map} has data"));
    config_hash(&data)
}

/// The recommended labels the operator sets: always name, instance, managed-by and
/// version; component and role group where the object belongs to one.
pub fn recommended_labels(
    cluster: &str,
    component: Option<&str>,
    role_group: Option<&str>,
) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::from([
        ("app.kubernetes.io/name".to_owned(), "zookeeper".to_owned()),
        ("app.kubernetes.io/instance".to_owned(), cluster.to_owned()),
        (
            "app.kubernetes.io/managed-by".to_owned(),
            "zookeeper-operator".to_owned(),
        ),
        ("app.kubernetes.io/version".to_owned(), "3.9.5".to_owned()),
    ]);
    if let Some(component) = component {
        labels.insert(
            "app.kubernetes.io/component".to_owned(),
            component.to_owned(),
        );
    }
    if let Some(role_group) = role_group {
        labels.insert(
            "app.kubernetes.io/role-group".to_owned(),
            role_group.to_owned(),
        );
    }
    labels
}

/// Asserts that every stored child object has exactly one owner reference, the
/// controller reference to `owner`, and returns the objects as `(resource, JSON)`.
pub fn assert_controlled_by(harness: &Harness, owner: &ZookeeperCluster) -> Vec<(String, Value)> {
    let uid = owner.metadata.uid.as_deref().expect("the owner has a uid");
    let mut objects = Vec::new();
    for resource in CHILD_RESOURCES {
        for object in harness.server.objects(resource) {
            let name = object["metadata"]["name"].clone();
            let references = object["metadata"]["ownerReferences"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            assert_eq!(
                references.len(),
                1,
                "{resource} {name} has one owner reference: {references:#?}"
            );
            let reference = &references[0];
            assert_eq!(
                reference["apiVersion"], "zookeeper.strata.dev/v1alpha1",
                "{resource} {name}"
            );
            assert_eq!(reference["kind"], "ZookeeperCluster", "{resource} {name}");
            assert_eq!(
                reference["name"],
                owner.metadata.name.as_deref().unwrap_or_default(),
                "{resource} {name}"
            );
            assert_eq!(reference["uid"], uid, "{resource} {name}");
            assert_eq!(reference["controller"], true, "{resource} {name}");
            assert_eq!(reference["blockOwnerDeletion"], true, "{resource} {name}");
            objects.push((resource.to_owned(), object));
        }
    }
    objects
}

/// The labels of a stored object's metadata.
pub fn labels_of(object: &Value) -> BTreeMap<String, String> {
    serde_json::from_value(object["metadata"]["labels"].clone()).unwrap_or_default()
}
