//! Watches: raw `Api::watch`, kube-runtime `watcher` + `reflector`, and a real `Controller`.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Resource, ResourceExt,
    api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams},
    runtime::{
        Controller, WatchStreamExt,
        controller::Action,
        reflector,
        watcher::{self, Event},
    },
};
use serde_json::json;
use strata_test_apiserver::{Fault, TestApiServer, Verb};

use crate::support::{WAIT, config_map, server, within};

fn event_summary(event: &WatchEvent<ConfigMap>) -> String {
    match event {
        WatchEvent::Added(o) => format!("ADDED {}", o.name_any()),
        WatchEvent::Modified(o) => format!("MODIFIED {}", o.name_any()),
        WatchEvent::Deleted(o) => format!("DELETED {}", o.name_any()),
        WatchEvent::Bookmark(b) => format!("BOOKMARK {}", b.metadata.resource_version),
        WatchEvent::Error(e) => format!("ERROR {}", e.code),
    }
}

async fn merge(
    api: &Api<ConfigMap>,
    name: &str,
    patch: serde_json::Value,
) -> anyhow::Result<ConfigMap> {
    Ok(api
        .patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await?)
}

#[tokio::test]
async fn raw_watch_resumes_after_list_version_and_filters_by_label() -> anyhow::Result<()> {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(
        &PostParams::default(),
        &config_map("before", &[], &[("app", "web")]),
    )
    .await?;
    let list_rv = api
        .list(&ListParams::default())
        .await?
        .metadata
        .resource_version
        .unwrap_or_default();

    let params = WatchParams::default().labels("app=web").timeout(1);
    let stream = api.watch(&params, &list_rv).await?;
    api.create(
        &PostParams::default(),
        &config_map("a", &[], &[("app", "web")]),
    )
    .await?;
    api.create(
        &PostParams::default(),
        &config_map("other", &[], &[("app", "db")]),
    )
    .await?;
    merge(&api, "a", json!({"data": {"k": "v"}})).await?;
    merge(&api, "a", json!({"metadata": {"labels": {"app": "db"}}})).await?;
    merge(
        &api,
        "other",
        json!({"metadata": {"labels": {"app": "web"}}}),
    )
    .await?;
    api.delete("other", &DeleteParams::default()).await?;

    let events: Vec<String> =
        within(stream.map_ok(|e| event_summary(&e)).try_collect::<Vec<_>>()).await??;
    let final_rv = server.resource_version();
    assert_eq!(
        events,
        [
            "ADDED a".to_owned(),
            "MODIFIED a".to_owned(),
            "DELETED a".to_owned(),
            "ADDED other".to_owned(),
            "DELETED other".to_owned(),
            format!("BOOKMARK {final_rv}"),
        ],
        "label changes look like add/delete; the stream ends with a bookmark at timeoutSeconds"
    );
    Ok(())
}

#[tokio::test]
async fn watch_from_compacted_version_gets_410_in_stream() -> anyhow::Result<()> {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &config_map("a", &[], &[]))
        .await?;
    server.compact_history();
    let stream = api.watch(&WatchParams::default().timeout(1), "1").await?;
    let events: Vec<String> =
        within(stream.map_ok(|e| event_summary(&e)).try_collect::<Vec<_>>()).await??;
    assert_eq!(events, ["ERROR 410"]);
    Ok(())
}

/// Collects watcher events into "kind name" strings until `done` says stop.
async fn watch_until(
    stream: impl futures::Stream<Item = Result<Event<ConfigMap>, watcher::Error>>,
    mut on_event: impl FnMut(&Event<ConfigMap>) -> bool,
) -> anyhow::Result<()> {
    let mut stream = std::pin::pin!(stream);
    within(async {
        while let Some(event) = stream.try_next().await? {
            if on_event(&event) {
                return Ok(());
            }
        }
        Err(anyhow::anyhow!("watch stream ended early"))
    })
    .await?
}

#[tokio::test]
async fn watcher_and_reflector_see_add_modify_delete() -> anyhow::Result<()> {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &config_map("existing", &[], &[]))
        .await?;

    let (reader, writer) = reflector::store::<ConfigMap>();
    let stream = reflector(
        writer,
        watcher::watcher(api.clone(), watcher::Config::default()),
    );
    let mut stream = Box::pin(stream);

    let mut seen = Vec::new();
    let mut record = |event: &Event<ConfigMap>| match event {
        Event::InitApply(o) => seen.push(format!("init {}", o.name_any())),
        Event::Apply(o) => seen.push(format!("apply {} {:?}", o.name_any(), o.data)),
        Event::Delete(o) => seen.push(format!("delete {}", o.name_any())),
        Event::Init | Event::InitDone => {}
    };
    watch_until(&mut stream, |e| {
        record(e);
        matches!(e, Event::InitDone)
    })
    .await?;
    assert_eq!(reader.state().len(), 1);

    api.create(&PostParams::default(), &config_map("new", &[], &[]))
        .await?;
    merge(&api, "new", json!({"data": {"k": "v"}})).await?;
    api.delete("existing", &DeleteParams::default()).await?;
    watch_until(&mut stream, |e| {
        record(e);
        matches!(e, Event::Delete(_))
    })
    .await?;

    assert_eq!(
        seen,
        [
            "init existing".to_owned(),
            "apply new None".to_owned(),
            "apply new Some({\"k\": \"v\"})".to_owned(),
            "delete existing".to_owned(),
        ]
    );
    let names: Vec<String> = reader.state().iter().map(|o| o.name_any()).collect();
    assert_eq!(names, ["new"]);
    assert_eq!(server.count(Verb::List, "configmaps"), 1);
    assert_eq!(server.count(Verb::Watch, "configmaps"), 1);
    Ok(())
}

#[tokio::test]
async fn streaming_list_watcher_gets_initial_events_and_updates() -> anyhow::Result<()> {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &config_map("existing", &[], &[]))
        .await?;
    let config = watcher::Config::default().streaming_lists();
    let mut stream = Box::pin(watcher::watcher(api.clone(), config));

    let mut initial = Vec::new();
    watch_until(&mut stream, |e| {
        if let Event::InitApply(o) = e {
            initial.push(o.name_any());
        }
        matches!(e, Event::InitDone)
    })
    .await?;
    assert_eq!(initial, ["existing"]);
    assert_eq!(
        server.count(Verb::List, "configmaps"),
        0,
        "streaming lists never LIST"
    );

    api.create(&PostParams::default(), &config_map("later", &[], &[]))
        .await?;
    watch_until(
        &mut stream,
        |e| matches!(e, Event::Apply(o) if o.name_any() == "later"),
    )
    .await?;
    Ok(())
}

type WatcherItem = Result<Event<ConfigMap>, watcher::Error>;

/// Receives forwarded watcher items until one satisfies `done`.
async fn receive_until(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<WatcherItem>,
    done: impl Fn(&WatcherItem) -> bool,
) -> anyhow::Result<()> {
    within(async {
        while let Some(item) = rx.recv().await {
            if done(&item) {
                return Ok(());
            }
        }
        Err(anyhow::anyhow!("watcher stopped"))
    })
    .await?
}

#[tokio::test]
async fn watcher_relists_after_history_compaction() -> anyhow::Result<()> {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let stream = watcher::watcher(api, watcher::Config::default().timeout(1)).default_backoff();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(item) = stream.next().await {
            if tx.send(item).is_err() {
                break;
            }
        }
    });
    receive_until(&mut rx, |item| matches!(item, Ok(Event::InitDone))).await?;

    // Keep the watcher disconnected while history moves on and gets compacted away.
    server.inject(Fault::status(503).verb(Verb::Watch).always());
    within(async {
        while server.count(Verb::Watch, "configmaps") < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await?;
    server.upsert(&config_map_in_default("while-away"))?;
    server.compact_history();
    server.clear_faults();

    receive_until(
        &mut rx,
        |item| matches!(item, Ok(Event::InitApply(o)) if o.name_any() == "while-away"),
    )
    .await?;
    assert_eq!(
        server.count(Verb::List, "configmaps"),
        2,
        "410 Gone forced exactly one relist"
    );
    driver.abort();
    Ok(())
}

fn config_map_in_default(name: &str) -> ConfigMap {
    let mut cm = config_map(name, &[], &[]);
    cm.metadata.namespace = Some("default".into());
    cm
}

#[derive(Debug, thiserror::Error)]
#[error(transparent)]
struct ReconcileError(#[from] kube::Error);

/// Mirrors the data of every ConfigMap labelled `mirror=yes` into `<name>-mirror`, owned by it.
async fn reconcile(
    source: Arc<ConfigMap>,
    client: Arc<kube::Client>,
) -> Result<Action, ReconcileError> {
    let namespace = source.namespace().unwrap_or_default();
    let api: Api<ConfigMap> = Api::namespaced((*client).clone(), &namespace);
    let mirror = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": format!("{}-mirror", source.name_any()),
            "ownerReferences": [source.controller_owner_ref(&())],
        },
        "data": source.data.clone().unwrap_or_default(),
    });
    let name = format!("{}-mirror", source.name_any());
    api.patch(
        &name,
        &PatchParams::apply("mirror-controller").force(),
        &Patch::Apply(mirror),
    )
    .await?;
    Ok(Action::await_change())
}

fn error_policy(_: Arc<ConfigMap>, _: &ReconcileError, _: Arc<kube::Client>) -> Action {
    Action::requeue(Duration::from_millis(100))
}

fn mirror_data(server: &TestApiServer, name: &str) -> Option<BTreeMap<String, String>> {
    server
        .get_typed::<ConfigMap>("default", name)
        .and_then(|cm| cm.data)
}

#[tokio::test]
async fn controller_reconciles_on_change_and_owned_objects_are_collected() -> anyhow::Result<()> {
    let server = server();
    let client = server.client();
    let sources: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let config = watcher::Config::default().labels("mirror=yes");
    let controller = Controller::new(sources.clone(), config)
        .owns(sources.clone(), watcher::Config::default())
        .run(reconcile, error_policy, Arc::new(client.clone()))
        .for_each(|_| futures::future::ready(()));
    let running = tokio::spawn(controller);

    sources
        .create(
            &PostParams::default(),
            &config_map("src", &[("k", "1")], &[("mirror", "yes")]),
        )
        .await?;
    let expect = |v: &str| BTreeMap::from([("k".to_owned(), v.to_owned())]);
    server
        .wait_for::<ConfigMap>(
            "default",
            "src-mirror",
            |cm| cm.data == Some(expect("1")),
            WAIT,
        )
        .await?;

    merge(&sources, "src", json!({"data": {"k": "2"}})).await?;
    server
        .wait_for::<ConfigMap>(
            "default",
            "src-mirror",
            |cm| cm.data == Some(expect("2")),
            WAIT,
        )
        .await?;

    // Another actor edits the owned object: the owns() watch triggers a repair.
    server.modify::<ConfigMap>("default", "src-mirror", |cm| cm.data = None)?;
    server
        .wait_for::<ConfigMap>(
            "default",
            "src-mirror",
            |cm| cm.data == Some(expect("2")),
            WAIT,
        )
        .await?;
    assert_eq!(mirror_data(&server, "src-mirror"), Some(expect("2")));

    sources.delete("src", &DeleteParams::default()).await?;
    server
        .wait_for_deletion::<ConfigMap>("default", "src-mirror", WAIT)
        .await?;
    running.abort();
    Ok(())
}
