//! Watch streams: newline-delimited `WatchEvent` JSON replayed from the resource history.
//!
//! A watch remembers the last resourceVersion it delivered. Whenever the global version
//! changes it scans the resource's history for newer events, filters them through the
//! selection and sends them. Objects that start or stop matching a label or field
//! selector arrive as ADDED or DELETED, like from the real watch cache.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use bytes::Bytes;
use futures::Stream;
use serde_json::{Value, json};
use tokio::{sync::watch, time::Instant};

use crate::{
    kinds::ResourceInfo,
    lock,
    read::{Selection, Shape},
    status::ApiError,
    store::{Change, HistoryEvent, State},
};

/// Where a watch starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Start {
    /// After this resourceVersion.
    After(u64),
    /// With synthetic ADDED events for the current state (`resourceVersion` unset or "0").
    CurrentState,
}

/// A parsed watch request.
#[derive(Clone, Debug)]
pub(crate) struct WatchRequest {
    pub(crate) info: ResourceInfo,
    pub(crate) selection: Selection,
    pub(crate) start: Start,
    pub(crate) bookmarks: bool,
    /// `sendInitialEvents=true`: end the initial state with an `initial-events-end` bookmark.
    pub(crate) send_initial_events: bool,
    pub(crate) timeout: Duration,
    pub(crate) shape: Shape,
}

impl WatchRequest {
    /// An event's object in the requested shape.
    fn render(&self, object: &Value) -> Value {
        self.shape.render(object)
    }
}

struct Watcher {
    state: Arc<Mutex<State>>,
    request: WatchRequest,
    cursor: u64,
    changes: watch::Receiver<u64>,
    deadline: Instant,
    pending: Option<Bytes>,
    finished: bool,
}

/// Starts a watch; the returned stream ends at the timeout or when the server is dropped.
pub(crate) fn start(
    state: Arc<Mutex<State>>,
    request: WatchRequest,
) -> impl Stream<Item = Bytes> + Send {
    let deadline = Instant::now() + request.timeout;
    let (changes, cursor, pending, finished) = {
        let guard = lock(&state);
        let changes = guard.subscribe();
        let now = guard.resource_version();
        let oldest = guard
            .store(&request.info.key())
            .map_or(0, |s| s.oldest_watchable);
        match request.start {
            Start::After(rv) if rv < oldest => {
                let gone = ApiError::gone(format!("too old resource version: {rv} ({oldest})"));
                let line = event_line("ERROR", &gone.to_status());
                (changes, now, Some(Bytes::from(line)), true)
            }
            Start::After(rv) if !request.send_initial_events => (changes, rv, None, false),
            _ => (
                changes,
                now,
                Some(initial_state(&guard, &request, now)),
                false,
            ),
        }
    };
    let watcher = Watcher {
        state,
        request,
        cursor,
        changes,
        deadline,
        pending,
        finished,
    };
    futures::stream::unfold(watcher, next_chunk)
}

/// ADDED for every selected object, then the initial-events-end bookmark if asked for.
fn initial_state(state: &State, request: &WatchRequest, now: u64) -> Bytes {
    let mut out = String::new();
    if let Some(store) = state.store(&request.info.key()) {
        for object in store
            .objects
            .values()
            .filter(|o| request.selection.matches(o))
        {
            out.push_str(&event_line("ADDED", &request.render(object)));
        }
    }
    if request.send_initial_events && request.bookmarks {
        out.push_str(&bookmark_line(&request.info, now, true));
    }
    Bytes::from(out)
}

async fn next_chunk(mut watcher: Watcher) -> Option<(Bytes, Watcher)> {
    loop {
        if let Some(chunk) = watcher.pending.take().filter(|c| !c.is_empty()) {
            return Some((chunk, watcher));
        }
        if watcher.finished {
            return None;
        }
        watcher.changes.borrow_and_update();
        let (chunk, now) = {
            let guard = lock(&watcher.state);
            let chunk = new_events(&guard, &watcher.request, watcher.cursor);
            (chunk, guard.resource_version())
        };
        watcher.cursor = now;
        if !chunk.is_empty() {
            return Some((Bytes::from(chunk), watcher));
        }
        match tokio::time::timeout_at(watcher.deadline, watcher.changes.changed()).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => return None,
            Err(_) => {
                watcher.finished = true;
                if watcher.request.bookmarks {
                    let rv = lock(&watcher.state).resource_version();
                    watcher.pending =
                        Some(Bytes::from(bookmark_line(&watcher.request.info, rv, false)));
                }
            }
        }
    }
}

/// Lines for every history event after `cursor` that the watch should see.
fn new_events(state: &State, request: &WatchRequest, cursor: u64) -> String {
    let Some(store) = state.store(&request.info.key()) else {
        return String::new();
    };
    let first = store.history.partition_point(|e| e.rv <= cursor);
    store.history[first..]
        .iter()
        .filter_map(|event| visible(event, &request.selection))
        .map(|(kind, object)| event_line(kind, &request.render(object)))
        .collect()
}

/// How an event looks through a selection: objects entering it are ADDED, leaving it DELETED.
fn visible<'a>(
    event: &'a HistoryEvent,
    selection: &Selection,
) -> Option<(&'static str, &'a Value)> {
    let now = selection.matches(&event.object);
    let before = event
        .previous
        .as_ref()
        .is_some_and(|p| selection.matches(p));
    let kind = match (event.change, before, now) {
        (Change::Added, _, true) => "ADDED",
        (Change::Deleted, _, true) => "DELETED",
        (Change::Modified, true, true) => "MODIFIED",
        (Change::Modified, false, true) => "ADDED",
        (Change::Modified, true, false) => "DELETED",
        _ => return None,
    };
    Some((kind, &event.object))
}

fn event_line(kind: &str, object: &Value) -> String {
    format!("{}\n", json!({"type": kind, "object": object}))
}

fn bookmark_line(info: &ResourceInfo, rv: u64, initial_events_end: bool) -> String {
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if initial_events_end {
        metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    event_line(
        "BOOKMARK",
        &json!({"apiVersion": info.api_version(), "kind": info.kind, "metadata": metadata}),
    )
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;
    use crate::selector::LabelSelector;

    fn event(change: Change, previous: Option<&str>, now: &str) -> HistoryEvent {
        let obj = |app: &str| json!({"metadata": {"name": "a", "namespace": "ns", "labels": {"app": app}}});
        HistoryEvent {
            rv: 5,
            change,
            object: obj(now),
            previous: previous.map(obj),
        }
    }

    #[rstest]
    #[case::added_matching(event(Change::Added, None, "web"), Some("ADDED"))]
    #[case::added_other(event(Change::Added, None, "db"), None)]
    #[case::modified_still_matching(event(Change::Modified, Some("web"), "web"), Some("MODIFIED"))]
    #[case::modified_into_selection(event(Change::Modified, Some("db"), "web"), Some("ADDED"))]
    #[case::modified_out_of_selection(event(Change::Modified, Some("web"), "db"), Some("DELETED"))]
    #[case::modified_outside(event(Change::Modified, Some("db"), "db"), None)]
    #[case::deleted_matching(event(Change::Deleted, None, "web"), Some("DELETED"))]
    fn selection_turns_label_changes_into_add_and_delete(
        #[case] e: HistoryEvent,
        #[case] expected: Option<&str>,
    ) -> Result<(), crate::selector::SelectorError> {
        let selection = Selection {
            namespace: Some("ns".into()),
            labels: LabelSelector::parse("app=web")?,
            fields: Default::default(),
        };
        assert_eq!(visible(&e, &selection).map(|(k, _)| k), expected);
        Ok(())
    }

    #[test]
    fn bookmark_parses_as_kube_watch_event() -> Result<(), serde_json::Error> {
        let info = ResourceInfo::new("", "v1", "ConfigMap", "configmaps");
        let line = bookmark_line(&info, 7, true);
        let event: kube::core::WatchEvent<k8s_openapi::api::core::v1::ConfigMap> =
            serde_json::from_str(line.trim())?;
        match event {
            kube::core::WatchEvent::Bookmark(b) => {
                assert_eq!(b.metadata.resource_version, "7");
                assert!(
                    b.metadata
                        .annotations
                        .contains_key("k8s.io/initial-events-end")
                );
            }
            _ => return Err(serde::de::Error::custom("expected a bookmark")),
        }
        Ok(())
    }
}
