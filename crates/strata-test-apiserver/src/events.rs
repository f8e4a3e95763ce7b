//! One Event, two APIs: the real API server stores `events.k8s.io/v1` and core `v1`
//! Events as one resource, so an Event the operators publish through
//! `events.k8s.io` is what `kubectl describe` lists through core `v1` (with a field
//! selector on `involvedObject`). This server keeps two stores, and mirrors every
//! `events.k8s.io` write into the core one, converted field by field as the API
//! server's conversion does.

use serde_json::{Map, Value, json};

use crate::kinds::ResourceKey;

/// Whether `key` is `events.k8s.io` Events.
pub(crate) fn is_events_v1(key: &ResourceKey) -> bool {
    key.group == "events.k8s.io" && key.plural == "events"
}

/// The core `v1` Events' key.
pub(crate) fn core_key() -> ResourceKey {
    ResourceKey {
        group: String::new(),
        plural: "events".to_owned(),
    }
}

/// The core `v1` view of an `events.k8s.io/v1` Event: `regarding` is
/// `involvedObject`, `note` is `message`, `reportingController` is the source
/// component, and the series count or the deprecated fields give the count and
/// timestamps.
pub(crate) fn core_view(event: &Value) -> Value {
    let event_time = event.get("eventTime").cloned().unwrap_or(Value::Null);
    let first = event
        .get("deprecatedFirstTimestamp")
        .filter(|value| !value.is_null())
        .cloned()
        .unwrap_or_else(|| event_time.clone());
    let last = event
        .pointer("/series/lastObservedTime")
        .or_else(|| event.get("deprecatedLastTimestamp"))
        .filter(|value| !value.is_null())
        .cloned()
        .unwrap_or_else(|| event_time.clone());
    let count = event
        .pointer("/series/count")
        .or_else(|| event.get("deprecatedCount"))
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let mut metadata = event.get("metadata").cloned().unwrap_or_else(|| json!({}));
    if let Some(metadata) = metadata.as_object_mut() {
        metadata.remove("resourceVersion");
        metadata.remove("managedFields");
    }
    let mut core = Map::new();
    core.insert("apiVersion".to_owned(), json!("v1"));
    core.insert("kind".to_owned(), json!("Event"));
    core.insert("metadata".to_owned(), metadata);
    for (from, to) in [
        ("regarding", "involvedObject"),
        ("related", "related"),
        ("reason", "reason"),
        ("note", "message"),
        ("type", "type"),
        ("action", "action"),
        ("eventTime", "eventTime"),
        ("reportingController", "reportingComponent"),
        ("reportingInstance", "reportingInstance"),
    ] {
        if let Some(value) = event.get(from).filter(|value| !value.is_null()) {
            core.insert(to.to_owned(), value.clone());
        }
    }
    if let Some(controller) = event.get("reportingController") {
        core.insert("source".to_owned(), json!({"component": controller}));
    }
    core.insert("firstTimestamp".to_owned(), first);
    core.insert("lastTimestamp".to_owned(), last);
    core.insert("count".to_owned(), json!(count));
    Value::Object(core)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_events_v1_event_reads_as_a_core_event() {
        let event = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "simple-trino.1", "namespace": "default", "resourceVersion": "7"},
            "eventTime": "2026-11-25T10:00:00.000000Z",
            "series": {"count": 3, "lastObservedTime": "2026-11-25T10:05:00.000000Z"},
            "reportingController": "trino-operator", "reportingInstance": "trino-operator-0",
            "action": "StatusChange", "reason": "SecretMissing", "type": "Warning",
            "note": "the Secret default/pg does not exist",
            "regarding": {"kind": "TrinoCluster", "name": "simple-trino", "namespace": "default", "uid": "u"}
        });
        let core = core_view(&event);
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["involvedObject"]["kind"], "TrinoCluster");
        assert_eq!(core["message"], "the Secret default/pg does not exist");
        assert_eq!(core["source"]["component"], "trino-operator");
        assert_eq!(core["count"], 3);
        assert_eq!(core["firstTimestamp"], "2026-11-25T10:00:00.000000Z");
        assert_eq!(core["lastTimestamp"], "2026-11-25T10:05:00.000000Z");
        assert!(core["metadata"].get("resourceVersion").is_none());
    }
}
