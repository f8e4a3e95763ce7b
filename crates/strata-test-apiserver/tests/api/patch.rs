//! Merge, strategic merge and JSON patches.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::support::{api_error, config_map, server};

async fn seeded() -> anyhow::Result<(strata_test_apiserver::TestApiServer, Api<ConfigMap>)> {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(
        &PostParams::default(),
        &config_map("cm", &[("a", "1"), ("b", "2")], &[("app", "x")]),
    )
    .await?;
    Ok((server, api))
}

fn data(cm: &ConfigMap) -> Vec<(String, String)> {
    cm.data.clone().unwrap_or_default().into_iter().collect()
}

#[tokio::test]
async fn merge_patch_adds_replaces_and_deletes_with_null() -> anyhow::Result<()> {
    let (_server, api) = seeded().await?;
    let patch =
        json!({"data": {"a": "10", "b": null, "c": "3"}, "metadata": {"labels": {"app": null}}});
    let patched = api
        .patch("cm", &PatchParams::default(), &Patch::Merge(patch))
        .await?;
    assert_eq!(
        data(&patched),
        [("a".into(), "10".into()), ("c".into(), "3".into())]
    );
    assert_eq!(
        patched.metadata.labels, None,
        "emptied label map is pruned as null-free JSON"
    );
    Ok(())
}

#[tokio::test]
async fn strategic_merge_patch_behaves_like_merge_patch() -> anyhow::Result<()> {
    let (_server, api) = seeded().await?;
    let patch = json!({"data": {"b": null, "d": "4"}});
    let patched = api
        .patch("cm", &PatchParams::default(), &Patch::Strategic(patch))
        .await?;
    assert_eq!(
        data(&patched),
        [("a".into(), "1".into()), ("d".into(), "4".into())]
    );
    Ok(())
}

#[tokio::test]
async fn merge_patch_with_stale_resource_version_conflicts() -> anyhow::Result<()> {
    let (_server, api) = seeded().await?;
    let patch = json!({"metadata": {"resourceVersion": "1"}, "data": {"a": "x"}});
    let result = api
        .patch("cm", &PatchParams::default(), &Patch::Merge(patch))
        .await;
    assert_eq!(api_error(result), Some((409, "Conflict".into())));
    Ok(())
}

/// Sends a JSON patch by hand: kube's `Patch::Json` needs the optional `jsonpatch` feature.
async fn json_patch(client: &kube::Client, ops: Value) -> Result<ConfigMap, kube::Error> {
    let request = http::Request::patch("/api/v1/namespaces/default/configmaps/cm")
        .header(http::header::CONTENT_TYPE, "application/json-patch+json")
        .body(serde_json::to_vec(&ops).map_err(kube::Error::SerdeError)?)
        .map_err(kube::Error::HttpError)?;
    client.request(request).await
}

#[tokio::test]
async fn json_patch_supports_add_replace_remove_and_test() -> anyhow::Result<()> {
    let (server, _api) = seeded().await?;
    let client = server.client();
    let ops = json!([
        {"op": "test", "path": "/data/a", "value": "1"},
        {"op": "replace", "path": "/data/a", "value": "one"},
        {"op": "remove", "path": "/data/b"},
        {"op": "add", "path": "/metadata/labels/tier", "value": "front"},
    ]);
    let patched = json_patch(&client, ops).await?;
    assert_eq!(data(&patched), [("a".into(), "one".into())]);
    assert_eq!(
        patched
            .metadata
            .labels
            .unwrap_or_default()
            .get("tier")
            .map(String::as_str),
        Some("front")
    );

    let failing = json!([{"op": "test", "path": "/data/a", "value": "1"}, {"op": "remove", "path": "/data/a"}]);
    assert_eq!(
        api_error(json_patch(&client, failing).await),
        Some((422, "Invalid".into()))
    );
    let unchanged = server
        .object("configmaps", "default", "cm")
        .unwrap_or_default();
    assert_eq!(
        unchanged["data"]["a"],
        json!("one"),
        "a failed test leaves the object untouched"
    );
    Ok(())
}

#[tokio::test]
async fn patch_of_missing_object_is_404() -> anyhow::Result<()> {
    let (_server, api) = seeded().await?;
    let result = api
        .patch("nope", &PatchParams::default(), &Patch::Merge(json!({})))
        .await;
    assert_eq!(api_error(result), Some((404, "NotFound".into())));
    Ok(())
}
