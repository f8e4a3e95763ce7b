//! Watch caches of the objects an operator owns, and of their pods.
//!
//! Reconciles read children only from these caches. The reflectors behind them
//! LIST once at start-up and then follow a WATCH, so a steady-state reconcile
//! costs no request at all. The same streams trigger the controller when a
//! child changes, which is how drift is noticed and repaired.
//!
//! Next to each store an index files the cached objects by their
//! controller's uid (pods: by namespace and instance label), so a reconcile
//! reads the children of its own owner without scanning every owner's.

mod index;
mod kind;
mod trim;

pub use self::kind::ChildKind;
pub(crate) use self::trim::{compact, trim_metadata};
pub use self::trim::{full_value, parse};
use self::trim::{kind_events, trim_pod};

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};

use crate::apply::is_controlled_by;
use index::Index;
use strata_model::labels::{INSTANCE_LABEL, MANAGED_BY_LABEL};

/// Read access to the watch caches of one controller.
#[derive(Clone, Debug)]
pub struct ChildCaches {
    children: BTreeMap<String, KindCache>,
    /// Absent for controllers that do not watch pods.
    pods: Option<PodCache>,
}

/// The cache of one child kind, with its objects filed by controller uid.
#[derive(Clone, Debug)]
struct KindCache {
    kind: ChildKind,
    store: Store<DynamicObject>,
    owners: Index<String>,
}

impl KindCache {
    /// The cached objects in `namespace` whose controller is `owner_ref`.
    ///
    /// The index only says where to look: every object is read from the
    /// store and checked again, so an index entry the store has not caught
    /// up with yet is skipped rather than returned.
    fn controlled_by(
        &self,
        owner_ref: &OwnerReference,
        namespace: &str,
    ) -> Vec<Arc<DynamicObject>> {
        self.owners
            .lookup(&owner_ref.uid)
            .into_iter()
            .filter(|(filed_in, _)| filed_in.as_deref() == Some(namespace))
            .filter_map(|(_, name)| {
                self.store
                    .get(&ObjectRef::new_with(&name, self.kind.resource.clone()).within(namespace))
            })
            .filter(|object| {
                is_controlled_by(object.owner_references(), owner_ref)
                    && object.metadata.namespace.as_deref() == Some(namespace)
            })
            .collect()
    }
}

/// The pod cache, with pods filed by namespace and instance label.
#[derive(Clone, Debug)]
struct PodCache {
    store: Store<Pod>,
    instances: Index<(String, String)>,
}

/// Whether `pod` is in `namespace` and carries every label in `selector`.
fn pod_matches(pod: &Pod, namespace: &str, selector: &BTreeMap<String, String>) -> bool {
    let labels = pod.labels();
    pod.metadata.namespace.as_deref() == Some(namespace)
        && selector
            .iter()
            .all(|(key, value)| labels.get(key) == Some(value))
}

/// A reflector's stream of changed objects; polling it keeps the cache filled.
pub type TriggerStream<K> = std::pin::Pin<Box<dyn Stream<Item = Result<K, watcher::Error>> + Send>>;

/// The trigger streams that keep the caches filled; the controller polls them.
pub struct CacheStreams {
    /// One stream per child kind, with the kind's API coordinates.
    pub children: Vec<(ApiResource, TriggerStream<DynamicObject>)>,
    /// Pods managed by this operator, when the controller watches them.
    pub pods: Option<TriggerStream<Pod>>,
}

impl std::fmt::Debug for CacheStreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheStreams")
            .field("children", &self.children.len())
            .finish_non_exhaustive()
    }
}

impl ChildCaches {
    /// Starts one reflector per child kind, and one for pods when
    /// `watch_pods` is set, all filtered to objects labelled as managed by
    /// `operator_name`, in `namespace` or in every namespace.
    ///
    /// Objects someone strips of the managed-by label drop out of the cache;
    /// the next reconcile then applies them again, which restores the label.
    pub fn watch(
        client: &Client,
        kinds: &[ChildKind],
        namespace: Option<&str>,
        operator_name: &str,
        watch_pods: bool,
    ) -> (Self, CacheStreams) {
        let config =
            watcher::Config::default().labels(&format!("{MANAGED_BY_LABEL}={operator_name}"));
        let mut children = BTreeMap::new();
        let mut streams = Vec::new();
        for kind in kinds {
            let writer = reflector::store::Writer::new(kind.resource.clone());
            let store = writer.as_reader();
            let owners = Index::new(index::controller_uids);
            let events = indexed(
                kind_events(client, kind, namespace, config.clone()),
                owners.clone(),
            );
            // Touched, not only applied: a deleted child must wake its owner, which
            // applies it again (a settled owner has nothing else to wake it).
            let stream = reflector::reflector(writer, events)
                .touched_objects()
                .boxed();
            children.insert(
                kind.key(),
                KindCache {
                    kind: kind.clone(),
                    store,
                    owners,
                },
            );
            streams.push((kind.resource.clone(), stream));
        }
        let (pods, pod_stream) = if watch_pods {
            let pod_api: Api<Pod> = match namespace {
                Some(namespace) => Api::namespaced(client.clone(), namespace),
                None => Api::all(client.clone()),
            };
            let (store, pod_writer) = reflector::store();
            let instances = Index::new(index::namespaced_instance);
            let events = indexed(
                watcher(pod_api, config)
                    .default_backoff()
                    .map(|event| event.map(|event| event.modify(trim_pod))),
                instances.clone(),
            );
            let pod_stream = reflector::reflector(pod_writer, events)
                .touched_objects()
                .boxed();
            (Some(PodCache { store, instances }), Some(pod_stream))
        } else {
            (None, None)
        };
        (
            Self { children, pods },
            CacheStreams {
                children: streams,
                pods: pod_stream,
            },
        )
    }

    /// The cached object of a kind, by namespace and name.
    pub fn get(
        &self,
        resource: &ApiResource,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<DynamicObject>> {
        let key = format!("{}/{}", resource.api_version, resource.kind);
        let cache = self.children.get(&key)?;
        cache
            .store
            .get(&ObjectRef::new_with(name, resource.clone()).within(namespace))
    }

    /// The cached object of a typed kind, converted back to its type.
    pub fn get_typed<K>(&self, namespace: &str, name: &str) -> Option<K>
    where
        K: Resource<DynamicType = ()> + serde::de::DeserializeOwned,
    {
        let object = self.get(&ApiResource::erase::<K>(&()), namespace, name)?;
        parse::<K>(&object).ok()
    }

    /// Every cached object in `namespace` whose controller is `owner_ref`.
    pub fn controlled_by(
        &self,
        owner_ref: &OwnerReference,
        namespace: &str,
    ) -> Vec<(ChildKind, Arc<DynamicObject>)> {
        self.controlled_by_of_kinds(owner_ref, namespace, |_| true)
    }

    /// Like [`ChildCaches::controlled_by`], but only among the child kinds
    /// `include` accepts: the status step needs only workloads, and scanning
    /// the other kinds' caches would cost it a pass over every ConfigMap and
    /// Service of every owner.
    pub fn controlled_by_of_kinds(
        &self,
        owner_ref: &OwnerReference,
        namespace: &str,
        include: impl Fn(&ChildKind) -> bool,
    ) -> Vec<(ChildKind, Arc<DynamicObject>)> {
        let mut owned = Vec::new();
        for cache in self.children.values().filter(|cache| include(&cache.kind)) {
            let matching = cache.controlled_by(owner_ref, namespace);
            owned.extend(
                matching
                    .into_iter()
                    .map(|object| (cache.kind.clone(), object)),
            );
        }
        owned.sort_by_key(|(kind, object)| (kind.key(), object.name_any()));
        owned
    }

    /// Cached pods in `namespace` that carry every label in `selector`; none
    /// when the controller does not watch pods.
    ///
    /// A selector with the instance label reads only that instance's pods
    /// from the index; any other selector scans every cached pod.
    pub fn pods_matching(&self, namespace: &str, selector: &BTreeMap<String, String>) -> Vec<Pod> {
        let Some(cache) = &self.pods else {
            return Vec::new();
        };
        let mut pods: Vec<Pod> = match selector.get(INSTANCE_LABEL) {
            Some(instance) => cache
                .instances
                .lookup(&(namespace.to_owned(), instance.clone()))
                .into_iter()
                .filter_map(|(_, name)| cache.store.get(&ObjectRef::new(&name).within(namespace)))
                .filter(|pod| pod_matches(pod, namespace, selector))
                .map(|pod| pod.as_ref().clone())
                .collect(),
            None => cache
                .store
                .state_filter(|pod| pod_matches(pod, namespace, selector))
                .iter()
                .map(|pod| pod.as_ref().clone())
                .collect(),
        };
        pods.sort_by_key(ResourceExt::name_any);
        pods
    }

    /// Waits until every cache has completed its first LIST. Readiness waits
    /// for this, because a reconcile on an empty cache would re-apply
    /// everything.
    pub async fn wait_until_ready(&self) -> bool {
        for cache in self.children.values() {
            if cache.store.wait_until_ready().await.is_err() {
                return false;
            }
        }
        match &self.pods {
            Some(pods) => pods.store.wait_until_ready().await.is_ok(),
            None => true,
        }
    }

    /// The registered child kinds.
    pub fn kinds(&self) -> impl Iterator<Item = &ChildKind> {
        self.children.values().map(|cache| &cache.kind)
    }
}

/// The watch events of `events`, filed into `index` as they pass on to the
/// reflector, so the index follows the same events (and re-lists) as the store.
fn indexed<K, Key>(
    events: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send,
    index: Index<Key>,
) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send
where
    K: Resource + Send,
    Key: std::hash::Hash + Eq + Clone + Send + Sync + 'static,
{
    events.inspect(move |event| {
        if let Ok(event) = event {
            index.apply(event);
        }
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::StatefulSet;
    use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim};
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::config_maps_are_pruned(ChildKind::of::<ConfigMap>(), true)]
    #[case::stateful_sets_are_pruned(ChildKind::of::<StatefulSet>(), true)]
    #[case::persistent_volume_claims_never(ChildKind::of::<PersistentVolumeClaim>(), false)]
    fn prunable(#[case] kind: ChildKind, #[case] expected: bool) {
        assert_eq!(kind.prunable(), expected);
    }

    fn owner(uid: &str) -> OwnerReference {
        OwnerReference {
            api_version: "example.dev/v1".into(),
            kind: "Widget".into(),
            name: uid.into(),
            uid: uid.into(),
            controller: Some(true),
            block_owner_deletion: None,
        }
    }

    fn child(
        kind: &ChildKind,
        namespace: &str,
        name: &str,
        owner: OwnerReference,
    ) -> (ChildKind, DynamicObject) {
        let mut object = DynamicObject::new(name, &kind.resource).within(namespace);
        object.metadata.owner_references = Some(vec![owner]);
        (kind.clone(), object)
    }

    /// Caches of ConfigMaps, StatefulSets and pods filled with the given objects.
    fn caches_with(children: &[(ChildKind, DynamicObject)], pods: &[Pod]) -> ChildCaches {
        let mut stores = BTreeMap::new();
        for kind in [ChildKind::of::<ConfigMap>(), ChildKind::of::<StatefulSet>()] {
            let mut writer = reflector::store::Writer::new(kind.resource.clone());
            let owners = Index::new(index::controller_uids);
            for (_, object) in children.iter().filter(|(of, _)| *of == kind) {
                let event = watcher::Event::Apply(object.clone());
                owners.apply(&event);
                writer.apply_watcher_event(&event);
            }
            let store = writer.as_reader();
            stores.insert(
                kind.key(),
                KindCache {
                    kind,
                    store,
                    owners,
                },
            );
        }
        let mut pod_writer = reflector::store::Writer::default();
        let instances = Index::new(index::namespaced_instance);
        for pod in pods {
            let event = watcher::Event::Apply(pod.clone());
            instances.apply(&event);
            pod_writer.apply_watcher_event(&event);
        }
        ChildCaches {
            children: stores,
            pods: Some(PodCache {
                store: pod_writer.as_reader(),
                instances,
            }),
        }
    }

    fn names(owned: &[(ChildKind, Arc<DynamicObject>)]) -> Vec<String> {
        owned
            .iter()
            .map(|(kind, object)| format!("{}/{}", kind.resource.kind, object.name_any()))
            .collect()
    }

    #[test]
    fn controlled_by_finds_only_the_owners_children_in_its_namespace() {
        let config_map = ChildKind::of::<ConfigMap>();
        let mut referenced_only = owner("a");
        referenced_only.controller = Some(false);
        let caches = caches_with(
            &[
                child(&config_map, "ns", "a-config", owner("a")),
                child(
                    &ChildKind::of::<StatefulSet>(),
                    "ns",
                    "a-server",
                    owner("a"),
                ),
                child(&config_map, "other", "a-elsewhere", owner("a")),
                child(&config_map, "ns", "b-config", owner("b")),
                child(&config_map, "ns", "a-referenced", referenced_only),
            ],
            &[],
        );

        let owned = caches.controlled_by(&owner("a"), "ns");

        // Sorted by API version and kind, then by name.
        let expected = ["StatefulSet/a-server", "ConfigMap/a-config"];
        assert_eq!(names(&owned), expected);
    }

    #[test]
    fn controlled_by_of_kinds_skips_the_other_kinds() {
        let caches = caches_with(
            &[
                child(&ChildKind::of::<ConfigMap>(), "ns", "a-config", owner("a")),
                child(
                    &ChildKind::of::<StatefulSet>(),
                    "ns",
                    "a-server",
                    owner("a"),
                ),
            ],
            &[],
        );

        let owned = caches.controlled_by_of_kinds(&owner("a"), "ns", |kind| {
            kind.resource.kind == "StatefulSet"
        });

        assert_eq!(names(&owned), ["StatefulSet/a-server"]);
    }

    #[test]
    fn an_index_entry_the_store_contradicts_is_not_returned() {
        let config_map = ChildKind::of::<ConfigMap>();
        let mut caches = caches_with(&[child(&config_map, "ns", "a-config", owner("a"))], &[]);
        // The index runs ahead of the store: it already files the object
        // under owner "b", while the store still holds the version owned by "a".
        let (_, moved) = child(&config_map, "ns", "a-config", owner("b"));
        if let Some(cache) = caches.children.get_mut(&config_map.key()) {
            cache.owners.apply(&watcher::Event::Apply(moved));
        }

        assert!(caches.controlled_by(&owner("b"), "ns").is_empty());
    }

    fn pod(namespace: &str, name: &str, labels: &[(&str, &str)]) -> Pod {
        let mut pod = Pod::default();
        pod.metadata.name = Some(name.into());
        pod.metadata.namespace = Some(namespace.into());
        pod.metadata.labels = Some(
            labels
                .iter()
                .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
                .collect(),
        );
        pod
    }

    #[rstest]
    #[case::by_instance_from_the_index(
        &[(INSTANCE_LABEL, "zk")],
        &["zk-server-0", "zk-server-1", "zk-tool"],
    )]
    #[case::by_instance_and_another_label(
        &[(INSTANCE_LABEL, "zk"), ("role", "server")],
        &["zk-server-0", "zk-server-1"],
    )]
    #[case::without_instance_by_scanning(&[("role", "server")], &["other-server-0", "zk-server-0", "zk-server-1"])]
    #[case::an_unknown_instance(&[(INSTANCE_LABEL, "missing")], &[])]
    fn pods_matching(#[case] selector: &[(&str, &str)], #[case] expected: &[&str]) {
        let server = |name, instance| {
            pod(
                "ns",
                name,
                &[(INSTANCE_LABEL, instance), ("role", "server")],
            )
        };
        let caches = caches_with(
            &[],
            &[
                server("zk-server-1", "zk"),
                server("zk-server-0", "zk"),
                pod("ns", "zk-tool", &[(INSTANCE_LABEL, "zk")]),
                server("other-server-0", "other"),
                pod(
                    "elsewhere",
                    "zk-server-0",
                    &[(INSTANCE_LABEL, "zk"), ("role", "server")],
                ),
            ],
        );
        let selector = selector
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect();

        let found: Vec<String> = caches
            .pods_matching("ns", &selector)
            .iter()
            .map(ResourceExt::name_any)
            .collect();

        assert_eq!(found, expected);
    }
}
