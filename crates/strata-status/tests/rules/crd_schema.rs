//! The status structs inside a real CRD: the schema must be structural, or
//! the API server rejects the CRD.

use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use strata_status::{ClusterStatus, ResourceStatus};

#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "test.strata.dev",
    version = "v1alpha1",
    kind = "ProbeCluster",
    namespaced,
    status = "ClusterStatus"
)]
struct ProbeClusterSpec {
    replicas: u16,
}

#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "test.strata.dev",
    version = "v1alpha1",
    kind = "ProbeResource",
    namespaced,
    status = "ResourceStatus"
)]
struct ProbeResourceSpec {
    path: String,
}

/// Keys a structural schema must not use outside the positions Kubernetes
/// allows; our types need none of them.
fn forbidden_keys(value: &Value, path: &str, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                if ["$ref", "anyOf", "oneOf", "allOf", "definitions", "$defs"]
                    .contains(&key.as_str())
                {
                    found.push(format!("{path}/{key}"));
                }
                forbidden_keys(child, &format!("{path}/{key}"), found);
            }
        }
        Value::Array(items) => {
            for (index, child) in items.iter().enumerate() {
                forbidden_keys(child, &format!("{path}/{index}"), found);
            }
        }
        _ => {}
    }
}

fn status_schema(
    crd: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
) -> Value {
    let schema = serde_json::to_value(
        crd.spec.versions[0]
            .schema
            .as_ref()
            .unwrap()
            .open_api_v3_schema
            .as_ref()
            .unwrap(),
    )
    .unwrap();
    schema["properties"]["status"].clone()
}

#[test]
fn cluster_status_schema_is_structural() {
    let status = status_schema(&ProbeCluster::crd());
    let mut found = Vec::new();
    forbidden_keys(&status, "status", &mut found);
    assert!(found.is_empty(), "{found:?}\n{status:#}");

    let condition = &status["properties"]["conditions"]["items"];
    assert_eq!(condition["type"], "object");
    assert_eq!(condition["properties"]["type"]["type"], "string");
    assert_eq!(
        condition["properties"]["type"]["enum"],
        serde_json::json!([
            "Available",
            "Progressing",
            "Degraded",
            "Upgradable",
            "Paused",
            "Stopped",
            "Warning"
        ])
    );
    assert_eq!(
        condition["properties"]["status"]["enum"],
        serde_json::json!(["True", "False", "Unknown"])
    );
    assert_eq!(
        condition["properties"]["lastTransitionTime"]["type"],
        "string"
    );
    assert_eq!(
        condition["properties"]["lastTransitionTime"]["format"],
        "date-time"
    );
    assert_eq!(
        status["properties"]["deployedProductVersion"]["type"],
        "string"
    );
}

#[test]
fn resource_status_schema_is_structural() {
    let status = status_schema(&ProbeResource::crd());
    let mut found = Vec::new();
    forbidden_keys(&status, "status", &mut found);
    assert!(found.is_empty(), "{found:?}\n{status:#}");
    assert!(status["properties"]["deployedProductVersion"].is_null());
    assert_eq!(status["properties"]["conditions"]["type"], "array");
}

/// A newer operator version may have written a condition type this one does
/// not know before a rollback; the object must still deserialize, or the
/// watch of the whole kind fails.
#[test]
fn custom_resource_with_unknown_condition_type_deserializes() {
    let object = serde_json::json!({
        "apiVersion": "test.strata.dev/v1alpha1",
        "kind": "ProbeCluster",
        "metadata": {"name": "probe", "namespace": "default"},
        "spec": {"replicas": 3},
        "status": {
            "conditions": [
                {"type": "Available", "status": "True", "reason": "AsExpected", "message": "Fine."},
                {"type": "Foo", "status": "True", "reason": "Newer", "message": "From the future."},
            ],
            "observedGeneration": 1,
        },
    });
    let cluster: ProbeCluster = serde_json::from_value(object.clone()).unwrap();
    let conditions = &cluster.status.as_ref().unwrap().conditions;
    assert_eq!(conditions.len(), 2);
    assert_eq!(
        serde_json::to_value(&cluster).unwrap()["status"],
        object["status"]
    );
}
