//! What the xtask tests on the real control plane share: a control plane with every
//! registered operator's CRDs, the documents of a workspace manifest, and a server-side
//! apply of one.

use std::fs;

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::Value;
use strata_testing::control_plane::{ControlPlane, ControlPlaneOptions};
use xtask::commands::workspace_root;
use xtask::operators::registered;

/// A control plane with every CRD of every registered operator established, and an admin
/// client.
pub async fn with_every_crd() -> (ControlPlane, kube::Client) {
    let control_plane = ControlPlane::start(ControlPlaneOptions::default())
        .await
        .unwrap_or_else(|error| panic!("the control plane starts: {error}"));
    let crds: Vec<_> = registered()
        .iter()
        .flat_map(|operator| (operator.crds)())
        .collect();
    control_plane
        .install_crds(&crds)
        .await
        .expect("every CRD is established");
    let client = control_plane.client().await.expect("a client");
    (control_plane, client)
}

/// Every document of the manifest at `path`, relative to the workspace.
pub fn documents(path: &str) -> Vec<Value> {
    let text = fs::read_to_string(workspace_root().join(path))
        .unwrap_or_else(|error| panic!("{path} reads: {error}"));
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|document| serde::Deserialize::deserialize(document).expect("YAML"))
        .filter(|document: &Value| !document.is_null())
        .collect()
}

/// A server-side apply of `document` in `default` with `params`, as
/// `kubectl apply --server-side` sends it; the error as the server worded it.
pub async fn apply(
    client: &kube::Client,
    document: &Value,
    params: &PatchParams,
) -> Result<(), String> {
    let api_version = document["apiVersion"].as_str().expect("apiVersion");
    let kind = document["kind"].as_str().expect("kind");
    let name = document["metadata"]["name"].as_str().expect("a name");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource);
    api.patch(name, params, &Patch::Apply(document))
        .await
        .map(drop)
        .map_err(|error| error.to_string())
}
