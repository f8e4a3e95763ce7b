//! The discovery documents clients such as `kubectl` read before anything
//! else: which groups, versions and resources the server has. They are built
//! from the kinds the server serves, so a registered custom resource shows up
//! as it would after a CRD is established.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::kinds::{Registry, ResourceInfo};

/// Verbs every served resource answers.
const VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// The discovery document at `path`, or `None` when `path` is not one.
pub(crate) fn document(registry: &Registry, path: &str) -> Option<Value> {
    let path = path.trim_end_matches('/');
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    match segments.as_slice() {
        ["api"] => Some(json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
        })),
        ["api", "v1"] => Some(resource_list(registry, "", "v1")),
        ["apis"] => Some(group_list(registry)),
        ["openapi", "v3"] => Some(json!({"paths": {}})),
        ["apis", group, version] => {
            let list = resource_list(registry, group, version);
            let empty = list["resources"].as_array().is_none_or(Vec::is_empty);
            (!empty).then_some(list)
        }
        _ => None,
    }
}

fn group_list(registry: &Registry) -> Value {
    let mut versions: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for info in registry.all().filter(|info| !info.group.is_empty()) {
        let entry = versions.entry(info.group.as_str()).or_default();
        if !entry.contains(&info.version.as_str()) {
            entry.push(info.version.as_str());
        }
    }
    let groups: Vec<Value> = versions
        .into_iter()
        .map(|(group, versions)| {
            let versions: Vec<Value> = versions
                .iter()
                .map(|version| json!({"groupVersion": format!("{group}/{version}"), "version": version}))
                .collect();
            json!({
                "name": group,
                "preferredVersion": versions[0].clone(),
                "versions": versions,
            })
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

fn resource_list(registry: &Registry, group: &str, version: &str) -> Value {
    let resources: Vec<Value> = registry
        .all()
        .filter(|info| info.group == group && info.version == version)
        .flat_map(resource_entries)
        .collect();
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") },
        "resources": resources,
    })
}

fn resource_entries(info: &ResourceInfo) -> Vec<Value> {
    let mut main = json!({
        "name": info.plural,
        "singularName": info.kind.to_lowercase(),
        "namespaced": info.namespaced,
        "kind": info.kind,
        "verbs": VERBS,
    });
    if !info.short_names.is_empty() {
        main["shortNames"] = json!(info.short_names);
    }
    let mut entries = vec![main];
    if info.status_subresource {
        entries.push(json!({
            "name": format!("{}/status", info.plural),
            "singularName": "",
            "namespaced": info.namespaced,
            "kind": info.kind,
            "verbs": ["get", "patch", "update"],
        }));
    }
    entries
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::builtins;

    fn registry() -> Registry {
        let mut registry = Registry::default();
        for info in builtins() {
            registry.insert(info);
        }
        registry.insert(
            ResourceInfo::new(
                "zookeeper.strata.dev",
                "v1alpha1",
                "ZookeeperCluster",
                "zookeeperclusters",
            )
            .with_status(),
        );
        registry
    }

    #[test]
    fn a_registered_custom_resource_is_discovered_with_its_status_subresource() {
        let registry = registry();
        let groups = document(&registry, "/apis").expect("group list");
        assert!(
            groups["groups"]
                .as_array()
                .expect("groups")
                .iter()
                .any(|group| group["name"] == "zookeeper.strata.dev"
                    && group["preferredVersion"]["groupVersion"]
                        == "zookeeper.strata.dev/v1alpha1"),
            "{groups}"
        );
        let resources = document(&registry, "/apis/zookeeper.strata.dev/v1alpha1").expect("list");
        let names: Vec<&str> = resources["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .filter_map(|resource| resource["name"].as_str())
            .collect();
        assert_eq!(names, ["zookeeperclusters", "zookeeperclusters/status"]);
    }

    #[test]
    fn openapi_v3_lists_no_group_versions() {
        let index = document(&registry(), "/openapi/v3").expect("served");
        assert_eq!(index, json!({"paths": {}}));
    }

    #[test]
    fn the_core_group_is_served_under_api_and_unknown_groups_are_not() {
        let registry = registry();
        assert_eq!(
            document(&registry, "/api").expect("versions")["versions"],
            json!(["v1"])
        );
        let core = document(&registry, "/api/v1").expect("core resources");
        assert!(
            core["resources"]
                .as_array()
                .expect("resources")
                .iter()
                .any(|resource| resource["name"] == "configmaps" && resource["namespaced"] == true)
        );
        assert_eq!(document(&registry, "/apis/example.com/v1"), None);
        assert_eq!(document(&registry, "/healthz"), None);
    }
}
