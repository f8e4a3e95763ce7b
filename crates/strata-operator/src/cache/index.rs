//! A secondary index over a reflector store, kept from the same watch events.
//!
//! A reflector store can only be read by its object key, so finding the
//! children of one owner meant scanning the children of every owner on every
//! reconcile. This index maps a key derived from each object (its controller's
//! uid, or its namespace and instance label) to the namespaces and names of
//! the objects that carry it. It follows the watch events the way the store
//! does, including re-lists, and readers look each name up in the store and
//! re-check it, so an index that runs ahead of or behind the store can make a
//! lookup miss an object for a moment but never return a wrong one.

use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;
use std::sync::{Arc, PoisonError, RwLock};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::watcher;

/// The namespace and name of an indexed object.
pub(crate) type Name = (Option<String>, String);

/// The index keys of an object; usually one, none when it carries no key.
pub(crate) type KeysOf<Key> = fn(&ObjectMeta) -> Vec<Key>;

/// Names by key, and the keys under which each name is filed, so that a
/// changed or deleted object can be taken out of its old entries.
#[derive(Debug)]
struct Entries<Key> {
    names: HashMap<Key, BTreeSet<Name>>,
    keys: HashMap<Name, Vec<Key>>,
}

impl<Key> Default for Entries<Key> {
    fn default() -> Self {
        Self {
            names: HashMap::new(),
            keys: HashMap::new(),
        }
    }
}

impl<Key: Hash + Eq + Clone> Entries<Key> {
    fn insert(&mut self, name: Name, keys: Vec<Key>) {
        self.remove(&name);
        if keys.is_empty() {
            return;
        }
        for key in &keys {
            self.names
                .entry(key.clone())
                .or_default()
                .insert(name.clone());
        }
        self.keys.insert(name, keys);
    }

    fn remove(&mut self, name: &Name) {
        let Some(keys) = self.keys.remove(name) else {
            return;
        };
        for key in keys {
            if let Some(names) = self.names.get_mut(&key) {
                names.remove(name);
                if names.is_empty() {
                    self.names.remove(&key);
                }
            }
        }
    }
}

#[derive(Debug)]
struct State<Key> {
    live: Entries<Key>,
    /// The entries of a re-list in progress, swapped in when it completes,
    /// exactly when the store swaps in its own buffer.
    relist: Entries<Key>,
}

/// A shared index from a key to the objects carrying it; cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct Index<Key> {
    state: Arc<RwLock<State<Key>>>,
    keys_of: KeysOf<Key>,
}

impl<Key: Hash + Eq + Clone> Index<Key> {
    /// An empty index filing each object under `keys_of(metadata)`.
    pub(crate) fn new(keys_of: KeysOf<Key>) -> Self {
        Self {
            state: Arc::new(RwLock::new(State {
                live: Entries::default(),
                relist: Entries::default(),
            })),
            keys_of,
        }
    }

    /// Follows one watch event, mirroring what the reflector store does
    /// with it.
    pub(crate) fn apply<K: kube::Resource>(&self, event: &watcher::Event<K>) {
        // A poisoned lock only means a writer panicked between two complete
        // updates; every update leaves the entries consistent.
        let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
        match event {
            watcher::Event::Apply(object) => {
                let (name, keys) = self.filing(object.meta());
                state.live.insert(name, keys);
            }
            watcher::Event::Delete(object) => {
                let (name, _) = self.filing(object.meta());
                state.live.remove(&name);
            }
            watcher::Event::Init => state.relist = Entries::default(),
            watcher::Event::InitApply(object) => {
                let (name, keys) = self.filing(object.meta());
                state.relist.insert(name, keys);
            }
            watcher::Event::InitDone => state.live = std::mem::take(&mut state.relist),
        }
    }

    /// The objects filed under `key`, sorted by namespace and name.
    pub(crate) fn lookup(&self, key: &Key) -> Vec<Name> {
        let state = self.state.read().unwrap_or_else(PoisonError::into_inner);
        state
            .live
            .names
            .get(key)
            .map(|names| names.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn filing(&self, meta: &ObjectMeta) -> (Name, Vec<Key>) {
        let name = (
            meta.namespace.clone(),
            meta.name.clone().unwrap_or_default(),
        );
        (name, (self.keys_of)(meta))
    }
}

/// The uids of an object's controllers; the API server allows at most one.
pub(crate) fn controller_uids(meta: &ObjectMeta) -> Vec<String> {
    meta.owner_references
        .iter()
        .flatten()
        .filter(|reference| reference.controller == Some(true))
        .map(|reference| reference.uid.clone())
        .collect()
}

/// A pod's namespace and instance label, which names the owner it belongs to.
pub(crate) fn namespaced_instance(meta: &ObjectMeta) -> Vec<(String, String)> {
    let instance = meta
        .labels
        .as_ref()
        .and_then(|labels| labels.get(strata_model::labels::INSTANCE_LABEL));
    match (&meta.namespace, instance) {
        (Some(namespace), Some(instance)) => vec![(namespace.clone(), instance.clone())],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use rstest::rstest;
    use watcher::Event;

    use super::*;

    fn owned(namespace: &str, name: &str, owner_uid: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(namespace.into()),
                owner_references: Some(vec![OwnerReference {
                    api_version: "example.dev/v1".into(),
                    kind: "Widget".into(),
                    name: owner_uid.into(),
                    uid: owner_uid.into(),
                    controller: Some(true),
                    block_owner_deletion: None,
                }]),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    fn name(namespace: &str, name: &str) -> Name {
        (Some(namespace.into()), name.into())
    }

    fn apply(cm: ConfigMap) -> Event<ConfigMap> {
        Event::Apply(cm)
    }

    #[rstest]
    #[case::applied_objects_are_found(
        vec![apply(owned("ns", "a-2", "a")), apply(owned("ns", "a-1", "a")), apply(owned("ns", "b-1", "b"))],
        vec![name("ns", "a-1"), name("ns", "a-2")],
    )]
    #[case::deleted_objects_are_gone(
        vec![apply(owned("ns", "a-1", "a")), apply(owned("ns", "a-2", "a")), Event::Delete(owned("ns", "a-1", "a"))],
        vec![name("ns", "a-2")],
    )]
    #[case::a_relist_replaces_the_index(
        vec![apply(owned("ns", "a-1", "a")), Event::Init, Event::InitApply(owned("ns", "a-2", "a")), Event::InitDone],
        vec![name("ns", "a-2")],
    )]
    #[case::an_unfinished_relist_keeps_the_old_index(
        vec![apply(owned("ns", "a-1", "a")), Event::Init, Event::InitApply(owned("ns", "a-2", "a"))],
        vec![name("ns", "a-1")],
    )]
    #[case::a_restarted_relist_drops_its_partial_buffer(
        vec![Event::Init, Event::InitApply(owned("ns", "a-1", "a")), Event::Init, Event::InitApply(owned("ns", "a-2", "a")), Event::InitDone],
        vec![name("ns", "a-2")],
    )]
    #[case::an_object_whose_owner_changes_moves(
        vec![apply(owned("ns", "a-1", "a")), apply(owned("ns", "a-1", "b"))],
        vec![],
    )]
    #[case::an_object_that_loses_its_controller_is_dropped(
        vec![apply(owned("ns", "a-1", "a")), apply(ConfigMap { metadata: ObjectMeta { name: Some("a-1".into()), namespace: Some("ns".into()), ..ObjectMeta::default() }, ..ConfigMap::default() })],
        vec![],
    )]
    #[case::namespaces_are_kept_apart(
        vec![apply(owned("ns", "a-1", "a")), apply(owned("other", "a-1", "a")), Event::Delete(owned("other", "a-1", "a"))],
        vec![name("ns", "a-1")],
    )]
    fn children_of_owner_a(#[case] events: Vec<Event<ConfigMap>>, #[case] expected: Vec<Name>) {
        let index = Index::new(controller_uids);
        for event in &events {
            index.apply(event);
        }
        assert_eq!(index.lookup(&"a".to_owned()), expected);
    }

    #[test]
    fn an_object_whose_owner_changes_is_found_under_the_new_owner() {
        let index = Index::new(controller_uids);
        index.apply(&apply(owned("ns", "a-1", "a")));
        index.apply(&apply(owned("ns", "a-1", "b")));
        assert_eq!(index.lookup(&"b".to_owned()), [name("ns", "a-1")]);
        assert!(index.lookup(&"a".to_owned()).is_empty());
    }

    #[rstest]
    #[case::same_namespace_and_instance(Some("ns"), Some("zk"), vec![("ns".to_owned(), "zk".to_owned())])]
    #[case::no_instance_label(Some("ns"), None, vec![])]
    #[case::cluster_scoped(None, Some("zk"), vec![])]
    fn pods_are_filed_by_namespace_and_instance(
        #[case] namespace: Option<&str>,
        #[case] instance: Option<&str>,
        #[case] expected: Vec<(String, String)>,
    ) {
        let meta = ObjectMeta {
            namespace: namespace.map(str::to_owned),
            labels: instance.map(|instance| {
                [(
                    strata_model::labels::INSTANCE_LABEL.to_owned(),
                    instance.to_owned(),
                )]
                .into()
            }),
            ..ObjectMeta::default()
        };
        assert_eq!(namespaced_instance(&meta), expected);
    }
}
