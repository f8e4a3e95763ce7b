//! Server-side apply through `Api::patch` with `Patch::Apply`.

use k8s_openapi::api::{apps::v1::StatefulSet, core::v1::ConfigMap};
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use crate::support::{Widget, WidgetStatus, api_error, rv, server};

fn widget_config(replicas: i32, extra_spec: Value) -> Value {
    let mut config = json!({
        "apiVersion": "test.strata.dev/v1alpha1",
        "kind": "Widget",
        "metadata": {"name": "w", "labels": {"managed": "yes"}},
        "spec": {"replicas": replicas},
    });
    if let (Some(spec), Value::Object(extra)) = (config["spec"].as_object_mut(), extra_spec) {
        spec.extend(extra);
    }
    config
}

fn apply(manager: &str) -> PatchParams {
    PatchParams::apply(manager).force()
}

#[tokio::test]
async fn apply_creates_then_updates_and_no_op_keeps_resource_version() -> anyhow::Result<()> {
    let server = server();
    let api: Api<Widget> = Api::namespaced(server.client(), "default");
    let created = api
        .patch(
            "w",
            &apply("op"),
            &Patch::Apply(widget_config(1, json!({}))),
        )
        .await?;
    assert_eq!(created.metadata.generation, Some(1));
    assert!(created.metadata.uid.is_some());
    assert_eq!(created.spec.replicas, 1);

    let updated = api
        .patch(
            "w",
            &apply("op"),
            &Patch::Apply(widget_config(2, json!({}))),
        )
        .await?;
    assert_eq!(
        (updated.spec.replicas, updated.metadata.generation),
        (2, Some(2))
    );
    assert!(rv(&updated.metadata)? > rv(&created.metadata)?);

    let before = server.resource_version();
    let again = api
        .patch(
            "w",
            &apply("op"),
            &Patch::Apply(widget_config(2, json!({}))),
        )
        .await?;
    assert_eq!(again, updated, "identical apply returns the stored object");
    assert_eq!(
        server.resource_version(),
        before,
        "no-op apply does not bump resourceVersion"
    );
    Ok(())
}

#[tokio::test]
async fn fields_dropped_from_the_applied_config_are_removed() -> anyhow::Result<()> {
    let server = server();
    let api: Api<Widget> = Api::namespaced(server.client(), "default");
    let with_image = widget_config(1, json!({"image": "nginx"}));
    api.patch("w", &apply("op"), &Patch::Apply(with_image))
        .await?;

    let mut without = widget_config(1, json!({}));
    without["metadata"]["labels"] = json!({});
    let after = api.patch("w", &apply("op"), &Patch::Apply(without)).await?;
    assert_eq!(after.spec.image, None);
    assert_eq!(after.metadata.labels, None);
    Ok(())
}

#[tokio::test]
async fn fields_set_by_another_manager_conflict_unless_forced() -> anyhow::Result<()> {
    let server = server();
    let api: Api<Widget> = Api::namespaced(server.client(), "default");
    api.patch(
        "w",
        &apply("operator"),
        &Patch::Apply(widget_config(1, json!({}))),
    )
    .await?;

    let unforced = PatchParams::apply("kubectl");
    let same_value = api
        .patch("w", &unforced, &Patch::Apply(widget_config(1, json!({}))))
        .await;
    assert!(
        same_value.is_ok(),
        "agreeing on a value is shared ownership, not a conflict"
    );

    let conflict = api
        .patch("w", &unforced, &Patch::Apply(widget_config(5, json!({}))))
        .await;
    assert_eq!(api_error(conflict), Some((409, "Conflict".into())));

    let forced = api
        .patch(
            "w",
            &apply("kubectl"),
            &Patch::Apply(widget_config(5, json!({}))),
        )
        .await?;
    assert_eq!(forced.spec.replicas, 5);
    let owners = server.field_owners("widgets.test.strata.dev", "default", "w");
    assert_eq!(
        owners
            .get(".spec.replicas")
            .map(|m| m.iter().cloned().collect::<Vec<_>>()),
        Some(vec!["kubectl".to_owned()])
    );
    Ok(())
}

#[tokio::test]
async fn apply_to_status_changes_only_status() -> anyhow::Result<()> {
    let server = server();
    let api: Api<Widget> = Api::namespaced(server.client(), "default");
    api.patch(
        "w",
        &apply("op"),
        &Patch::Apply(widget_config(1, json!({}))),
    )
    .await?;
    let status_config = json!({
        "apiVersion": "test.strata.dev/v1alpha1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"replicas": 99},
        "status": {"readyReplicas": 1},
    });
    let after = api
        .patch_status("w", &apply("op"), &Patch::Apply(status_config))
        .await?;
    assert_eq!(after.status, Some(WidgetStatus { ready_replicas: 1 }));
    assert_eq!(after.spec.replicas, 1);

    // A later main-resource apply by the same manager must not remove the status it applied.
    let again = api
        .patch(
            "w",
            &apply("op"),
            &Patch::Apply(widget_config(1, json!({}))),
        )
        .await?;
    assert_eq!(again.status, Some(WidgetStatus { ready_replicas: 1 }));
    Ok(())
}

#[tokio::test]
async fn apply_with_mismatched_kind_is_400() -> anyhow::Result<()> {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let wrong_kind = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c"}});
    let result = api
        .patch("c", &apply("op"), &Patch::Apply(wrong_kind))
        .await;
    assert_eq!(api_error(result), Some((400, "BadRequest".into())));
    Ok(())
}

fn statefulset(containers: Value) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web"},
        "spec": {
            "serviceName": "web",
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": containers},
            },
        },
    })
}

fn container_names(sts: &StatefulSet) -> Vec<String> {
    sts.spec
        .template
        .spec
        .iter()
        .flat_map(|p| p.containers.iter().map(|c| c.name.clone()))
        .collect()
}

#[tokio::test]
async fn named_lists_merge_per_item_across_managers() -> anyhow::Result<()> {
    let server = server();
    let api: Api<StatefulSet> = Api::namespaced(server.client(), "default");
    let main = json!([{"name": "main", "image": "app:1"}]);
    api.patch("web", &apply("operator"), &Patch::Apply(statefulset(main)))
        .await?;
    let sidecar = json!([{"name": "sidecar", "image": "proxy:1"}]);
    let both = api
        .patch(
            "web",
            &apply("injector"),
            &Patch::Apply(statefulset(sidecar)),
        )
        .await?;
    assert_eq!(container_names(&both), ["sidecar", "main"]);

    let only_new = json!([{"name": "next", "image": "app:2"}]);
    let after = api
        .patch(
            "web",
            &apply("operator"),
            &Patch::Apply(statefulset(only_new)),
        )
        .await?;
    assert_eq!(
        container_names(&after),
        ["next", "sidecar"],
        "the operator's old container is removed, the sidecar stays"
    );
    Ok(())
}
