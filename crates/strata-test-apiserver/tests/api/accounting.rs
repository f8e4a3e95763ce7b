//! Request log in RBAC terms, and fault injection.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Resource,
    api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams},
    runtime::events::{Event, EventType, Recorder, Reporter},
};
use serde_json::json;
use strata_test_apiserver::{Fault, RequestRecord, Verb};

use crate::support::{Widget, api_error, config_map, server, widget};

fn summary(records: &[RequestRecord]) -> Vec<String> {
    records.iter().map(ToString::to_string).collect()
}

#[tokio::test]
async fn every_request_is_logged_with_its_rbac_verb() -> anyhow::Result<()> {
    let server = server();
    let widgets: Api<Widget> = Api::namespaced(server.client(), "default");
    let config_maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");

    widgets
        .create(&PostParams::default(), &widget("w", 1))
        .await?;
    widgets.get("w").await?;
    widgets.list(&ListParams::default()).await?;
    let status = Patch::Merge(json!({"status": {"readyReplicas": 1}}));
    widgets
        .patch_status("w", &PatchParams::default(), &status)
        .await?;
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    config_maps
        .patch(
            "c",
            &PatchParams::apply("op").force(),
            &Patch::Apply(config),
        )
        .await?;
    config_maps.delete("c", &DeleteParams::default()).await?;
    let _ = config_maps.get("c").await;

    assert_eq!(
        summary(&server.requests()),
        [
            "create widgets.test.strata.dev -n default",
            "get widgets.test.strata.dev -n default w",
            "list widgets.test.strata.dev -n default",
            "patch widgets.test.strata.dev/status -n default w",
            "patch configmaps -n default c",
            "delete configmaps -n default c",
            "get configmaps -n default c",
        ]
    );
    let apply = &server.requests()[4];
    assert!(apply.apply && apply.field_manager.as_deref() == Some("op"));
    assert_eq!(server.count(Verb::Patch, "widgets/status"), 1);
    assert_eq!(
        server.count(Verb::Patch, "widgets"),
        0,
        "status is its own RBAC resource"
    );
    assert_eq!(server.count(Verb::Get, "configmaps"), 1);
    assert_eq!(server.writes().len(), 4);
    assert_eq!(server.lists().len(), 1);

    server.reset_requests();
    assert!(server.requests().is_empty());
    Ok(())
}

#[tokio::test]
async fn event_recorder_writes_events_k8s_io_and_can_be_excluded() -> anyhow::Result<()> {
    let server = server();
    let widgets: Api<Widget> = Api::namespaced(server.client(), "default");
    let owner = widgets
        .create(&PostParams::default(), &widget("w", 1))
        .await?;
    server.reset_requests();

    let reporter = Reporter {
        controller: "strata-test".into(),
        instance: None,
    };
    let recorder = Recorder::new(server.client(), reporter);
    let event = Event {
        type_: EventType::Normal,
        reason: "Reconciled".into(),
        note: Some("all good".into()),
        action: "Reconcile".into(),
        secondary: None,
    };
    recorder.publish(&event, &owner.object_ref(&())).await?;
    recorder.publish(&event, &owner.object_ref(&())).await?;

    assert_eq!(server.count(Verb::Create, "events.events.k8s.io"), 1);
    assert_eq!(
        server.count(Verb::Patch, "events.events.k8s.io"),
        1,
        "the repeat becomes a series patch"
    );
    assert_eq!(
        server.count(Verb::Create, "events.events.k8s.io") + server.count(Verb::Create, "events"),
        2,
        "a plain plural matches any group"
    );
    assert!(server.writes_excluding(&["events"]).is_empty());
    assert_eq!(server.objects("events.events.k8s.io").len(), 1);
    Ok(())
}

#[tokio::test]
async fn injected_500_fails_once_then_requests_succeed() -> anyhow::Result<()> {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &config_map("cm", &[], &[]))
        .await?;
    server.inject(
        Fault::status(500)
            .verb(Verb::Get)
            .resource("configmaps")
            .name("cm"),
    );

    assert_eq!(
        api_error(api.get("cm").await),
        Some((500, "InternalError".into()))
    );
    assert!(api.get("cm").await.is_ok());
    assert_eq!(
        server.count(Verb::Get, "configmaps"),
        2,
        "failed requests are logged too"
    );
    assert!(server.active_faults().is_empty());
    Ok(())
}

#[tokio::test]
async fn injected_conflict_does_not_touch_state() -> anyhow::Result<()> {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(
        &PostParams::default(),
        &config_map("cm", &[("a", "1")], &[]),
    )
    .await?;
    server.inject(Fault::conflict().verb(Verb::Patch).always());

    let patch = Patch::Merge(json!({"data": {"a": "2"}}));
    for _ in 0..2 {
        let result = api.patch("cm", &PatchParams::default(), &patch).await;
        assert_eq!(api_error(result), Some((409, "Conflict".into())));
    }
    assert_eq!(
        api.get("cm")
            .await?
            .data
            .unwrap_or_default()
            .get("a")
            .map(String::as_str),
        Some("1")
    );
    server.clear_faults();
    assert!(
        api.patch("cm", &PatchParams::default(), &patch)
            .await
            .is_ok()
    );
    Ok(())
}

#[tokio::test]
async fn injected_delay_slows_matching_requests_only() -> anyhow::Result<()> {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    server.inject(
        Fault::delay(Duration::from_millis(300))
            .verb(Verb::List)
            .always(),
    );

    let started = Instant::now();
    api.list(&ListParams::default()).await?;
    assert!(started.elapsed() >= Duration::from_millis(300));

    let impatient =
        tokio::time::timeout(Duration::from_millis(50), api.list(&ListParams::default())).await;
    assert!(
        impatient.is_err(),
        "a client timeout shorter than the delay fires"
    );

    let started = Instant::now();
    let _ = api.get("missing").await;
    assert!(started.elapsed() < Duration::from_millis(300));
    Ok(())
}
