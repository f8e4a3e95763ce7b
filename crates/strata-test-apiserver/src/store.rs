//! Object storage: one map per resource, a global resourceVersion and a per-resource history.
//!
//! Every change goes through [`State::put`] or [`State::remove`], which bump the global
//! resourceVersion, append to the watch history and wake watchers. A write that leaves the
//! object unchanged is dropped there, so no verb can accidentally bump the version for a no-op.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::{
    apply::Ownership,
    kinds::{Registry, ResourceInfo, ResourceKey},
    object::{self, set_meta, spec_part},
};

/// What happened to an object, as reported to watchers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    Added,
    Modified,
    Deleted,
}

/// One entry of a resource's watch history.
#[derive(Clone, Debug)]
pub(crate) struct HistoryEvent {
    pub(crate) rv: u64,
    pub(crate) change: Change,
    pub(crate) object: Value,
    /// The object before a modification, so label-filtered watches can see it leave the selection.
    pub(crate) previous: Option<Value>,
}

/// Objects and history of one resource.
#[derive(Debug, Default)]
pub(crate) struct ResourceStore {
    pub(crate) objects: BTreeMap<(String, String), Value>,
    pub(crate) history: Vec<HistoryEvent>,
    /// Watches from a resourceVersion below this answer 410 Gone.
    pub(crate) oldest_watchable: u64,
}

/// The whole server state, guarded by one mutex in [`crate::TestApiServer`].
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) registry: Registry,
    stores: BTreeMap<ResourceKey, ResourceStore>,
    rv: u64,
    counter: u64,
    ownership: BTreeMap<String, Ownership>,
    notify: watch::Sender<u64>,
}

impl State {
    /// An empty state whose resourceVersion starts at 1 like a fresh etcd.
    pub(crate) fn new() -> Self {
        let (notify, _) = watch::channel(1);
        Self {
            registry: Registry::default(),
            stores: BTreeMap::new(),
            rv: 1,
            counter: 0,
            ownership: BTreeMap::new(),
            notify,
        }
    }

    /// Adds a resource definition (replacing an earlier one with the same key).
    pub(crate) fn register(&mut self, info: ResourceInfo) {
        self.stores.entry(info.key()).or_default();
        self.registry.insert(info);
    }

    /// The current global resourceVersion.
    pub(crate) fn resource_version(&self) -> u64 {
        self.rv
    }

    /// A receiver that changes whenever the resourceVersion does; watches wait on it.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.notify.subscribe()
    }

    /// The objects and history of a resource.
    pub(crate) fn store(&self, key: &ResourceKey) -> Option<&ResourceStore> {
        self.stores.get(key)
    }

    /// One stored object.
    pub(crate) fn object(&self, key: &ResourceKey, namespace: &str, name: &str) -> Option<&Value> {
        self.stores
            .get(key)?
            .objects
            .get(&(namespace.to_owned(), name.to_owned()))
    }

    /// Every stored object of every resource, for garbage collection.
    pub(crate) fn all_objects(&self) -> impl Iterator<Item = (&ResourceKey, &Value)> {
        self.stores
            .iter()
            .flat_map(|(key, store)| store.objects.values().map(move |obj| (key, obj)))
    }

    /// The uids of all stored objects.
    pub(crate) fn live_uids(&self) -> BTreeSet<String> {
        self.all_objects()
            .filter_map(|(_, obj)| object::meta_str(obj, "uid").map(str::to_owned))
            .collect()
    }

    /// A fresh sequence number for uids and generated names.
    pub(crate) fn next_serial(&mut self) -> u64 {
        self.counter += 1;
        self.counter
    }

    /// Field ownership of an object (created on first use).
    pub(crate) fn ownership_mut(&mut self, uid: &str) -> &mut Ownership {
        self.ownership.entry(uid.to_owned()).or_default()
    }

    /// Replaces the field ownership of an object after a successful apply.
    pub(crate) fn set_ownership(&mut self, uid: &str, ownership: Ownership) {
        self.ownership.insert(uid.to_owned(), ownership);
    }

    /// Field ownership of an object, if any write recorded it.
    pub(crate) fn ownership(&self, uid: &str) -> Option<&Ownership> {
        self.ownership.get(uid)
    }

    /// Stores `new` as the next version of an object and returns what was stored.
    ///
    /// `previous` is the stored version (`None` for a create). Returns `previous` untouched
    /// when nothing changed. Otherwise bumps `metadata.generation` if anything outside
    /// metadata and status changed, assigns the next resourceVersion and records the event.
    pub(crate) fn put(
        &mut self,
        key: &ResourceKey,
        mut new: Value,
        previous: Option<Value>,
    ) -> Value {
        if crate::crd::is_crd(key) {
            crate::crd::establish(&mut new, &mut self.registry);
        }
        if key.group.is_empty() && key.plural == "secrets" {
            fold_string_data(&mut new);
        }
        let id = object_id(&new);
        if let Some(old) = &previous {
            if *old == new {
                return new;
            }
            if spec_part(old) != spec_part(&new) {
                set_meta(
                    &mut new,
                    "generation",
                    Some(json!(object::generation(old) + 1)),
                );
            }
        }
        self.rv += 1;
        set_meta(
            &mut new,
            "resourceVersion",
            Some(json!(self.rv.to_string())),
        );
        let change = if previous.is_some() {
            Change::Modified
        } else {
            Change::Added
        };
        let store = self.stores.entry(key.clone()).or_default();
        store.objects.insert(id, new.clone());
        store.history.push(HistoryEvent {
            rv: self.rv,
            change,
            object: new.clone(),
            previous,
        });
        self.notify.send_replace(self.rv);
        if crate::events::is_events_v1(key) {
            let core_key = crate::events::core_key();
            let mut core = crate::events::core_view(&new);
            let previous_core = self
                .object(
                    &core_key,
                    object::meta_str(&new, "namespace").unwrap_or_default(),
                    object::meta_str(&new, "name").unwrap_or_default(),
                )
                .cloned();
            if let Some(previous_core) = &previous_core {
                // The copy keeps its own version and uid.
                for field in ["resourceVersion", "uid", "creationTimestamp"] {
                    if let Some(value) = previous_core["metadata"].get(field) {
                        core["metadata"][field] = value.clone();
                    }
                }
            }
            self.put(&core_key, core, previous_core);
        }
        new
    }

    /// Deletes an object for good and returns its final state (with the deletion's version).
    pub(crate) fn remove(
        &mut self,
        key: &ResourceKey,
        namespace: &str,
        name: &str,
    ) -> Option<Value> {
        let stored = self.object(key, namespace, name)?.clone();
        self.remove_as(key, stored)
    }

    /// Deletes the object identified by `final_state` and reports `final_state` to watchers,
    /// so a write that releases the last finalizer shows up as one DELETED event.
    pub(crate) fn remove_as(&mut self, key: &ResourceKey, mut final_state: Value) -> Option<Value> {
        if crate::events::is_events_v1(key) {
            let namespace = object::meta_str(&final_state, "namespace")
                .unwrap_or_default()
                .to_owned();
            let name = object::meta_str(&final_state, "name")
                .unwrap_or_default()
                .to_owned();
            self.remove(&crate::events::core_key(), &namespace, &name);
        }
        let store = self.stores.get_mut(key)?;
        store.objects.remove(&object_id(&final_state))?;
        self.rv += 1;
        set_meta(
            &mut final_state,
            "resourceVersion",
            Some(json!(self.rv.to_string())),
        );
        store.history.push(HistoryEvent {
            rv: self.rv,
            change: Change::Deleted,
            object: final_state.clone(),
            previous: None,
        });
        if let Some(uid) = object::meta_str(&final_state, "uid") {
            self.ownership.remove(uid);
        }
        self.notify.send_replace(self.rv);
        Some(final_state)
    }

    /// Forgets all watch history, so that watches from older versions get 410 Gone.
    pub(crate) fn compact(&mut self) {
        for store in self.stores.values_mut() {
            store.history.clear();
            store.oldest_watchable = self.rv;
        }
    }
}

/// The (namespace, name) identity of an object; cluster-scoped objects use "".
pub(crate) fn object_id(object: &Value) -> (String, String) {
    (
        object::meta_str(object, "namespace")
            .unwrap_or_default()
            .to_owned(),
        object::meta_str(object, "name")
            .unwrap_or_default()
            .to_owned(),
    )
}

/// Moves a Secret's `stringData` into `data`, base64-encoded, as the API server does on
/// every write: `stringData` is write-only and never stored or returned.
fn fold_string_data(secret: &mut Value) {
    let Some(object) = secret.as_object_mut() else {
        return;
    };
    let Some(Value::Object(strings)) = object.remove("stringData") else {
        return;
    };
    let data = object
        .entry("data")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if !data.is_object() {
        *data = Value::Object(serde_json::Map::new());
    }
    if let Some(data) = data.as_object_mut() {
        for (key, value) in strings {
            let bytes = value.as_str().unwrap_or_default().as_bytes().to_vec();
            let encoded =
                serde_json::to_value(k8s_openapi::ByteString(bytes)).unwrap_or(Value::Null);
            data.insert(key, encoded);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_skips_no_op_and_bumps_generation_only_for_spec() {
        let mut state = State::new();
        let key = ResourceKey::new("", "configmaps");
        let created = state.put(
            &key,
            json!({"metadata": {"name": "a", "generation": 1}, "data": {"k": "v"}}),
            None,
        );
        assert_eq!(object::meta_str(&created, "resourceVersion"), Some("2"));

        let same = state.put(&key, created.clone(), Some(created.clone()));
        assert_eq!(state.resource_version(), 2);
        assert_eq!(same, created);

        let mut labelled = created.clone();
        set_meta(&mut labelled, "labels", Some(json!({"x": "y"})));
        let labelled = state.put(&key, labelled, Some(created.clone()));
        assert_eq!(object::generation(&labelled), 1);

        let mut changed = labelled.clone();
        changed["data"] = json!({"k": "w"});
        let changed = state.put(&key, changed, Some(labelled));
        assert_eq!(object::generation(&changed), 2);
        assert_eq!(object::meta_str(&changed, "resourceVersion"), Some("4"));

        let removed = state.remove(&key, "", "a");
        assert_eq!(
            removed
                .as_ref()
                .and_then(|o| object::meta_str(o, "resourceVersion")),
            Some("5")
        );
        let history: Vec<Change> = state
            .store(&key)
            .map(|s| s.history.iter().map(|e| e.change).collect())
            .unwrap_or_default();
        assert_eq!(
            history,
            vec![
                Change::Added,
                Change::Modified,
                Change::Modified,
                Change::Deleted
            ]
        );
    }
}
