//! Acting as the user: creating custom resources from the JSON a user would write,
//! and merge-patching their spec, as `kubectl apply` and `kubectl patch` would.

use kube::Resource;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::Harness;

/// Creates the `K` named `name` in the harness's namespace with `spec`.
pub async fn create<K>(harness: &Harness, name: &str, spec: Value) -> K
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + Serialize
        + DeserializeOwned
        + std::fmt::Debug,
{
    let object: K = serde_json::from_value(json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "metadata": {"name": name, "namespace": harness.namespace},
        "spec": spec
    }))
    .unwrap_or_else(|error| panic!("the test {} deserialises: {error}", K::kind(&())));
    Api::<K>::namespaced(harness.server.client(), harness.namespace)
        .create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|error| panic!("the {} is created: {error}", K::kind(&())))
}

/// Merges `spec` into the spec of the `K` named `name` (a JSON merge patch).
pub async fn patch_spec<K>(harness: &Harness, name: &str, spec: Value)
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    Api::<K>::namespaced(harness.server.client(), harness.namespace)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": spec })),
        )
        .await
        .unwrap_or_else(|error| panic!("the {} spec is patched: {error}", K::kind(&())));
}

/// Creates the Secret `name` in the harness's namespace with `data` as `stringData`,
/// as `kubectl create secret generic --from-literal` would.
pub async fn create_secret(harness: &Harness, name: &str, data: &[(&str, &str)]) {
    let string_data: serde_json::Map<String, Value> = data
        .iter()
        .map(|(key, value)| ((*key).to_owned(), Value::String((*value).to_owned())))
        .collect();
    let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": harness.namespace},
        "stringData": string_data
    }))
    .unwrap_or_else(|error| panic!("the test Secret deserialises: {error}"));
    Api::namespaced(harness.server.client(), harness.namespace)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap_or_else(|error| panic!("the Secret {name} is created: {error}"));
}

/// Sets `data` in the Secret `name` as a user rotating a password would (a merge patch
/// of `stringData`): its other keys stay, and its resourceVersion changes.
pub async fn patch_secret(harness: &Harness, name: &str, data: &[(&str, &str)]) {
    let string_data: serde_json::Map<String, Value> = data
        .iter()
        .map(|(key, value)| ((*key).to_owned(), Value::String((*value).to_owned())))
        .collect();
    Api::<k8s_openapi::api::core::v1::Secret>::namespaced(
        harness.server.client(),
        harness.namespace,
    )
    .patch(
        name,
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({ "stringData": string_data })),
    )
    .await
    .unwrap_or_else(|error| panic!("the Secret {name} is patched: {error}"));
}

/// `<Kind>/<name>` of each object in `objects` (rendered or applied JSON), sorted: what a
/// test compares against the list of objects an operator must build.
pub fn object_names(objects: &[Value]) -> std::collections::BTreeSet<String> {
    objects
        .iter()
        .map(|object| {
            format!(
                "{}/{}",
                object["kind"].as_str().unwrap_or_default(),
                object["metadata"]["name"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

/// The object of `kind` named `name` in `objects`; a test fails when it was not built.
pub fn named<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|object| object["kind"] == kind && object["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("{kind}/{name} is not among the built objects"))
}

/// The text of `key` in a stored Secret, from `data` or from `stringData` (the
/// in-memory API keeps what was applied as it came).
pub fn secret_text(secret: &k8s_openapi::api::core::v1::Secret, key: &str) -> Option<String> {
    secret
        .data
        .as_ref()
        .and_then(|data| data.get(key))
        .map(|bytes| String::from_utf8_lossy(&bytes.0).into_owned())
        .or_else(|| {
            secret
                .string_data
                .as_ref()
                .and_then(|data| data.get(key))
                .cloned()
        })
}
