//! Create, get, list, replace and delete through `kube::Api`.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use strata_test_apiserver::TestApiServer;

use crate::support::{Widget, WidgetStatus, api_error, config_map, rv, server, widget};

#[tokio::test]
async fn create_get_list_delete_round_trip() -> anyhow::Result<()> {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let created = api
        .create(
            &PostParams::default(),
            &config_map("settings", &[("a", "1")], &[]),
        )
        .await?;
    let meta = &created.metadata;
    assert_eq!(meta.namespace.as_deref(), Some("default"));
    assert!(meta.uid.as_deref().is_some_and(|u| !u.is_empty()));
    assert!(meta.creation_timestamp.is_some());
    assert_eq!(meta.generation, Some(1));
    assert!(rv(meta)? > 0);

    let fetched = api.get("settings").await?;
    assert_eq!(fetched, created);

    let list = api.list(&ListParams::default()).await?;
    assert_eq!(list.items, vec![created.clone()]);
    let list_rv: u64 = list
        .metadata
        .resource_version
        .as_deref()
        .unwrap_or_default()
        .parse()?;
    assert_eq!(list_rv, rv(meta)?);

    let again = api
        .create(&PostParams::default(), &config_map("settings", &[], &[]))
        .await;
    assert_eq!(api_error(again), Some((409, "AlreadyExists".into())));

    let deleted = api.delete("settings", &DeleteParams::default()).await?;
    assert!(deleted.is_right(), "immediate delete answers with a Status");
    assert_eq!(
        api_error(api.get("settings").await),
        Some((404, "NotFound".into()))
    );
    assert_eq!(
        api_error(api.delete("settings", &DeleteParams::default()).await),
        Some((404, "NotFound".into()))
    );
    Ok(())
}

#[tokio::test]
async fn generate_name_appends_a_random_suffix() -> anyhow::Result<()> {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let mut cm = config_map("", &[], &[]);
    cm.metadata.name = None;
    cm.metadata.generate_name = Some("job-".into());
    let first = api.create(&PostParams::default(), &cm).await?;
    let second = api.create(&PostParams::default(), &cm).await?;
    let first_name = first.metadata.name.unwrap_or_default();
    assert!(
        first_name.starts_with("job-") && first_name.len() == 9,
        "{first_name}"
    );
    assert_ne!(Some(first_name), second.metadata.name);
    Ok(())
}

#[tokio::test]
async fn unregistered_resource_is_404_with_status() -> anyhow::Result<()> {
    let server = TestApiServer::new();
    let api: Api<Widget> = Api::namespaced(server.client(), "default");
    assert_eq!(
        api_error(api.get("w").await),
        Some((404, "NotFound".into()))
    );
    assert_eq!(
        api_error(api.list(&ListParams::default()).await),
        Some((404, "NotFound".into()))
    );
    Ok(())
}

#[tokio::test]
async fn replace_with_stale_resource_version_conflicts() -> anyhow::Result<()> {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let original = api
        .create(
            &PostParams::default(),
            &config_map("cm", &[("a", "1")], &[]),
        )
        .await?;

    let mut fresh = original.clone();
    fresh.data = Some([("a".to_owned(), "2".to_owned())].into());
    let replaced = api.replace("cm", &PostParams::default(), &fresh).await?;
    assert!(rv(&replaced.metadata)? > rv(&original.metadata)?);

    let mut stale = original.clone();
    stale.data = Some([("a".to_owned(), "3".to_owned())].into());
    let result = api.replace("cm", &PostParams::default(), &stale).await;
    assert_eq!(api_error(result), Some((409, "Conflict".into())));
    assert_eq!(api.get("cm").await?.data, fresh.data);
    Ok(())
}

#[tokio::test]
async fn generation_bumps_only_when_spec_changes() -> anyhow::Result<()> {
    let server = server();
    let api: Api<Widget> = Api::namespaced(server.client(), "default");
    let created = api.create(&PostParams::default(), &widget("w", 1)).await?;
    assert_eq!(created.metadata.generation, Some(1));

    let labelled = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await?;
    assert_eq!(labelled.metadata.generation, Some(1));
    assert!(rv(&labelled.metadata)? > rv(&created.metadata)?);

    let status = api
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"readyReplicas": 1}})),
        )
        .await?;
    assert_eq!(status.metadata.generation, Some(1));

    let scaled = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await?;
    assert_eq!(scaled.metadata.generation, Some(2));
    Ok(())
}

#[tokio::test]
async fn status_subresource_isolates_spec_and_status() -> anyhow::Result<()> {
    let server = server();
    let api: Api<Widget> = Api::namespaced(server.client(), "default");
    let mut with_status = widget("w", 1);
    with_status.status = Some(WidgetStatus { ready_replicas: 9 });
    let created = api.create(&PostParams::default(), &with_status).await?;
    assert_eq!(created.status, None, "create drops status");

    let main = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}, "status": {"readyReplicas": 5}})),
        )
        .await?;
    assert_eq!((main.spec.replicas, main.status.clone()), (2, None));

    let status = api
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 7}, "status": {"readyReplicas": 2}})),
        )
        .await?;
    assert_eq!(status.spec.replicas, 2, "status writes ignore spec");
    assert_eq!(status.status, Some(WidgetStatus { ready_replicas: 2 }));

    let mut replaced = status.clone();
    replaced.status = Some(WidgetStatus { ready_replicas: 0 });
    replaced.spec.replicas = 1;
    let after_put = api.replace("w", &PostParams::default(), &replaced).await?;
    assert_eq!(after_put.spec.replicas, 1);
    assert_eq!(
        after_put.status,
        Some(WidgetStatus { ready_replicas: 2 }),
        "PUT of the main resource keeps status"
    );

    replaced.metadata.resource_version = after_put.metadata.resource_version.clone();
    let put_status = api
        .replace_status("w", &PostParams::default(), &replaced)
        .await?;
    assert_eq!(put_status.status, Some(WidgetStatus { ready_replicas: 0 }));
    assert_eq!(put_status.spec.replicas, 1);
    Ok(())
}

#[tokio::test]
async fn cluster_scoped_and_all_namespaces_requests() -> anyhow::Result<()> {
    let server = server();
    let namespaces: Api<Namespace> = Api::all(server.client());
    let mut ns = Namespace::default();
    ns.metadata.name = Some("team-a".into());
    let created = namespaces.create(&PostParams::default(), &ns).await?;
    assert_eq!(created.metadata.namespace, None);
    assert!(namespaces.get("team-a").await.is_ok());

    for namespace in ["team-a", "team-b"] {
        let api: Api<ConfigMap> = Api::namespaced(server.client(), namespace);
        api.create(&PostParams::default(), &config_map("cm", &[], &[]))
            .await?;
    }
    let everywhere: Api<ConfigMap> = Api::all(server.client());
    let found: Vec<Option<String>> = everywhere
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(|cm| cm.metadata.namespace)
        .collect();
    assert_eq!(found, vec![Some("team-a".into()), Some("team-b".into())]);
    Ok(())
}

#[tokio::test]
async fn custom_resources_require_resource_version_on_put() -> anyhow::Result<()> {
    let server = server();
    let widgets: Api<Widget> = Api::namespaced(server.client(), "default");
    let mut created = widgets
        .create(&PostParams::default(), &widget("w", 1))
        .await?;
    created.metadata.resource_version = None;
    let result = widgets.replace("w", &PostParams::default(), &created).await;
    assert_eq!(api_error(result), Some((422, "Invalid".into())));

    let config_maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let mut cm = config_maps
        .create(&PostParams::default(), &config_map("cm", &[], &[]))
        .await?;
    cm.metadata.resource_version = None;
    assert!(
        config_maps
            .replace("cm", &PostParams::default(), &cm)
            .await
            .is_ok(),
        "built-ins allow unconditional updates"
    );
    Ok(())
}

#[tokio::test]
async fn create_with_resource_version_is_rejected() -> anyhow::Result<()> {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let mut cm = config_map("cm", &[], &[]);
    cm.metadata.resource_version = Some("5".into());
    assert_eq!(
        api_error(api.create(&PostParams::default(), &cm).await),
        Some((500, "InternalError".into()))
    );
    Ok(())
}

#[tokio::test]
async fn metadata_only_requests_get_partial_object_metadata() -> anyhow::Result<()> {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(
        &PostParams::default(),
        &config_map("cm", &[("secret", "x")], &[("app", "web")]),
    )
    .await?;
    let meta = api.get_metadata("cm").await?;
    assert_eq!(
        meta.metadata
            .labels
            .unwrap_or_default()
            .get("app")
            .map(String::as_str),
        Some("web")
    );
    let list = api.list_metadata(&ListParams::default()).await?;
    assert_eq!(list.items.len(), 1);
    let raw = server
        .client()
        .request_text(
            http::Request::get("/api/v1/namespaces/default/configmaps/cm")
                .header(
                    http::header::ACCEPT,
                    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
                )
                .body(Vec::new())?,
        )
        .await?;
    assert!(
        !raw.contains("secret"),
        "metadata responses carry no data: {raw}"
    );
    Ok(())
}

#[tokio::test]
async fn secret_string_data_is_stored_as_data() -> anyhow::Result<()> {
    let server = crate::support::server();
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(server.client(), "default");
    let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "s"},
        "data": {"kept": "a2VwdA=="},
        "stringData": {"added": "value"}
    }))?;
    secrets
        .create(&kube::api::PostParams::default(), &secret)
        .await?;
    let stored = secrets.get("s").await?;
    assert!(stored.string_data.is_none(), "stringData is write-only");
    let data = stored.data.unwrap_or_default();
    assert_eq!(data["kept"].0, b"kept");
    assert_eq!(data["added"].0, b"value");
    Ok(())
}

/// Group discovery lists what is registered, so an operator can tell which optional
/// kinds the server serves; a group with nothing registered is 404, as a CRD that is
/// not installed.
#[tokio::test]
async fn group_discovery_lists_the_registered_kinds_and_is_404_for_other_groups()
-> anyhow::Result<()> {
    let server = server();
    let client = server.client();
    let widgets = client
        .list_api_group_resources("test.strata.dev/v1alpha1")
        .await?;
    let served: Vec<(&str, &str, bool)> = widgets
        .resources
        .iter()
        .map(|resource| {
            (
                resource.name.as_str(),
                resource.kind.as_str(),
                resource.namespaced,
            )
        })
        .collect();
    assert_eq!(served, [("widgets", "Widget", true)]);
    assert_eq!(widgets.group_version, "test.strata.dev/v1alpha1");
    match client
        .list_api_group_resources("monitoring.coreos.com/v1")
        .await
    {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 404),
        other => anyhow::bail!("expected 404, got {other:?}"),
    }
    Ok(())
}
