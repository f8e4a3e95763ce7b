//! Which owners refer to which objects: kept from the owners' watch events, read when
//! a referenced object changes.
//!
//! An owner names its references by name (a ConfigMap, a Secret, a cluster) or by a
//! label selector (catalogs). Named references are filed under their namespace and
//! name, so a change costs one lookup; selectors are filed under their namespace and
//! matched against the changed object's labels, so a change costs the selectors of its
//! namespace, not every owner. Like the child index, the entries follow re-lists: the
//! owners of a re-list replace the old entries when it completes.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, PoisonError, RwLock};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::Resource;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;

use super::{Target, selector_matches};

/// The referenced objects, by owner, and the owners, by referenced name or namespace.
struct Entries<K: Resource<DynamicType = ()>> {
    targets: HashMap<ObjectRef<K>, Vec<Target>>,
    named: HashMap<(String, String), HashSet<ObjectRef<K>>>,
    selected: HashMap<String, HashMap<ObjectRef<K>, Vec<LabelSelector>>>,
}

impl<K: Resource<DynamicType = ()>> Default for Entries<K> {
    fn default() -> Self {
        Self {
            targets: HashMap::new(),
            named: HashMap::new(),
            selected: HashMap::new(),
        }
    }
}

impl<K: Resource<DynamicType = ()>> Entries<K> {
    fn insert(&mut self, owner: ObjectRef<K>, targets: Vec<Target>) {
        self.remove(&owner);
        if targets.is_empty() {
            return;
        }
        for target in &targets {
            match target {
                Target::Named { namespace, name } => {
                    self.named
                        .entry((namespace.clone(), name.clone()))
                        .or_default()
                        .insert(owner.clone());
                }
                Target::Selected {
                    namespace,
                    selector,
                } => self
                    .selected
                    .entry(namespace.clone())
                    .or_default()
                    .entry(owner.clone())
                    .or_default()
                    .push(selector.clone()),
            }
        }
        self.targets.insert(owner, targets);
    }

    fn remove(&mut self, owner: &ObjectRef<K>) {
        let Some(targets) = self.targets.remove(owner) else {
            return;
        };
        for target in targets {
            match target {
                Target::Named { namespace, name } => {
                    let key = (namespace, name);
                    if let Some(owners) = self.named.get_mut(&key) {
                        owners.remove(owner);
                        if owners.is_empty() {
                            self.named.remove(&key);
                        }
                    }
                }
                Target::Selected { namespace, .. } => {
                    if let Some(owners) = self.selected.get_mut(&namespace) {
                        owners.remove(owner);
                        if owners.is_empty() {
                            self.selected.remove(&namespace);
                        }
                    }
                }
            }
        }
    }
}

struct State<K: Resource<DynamicType = ()>> {
    live: Entries<K>,
    relist: Entries<K>,
}

/// What an owner refers to, computed from the owner itself.
pub(crate) type TargetsOf<K> = Arc<dyn Fn(&K) -> Vec<Target> + Send + Sync>;

/// A shared index from referenced objects to the owners that refer to them; cheap to
/// clone.
pub(crate) struct ReferenceIndex<K: Resource<DynamicType = ()>> {
    state: Arc<RwLock<State<K>>>,
    targets_of: TargetsOf<K>,
}

impl<K: Resource<DynamicType = ()>> Clone for ReferenceIndex<K> {
    fn clone(&self) -> Self {
        Self {
            state: self.state.clone(),
            targets_of: self.targets_of.clone(),
        }
    }
}

impl<K: Resource<DynamicType = ()>> std::fmt::Debug for ReferenceIndex<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReferenceIndex").finish_non_exhaustive()
    }
}

impl<K: Resource<DynamicType = ()>> ReferenceIndex<K> {
    /// An empty index filing each owner under `targets_of(owner)`.
    pub(crate) fn new(targets_of: TargetsOf<K>) -> Self {
        Self {
            state: Arc::new(RwLock::new(State {
                live: Entries::default(),
                relist: Entries::default(),
            })),
            targets_of,
        }
    }

    /// Follows one watch event of the owners.
    pub(crate) fn apply(&self, event: &watcher::Event<K>) {
        // A poisoned lock only means a writer panicked between two complete updates.
        let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
        match event {
            watcher::Event::Apply(owner) => {
                state
                    .live
                    .insert(ObjectRef::from_obj(owner), (self.targets_of)(owner));
            }
            watcher::Event::Delete(owner) => state.live.remove(&ObjectRef::from_obj(owner)),
            watcher::Event::Init => state.relist = Entries::default(),
            watcher::Event::InitApply(owner) => {
                state
                    .relist
                    .insert(ObjectRef::from_obj(owner), (self.targets_of)(owner));
            }
            watcher::Event::InitDone => state.live = std::mem::take(&mut state.relist),
        }
    }

    /// The owners that refer to the object `name` in `namespace` carrying `labels`,
    /// by name or by a selector that matches.
    pub(crate) fn owners_of(
        &self,
        namespace: &str,
        name: &str,
        labels: &BTreeMap<String, String>,
    ) -> Vec<ObjectRef<K>> {
        let state = self.state.read().unwrap_or_else(PoisonError::into_inner);
        let mut owners: Vec<ObjectRef<K>> = state
            .live
            .named
            .get(&(namespace.to_owned(), name.to_owned()))
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        if let Some(selecting) = state.live.selected.get(namespace) {
            owners.extend(
                selecting
                    .iter()
                    .filter(|(_, selectors)| {
                        selectors
                            .iter()
                            .any(|selector| selector_matches(selector, labels))
                    })
                    .map(|(owner, _)| owner.clone()),
            );
        }
        owners
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    use super::*;

    /// An owner (a ConfigMap stands in for a custom resource) whose `data` names its
    /// references: `ref` by name, `select` as `key=value` selector.
    fn owner(name: &str, data: &[(&str, &str)]) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some("ns".to_owned()),
                ..ObjectMeta::default()
            },
            data: Some(
                data.iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..ConfigMap::default()
        }
    }

    fn targets(owner: &ConfigMap) -> Vec<Target> {
        let data = owner.data.clone().unwrap_or_default();
        let mut targets = Vec::new();
        if let Some(name) = data.get("ref") {
            targets.push(Target::named("ns", name));
        }
        if let Some((key, value)) = data.get("select").and_then(|s| s.split_once('=')) {
            targets.push(Target::selected(
                "ns",
                LabelSelector {
                    match_labels: Some(BTreeMap::from([(key.to_owned(), value.to_owned())])),
                    match_expressions: None,
                },
            ));
        }
        targets
    }

    fn index() -> ReferenceIndex<ConfigMap> {
        ReferenceIndex::new(Arc::new(targets))
    }

    fn names(owners: Vec<ObjectRef<ConfigMap>>) -> Vec<String> {
        let mut names: Vec<String> = owners.into_iter().map(|owner| owner.name).collect();
        names.sort();
        names
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn a_named_reference_finds_exactly_its_owners() {
        let index = index();
        index.apply(&watcher::Event::Apply(owner("a", &[("ref", "zk")])));
        index.apply(&watcher::Event::Apply(owner("b", &[("ref", "zk")])));
        index.apply(&watcher::Event::Apply(owner("c", &[("ref", "other")])));
        assert_eq!(names(index.owners_of("ns", "zk", &labels(&[]))), ["a", "b"]);
        assert!(index.owners_of("elsewhere", "zk", &labels(&[])).is_empty());
    }

    #[test]
    fn a_selector_finds_owners_whose_selector_matches_the_labels() {
        let index = index();
        index.apply(&watcher::Event::Apply(owner(
            "trino",
            &[("select", "tier=gold")],
        )));
        assert_eq!(
            names(index.owners_of("ns", "tpch", &labels(&[("tier", "gold")]))),
            ["trino"]
        );
        assert!(
            index
                .owners_of("ns", "tpch", &labels(&[("tier", "bronze")]))
                .is_empty()
        );
    }

    #[test]
    fn a_changed_owner_moves_and_a_deleted_owner_leaves() {
        let index = index();
        index.apply(&watcher::Event::Apply(owner("a", &[("ref", "old")])));
        index.apply(&watcher::Event::Apply(owner("a", &[("ref", "new")])));
        assert!(index.owners_of("ns", "old", &labels(&[])).is_empty());
        assert_eq!(names(index.owners_of("ns", "new", &labels(&[]))), ["a"]);
        index.apply(&watcher::Event::Delete(owner("a", &[("ref", "new")])));
        assert!(index.owners_of("ns", "new", &labels(&[])).is_empty());
    }

    #[test]
    fn a_relist_replaces_the_entries_when_it_completes() {
        let index = index();
        index.apply(&watcher::Event::Apply(owner("gone", &[("ref", "zk")])));
        index.apply(&watcher::Event::Init);
        index.apply(&watcher::Event::InitApply(owner("kept", &[("ref", "zk")])));
        assert_eq!(names(index.owners_of("ns", "zk", &labels(&[]))), ["gone"]);
        index.apply(&watcher::Event::InitDone);
        assert_eq!(names(index.owners_of("ns", "zk", &labels(&[]))), ["kept"]);
    }
}
