#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use k8s_openapi::api::core::v1::{Container, PodSpec};
use kube::CustomResourceExt;
use rstest::rstest;
use serde_json::{Value, json};

use super::*;

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
struct TestConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    tick_time: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    init_limit: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    log_level: Option<String>,
}

crate::merge_struct!(TestConfig {
    tick_time,
    init_limit,
    log_level
});

fn config(tick_time: Option<u32>, init_limit: Option<u32>, log_level: Option<&str>) -> TestConfig {
    TestConfig {
        tick_time,
        init_limit,
        log_level: log_level.map(str::to_owned),
    }
}

fn pairs(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
    entries
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn role_with_group(role_config: TestConfig, group_config: TestConfig) -> Role<TestConfig> {
    Role {
        config: role_config,
        role_groups: BTreeMap::from([(
            "default".to_owned(),
            RoleGroup {
                config: group_config,
                ..RoleGroup::default()
            },
        )]),
        ..Role::default()
    }
}

#[rstest]
#[case::defaults_only(
    config(None, None, None),
    config(None, None, None),
    config(Some(1), Some(2), Some("INFO")),
    config(Some(1), Some(2), Some("INFO"))
)]
#[case::role_beats_default(
    config(Some(10), None, None),
    config(None, None, None),
    config(Some(1), Some(2), None),
    config(Some(10), Some(2), None)
)]
#[case::group_beats_role(
    config(Some(10), None, None),
    config(Some(20), None, None),
    config(Some(1), None, None),
    config(Some(20), None, None)
)]
#[case::group_beats_default(
    config(None, None, None),
    config(None, Some(30), None),
    config(Some(1), Some(2), None),
    config(Some(1), Some(30), None)
)]
#[case::each_layer_one_field(
    config(None, Some(10), None),
    config(None, None, Some("DEBUG")),
    config(Some(1), Some(2), Some("INFO")),
    config(Some(1), Some(10), Some("DEBUG"))
)]
#[case::nothing_set(
    config(None, None, None),
    config(None, None, None),
    config(None, None, None),
    config(None, None, None)
)]
fn config_precedence(
    #[case] role: TestConfig,
    #[case] group: TestConfig,
    #[case] defaults: TestConfig,
    #[case] expected: TestConfig,
) {
    let merged = role_with_group(role, group).merged_role_groups(&defaults);
    assert_eq!(merged["default"].config, expected);
}

#[rstest]
#[case::role_only(pairs(&[("tickTime", "1")]), pairs(&[]), pairs(&[("tickTime", "1")]))]
#[case::group_only(pairs(&[]), pairs(&[("tickTime", "2")]), pairs(&[("tickTime", "2")]))]
#[case::group_wins_same_key(pairs(&[("tickTime", "1")]), pairs(&[("tickTime", "2")]), pairs(&[("tickTime", "2")]))]
#[case::union_of_keys(pairs(&[("a", "1")]), pairs(&[("b", "2")]), pairs(&[("a", "1"), ("b", "2")]))]
fn config_and_env_override_precedence(
    #[case] role_values: BTreeMap<String, String>,
    #[case] group_values: BTreeMap<String, String>,
    #[case] expected: BTreeMap<String, String>,
) {
    let role: Role<TestConfig> = Role {
        config_overrides: BTreeMap::from([("zoo.cfg".to_owned(), role_values.clone())]),
        env_overrides: role_values,
        role_groups: BTreeMap::from([(
            "default".to_owned(),
            RoleGroup {
                config_overrides: BTreeMap::from([("zoo.cfg".to_owned(), group_values.clone())]),
                env_overrides: group_values,
                ..RoleGroup::default()
            },
        )]),
        ..Role::default()
    };
    let merged = &role.merged_role_groups(&TestConfig::default())["default"];
    assert_eq!(
        merged.config_overrides,
        BTreeMap::from([("zoo.cfg".to_owned(), expected.clone())])
    );
    assert_eq!(merged.env_overrides, expected);
}

#[test]
fn config_overrides_keep_files_of_both_layers() {
    let role: Role<TestConfig> = serde_json::from_value(json!({
        "configOverrides": {"zoo.cfg": {"tickTime": "1"}, "security.properties": {"a": "b"}},
        "roleGroups": {"default": {"configOverrides": {"zoo.cfg": {"initLimit": "5"}}}}
    }))
    .unwrap();
    let merged = &role.merged_role_groups(&TestConfig::default())["default"];
    assert_eq!(
        merged.config_overrides,
        BTreeMap::from([
            ("security.properties".to_owned(), pairs(&[("a", "b")])),
            (
                "zoo.cfg".to_owned(),
                pairs(&[("initLimit", "5"), ("tickTime", "1")])
            ),
        ])
    );
}

#[test]
fn pod_overrides_deep_merge_with_role_group_winning() {
    let role: Role<TestConfig> = serde_json::from_value(json!({
        "podOverrides": {"spec": {
            "serviceAccountName": "role-sa",
            "containers": [{"name": "zookeeper", "image": "role-image", "args": ["--role"]}]
        }},
        "roleGroups": {"default": {"podOverrides": {"spec": {
            "containers": [{"name": "zookeeper", "image": "group-image"}]
        }}}}
    }))
    .unwrap();
    let merged = &role.merged_role_groups(&TestConfig::default())["default"];
    let expected = PodTemplateSpec {
        metadata: None,
        spec: Some(PodSpec {
            service_account_name: Some("role-sa".to_owned()),
            containers: vec![Container {
                name: "zookeeper".to_owned(),
                image: Some("group-image".to_owned()),
                args: Some(vec!["--role".to_owned()]),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
    };
    assert_eq!(merged.pod_overrides, expected);
}

#[rstest]
#[case::absent_defaults_to_one(json!({}), 1)]
#[case::explicit_zero(json!({"replicas": 0}), 0)]
#[case::explicit_three(json!({"replicas": 3}), 3)]
fn replicas(#[case] group: Value, #[case] expected: u16) {
    let role: Role<TestConfig> =
        serde_json::from_value(json!({"roleGroups": {"rg": group}})).unwrap();
    let merged = role.merged_role_groups(&TestConfig::default());
    assert_eq!(merged["rg"].replicas, expected);
    assert_eq!(merged["rg"].name, "rg");
}

#[test]
fn every_role_group_is_merged_in_name_order() {
    let role: Role<TestConfig> =
        serde_json::from_value(json!({"config": {"tickTime": 7}, "roleGroups": {"b": {}, "a": {"config": {"tickTime": 1}}}})).unwrap();
    let merged = role.merged_role_groups(&TestConfig::default());
    let summary: Vec<(&str, Option<u32>)> = merged
        .values()
        .map(|group| (group.name.as_str(), group.config.tick_time))
        .collect();
    assert_eq!(summary, vec![("a", Some(1)), ("b", Some(7))]);
}

#[rstest]
#[case::missing_role_config(json!({"roleGroups": {}}), PdbConfig::default())]
#[case::empty_pdb(json!({"roleConfig": {"podDisruptionBudget": {}}, "roleGroups": {}}), PdbConfig::default())]
#[case::disabled_pdb(
    json!({"roleConfig": {"podDisruptionBudget": {"enabled": false}}, "roleGroups": {}}),
    PdbConfig { enabled: false, max_unavailable: None }
)]
#[case::max_unavailable(
    json!({"roleConfig": {"podDisruptionBudget": {"maxUnavailable": 2}}, "roleGroups": {}}),
    PdbConfig { enabled: true, max_unavailable: Some(2) }
)]
fn role_config_pdb(#[case] role: Value, #[case] expected: PdbConfig) {
    let role: Role<TestConfig> = serde_json::from_value(role).unwrap();
    assert_eq!(role.role_config.pod_disruption_budget, expected);
}

#[test]
fn role_groups_are_required() {
    let error = serde_json::from_value::<Role<TestConfig>>(json!({})).unwrap_err();
    assert!(error.to_string().contains("roleGroups"), "{error}");
}

#[derive(kube::CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "test.strata.dev",
    version = "v1alpha1",
    kind = "TestCluster",
    namespaced
)]
struct TestClusterSpec {
    servers: Role<TestConfig>,
}

fn crd_json() -> Value {
    serde_json::to_value(TestCluster::crd()).unwrap()
}

fn servers_schema(crd: &Value) -> &Value {
    &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["servers"]
}

#[test]
fn pod_overrides_schema_is_an_opaque_object_at_both_levels() {
    let crd = crd_json();
    let servers = servers_schema(&crd);
    for schema in [
        &servers["properties"]["podOverrides"],
        &servers["properties"]["roleGroups"]["additionalProperties"]["properties"]["podOverrides"],
    ] {
        assert_eq!(schema["type"], "object", "{schema}");
        assert_eq!(
            schema["x-kubernetes-preserve-unknown-fields"], true,
            "{schema}"
        );
        assert!(schema.get("properties").is_none(), "{schema}");
    }
}

#[test]
fn crd_schema_stays_small_and_keeps_role_config() {
    let crd = crd_json();
    let size = serde_json::to_string(&crd).unwrap().len();
    assert!(
        size < 16_000,
        "CRD is {size} bytes; is a PodTemplateSpec schema inlined?"
    );
    let pdb =
        &servers_schema(&crd)["properties"]["roleConfig"]["properties"]["podDisruptionBudget"];
    assert_eq!(pdb["properties"]["enabled"]["type"], "boolean", "{pdb}");
    assert_eq!(
        pdb["properties"]["maxUnavailable"]["type"], "integer",
        "{pdb}"
    );
    assert_eq!(servers_schema(&crd)["required"], json!(["roleGroups"]));
    assert_eq!(
        servers_schema(&crd)["properties"]["config"]["default"],
        json!({})
    );
}

/// Kubernetes rejects non-structural schemas: every node needs a single string `type`
/// (or preserve-unknown-fields) and there must be no `$ref`.
fn assert_structural(schema: &Value, path: &str) {
    let Some(object) = schema.as_object() else {
        return;
    };
    assert!(!object.contains_key("$ref"), "$ref at {path}");
    if let Some(kind) = object.get("type") {
        assert!(kind.is_string(), "type at {path} is {kind}");
    }
    for (key, child) in object {
        if key == "properties" {
            for (name, property) in child.as_object().into_iter().flatten() {
                assert!(
                    property.get("type").is_some()
                        || property
                            .get("x-kubernetes-preserve-unknown-fields")
                            .is_some(),
                    "no type at {path}.{name}"
                );
                assert_structural(property, &format!("{path}.{name}"));
            }
        } else if child.is_object() {
            assert_structural(child, &format!("{path}/{key}"));
        }
    }
}

#[test]
fn crd_schema_is_structural() {
    let crd = crd_json();
    assert_structural(&crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"], "");
}
