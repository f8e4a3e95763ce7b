//! Deletion with finalizers and owner-reference garbage collection.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Resource,
    api::{Api, DeleteParams, Patch, PatchParams, PostParams},
};
use serde_json::json;

use crate::support::{Widget, api_error, config_map, server, widget};

#[tokio::test]
async fn finalizers_keep_a_deleted_object_until_removed() -> anyhow::Result<()> {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let mut held = config_map("held", &[], &[]);
    held.metadata.finalizers = Some(vec!["strata.dev/cleanup".into()]);
    let created = api.create(&PostParams::default(), &held).await?;

    let response = api.delete("held", &DeleteParams::default()).await?;
    let terminating = response
        .left()
        .ok_or_else(|| anyhow::anyhow!("expected the object back"))?;
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert_eq!(
        terminating.metadata.generation,
        Some(created.metadata.generation.unwrap_or_default() + 1)
    );
    assert!(api.get("held").await?.metadata.deletion_timestamp.is_some());

    let repeat = api.delete("held", &DeleteParams::default()).await?;
    assert!(
        repeat.is_left(),
        "deleting again while terminating changes nothing"
    );

    let release = json!({"metadata": {"finalizers": null}});
    api.patch("held", &PatchParams::default(), &Patch::Merge(release))
        .await?;
    assert_eq!(
        api_error(api.get("held").await),
        Some((404, "NotFound".into()))
    );
    Ok(())
}

fn owned_by(name: &str, owner: &Widget) -> anyhow::Result<ConfigMap> {
    let mut cm = config_map(name, &[], &[]);
    let reference = owner
        .controller_owner_ref(&())
        .ok_or_else(|| anyhow::anyhow!("owner without uid"))?;
    cm.metadata.owner_references = Some(vec![reference]);
    Ok(cm)
}

#[tokio::test]
async fn deleting_an_owner_collects_its_dependents() -> anyhow::Result<()> {
    let server = server();
    let widgets: Api<Widget> = Api::namespaced(server.client(), "default");
    let config_maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let owner = widgets
        .create(&PostParams::default(), &widget("owner", 1))
        .await?;
    config_maps
        .create(&PostParams::default(), &owned_by("owned", &owner)?)
        .await?;
    config_maps
        .create(&PostParams::default(), &config_map("independent", &[], &[]))
        .await?;

    widgets.delete("owner", &DeleteParams::background()).await?;
    assert_eq!(
        api_error(config_maps.get("owned").await),
        Some((404, "NotFound".into()))
    );
    assert!(config_maps.get("independent").await.is_ok());
    Ok(())
}

#[tokio::test]
async fn owner_with_finalizer_collects_dependents_only_once_released() -> anyhow::Result<()> {
    let server = server();
    let widgets: Api<Widget> = Api::namespaced(server.client(), "default");
    let config_maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let mut guarded = widget("owner", 1);
    guarded.metadata.finalizers = Some(vec!["strata.dev/cleanup".into()]);
    let owner = widgets.create(&PostParams::default(), &guarded).await?;
    config_maps
        .create(&PostParams::default(), &owned_by("owned", &owner)?)
        .await?;

    widgets.delete("owner", &DeleteParams::default()).await?;
    assert!(
        config_maps.get("owned").await.is_ok(),
        "owner still exists while its finalizer runs"
    );

    let release = json!({"metadata": {"finalizers": []}});
    widgets
        .patch("owner", &PatchParams::default(), &Patch::Merge(release))
        .await?;
    assert_eq!(
        api_error(widgets.get("owner").await),
        Some((404, "NotFound".into()))
    );
    assert_eq!(
        api_error(config_maps.get("owned").await),
        Some((404, "NotFound".into()))
    );
    Ok(())
}

#[tokio::test]
async fn orphan_propagation_keeps_dependents_without_owner_reference() -> anyhow::Result<()> {
    let server = server();
    let widgets: Api<Widget> = Api::namespaced(server.client(), "default");
    let config_maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let owner = widgets
        .create(&PostParams::default(), &widget("owner", 1))
        .await?;
    config_maps
        .create(&PostParams::default(), &owned_by("owned", &owner)?)
        .await?;

    widgets.delete("owner", &DeleteParams::orphan()).await?;
    let orphan = config_maps.get("owned").await?;
    assert_eq!(orphan.metadata.owner_references, None);
    Ok(())
}

#[tokio::test]
async fn delete_precondition_on_uid_conflicts() -> anyhow::Result<()> {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &config_map("cm", &[], &[]))
        .await?;
    let params = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: Some("not-the-uid".into()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    assert_eq!(
        api_error(api.delete("cm", &params).await),
        Some((409, "Conflict".into()))
    );
    assert!(api.get("cm").await.is_ok());
    Ok(())
}

#[tokio::test]
async fn a_dependent_created_after_its_owner_went_is_collected_by_the_next_pass()
-> anyhow::Result<()> {
    let server = server();
    let widgets: Api<Widget> = Api::namespaced(server.client(), "default");
    let config_maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let owner = widgets
        .create(&PostParams::default(), &widget("owner", 1))
        .await?;
    widgets.delete("owner", &DeleteParams::background()).await?;
    // An operator's apply that raced the deletion.
    config_maps
        .create(&PostParams::default(), &owned_by("late", &owner)?)
        .await?;
    config_maps
        .create(&PostParams::default(), &config_map("independent", &[], &[]))
        .await?;

    assert_eq!(server.collect_orphans(), 1);
    assert_eq!(
        api_error(config_maps.get("late").await),
        Some((404, "NotFound".into()))
    );
    assert!(config_maps.get("independent").await.is_ok());
    assert_eq!(server.collect_orphans(), 0, "nothing else to collect");
    Ok(())
}
