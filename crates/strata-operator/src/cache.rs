//! Watch caches of the objects an operator owns, and of their pods.
//!
//! Reconciles read children only from these caches. The reflectors behind them
//! LIST once at start-up and then follow a WATCH, so a steady-state reconcile
//! costs no request at all. The same streams trigger the controller when a
//! child changes, which is how drift is noticed and repaired.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use k8s_openapi::Resource as _;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};

use crate::apply::is_controlled_by;
use crate::labels::MANAGED_BY_LABEL;

/// A kind the operator creates and therefore watches, applies and may prune.
///
/// The same list drives the controller's watches, the apply step and the Helm
/// chart's RBAC rules, so they cannot drift apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildKind {
    /// The kind's API coordinates.
    pub resource: ApiResource,
}

impl ChildKind {
    /// The child kind of a typed Kubernetes resource.
    pub fn of<K: Resource<DynamicType = ()>>() -> Self {
        Self {
            resource: ApiResource::erase::<K>(&()),
        }
    }

    /// PersistentVolumeClaims hold user data and are never pruned.
    pub fn prunable(&self) -> bool {
        !(self.resource.group.is_empty() && self.resource.kind == PersistentVolumeClaim::KIND)
    }

    fn key(&self) -> String {
        format!("{}/{}", self.resource.api_version, self.resource.kind)
    }
}

/// Read access to the watch caches of one controller.
#[derive(Clone, Debug)]
pub struct ChildCaches {
    children: BTreeMap<String, (ChildKind, Store<DynamicObject>)>,
    pods: Store<Pod>,
}

/// A reflector's stream of changed objects; polling it keeps the cache filled.
pub type TriggerStream<K> = std::pin::Pin<Box<dyn Stream<Item = Result<K, watcher::Error>> + Send>>;

/// The trigger streams that keep the caches filled; the controller polls them.
pub struct CacheStreams {
    /// One stream per child kind, with the kind's API coordinates.
    pub children: Vec<(ApiResource, TriggerStream<DynamicObject>)>,
    /// Pods managed by this operator.
    pub pods: TriggerStream<Pod>,
}

impl std::fmt::Debug for CacheStreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheStreams")
            .field("children", &self.children.len())
            .finish_non_exhaustive()
    }
}

impl ChildCaches {
    /// Starts one reflector per child kind and one for pods, all filtered to
    /// objects labelled as managed by `operator_name`, in `namespace` or in
    /// every namespace.
    ///
    /// Objects someone strips of the managed-by label drop out of the cache;
    /// the next reconcile then applies them again, which restores the label.
    pub fn watch(
        client: &Client,
        kinds: &[ChildKind],
        namespace: Option<&str>,
        operator_name: &str,
    ) -> (Self, CacheStreams) {
        let config =
            watcher::Config::default().labels(&format!("{MANAGED_BY_LABEL}={operator_name}"));
        let mut children = BTreeMap::new();
        let mut streams = Vec::new();
        for kind in kinds {
            let api: Api<DynamicObject> = match namespace {
                Some(namespace) => Api::namespaced_with(client.clone(), namespace, &kind.resource),
                None => Api::all_with(client.clone(), &kind.resource),
            };
            let writer = reflector::store::Writer::new(kind.resource.clone());
            let store = writer.as_reader();
            let stream =
                reflector::reflector(writer, watcher(api, config.clone()).default_backoff())
                    .applied_objects()
                    .boxed();
            children.insert(kind.key(), (kind.clone(), store));
            streams.push((kind.resource.clone(), stream));
        }
        let pod_api: Api<Pod> = match namespace {
            Some(namespace) => Api::namespaced(client.clone(), namespace),
            None => Api::all(client.clone()),
        };
        let (pods, pod_writer) = reflector::store();
        let pod_stream =
            reflector::reflector(pod_writer, watcher(pod_api, config).default_backoff())
                .applied_objects()
                .boxed();
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
        let (_, store) = self.children.get(&key)?;
        store.get(&ObjectRef::new_with(name, resource.clone()).within(namespace))
    }

    /// The cached object of a typed kind, converted back to its type.
    pub fn get_typed<K>(&self, namespace: &str, name: &str) -> Option<K>
    where
        K: Resource<DynamicType = ()> + serde::de::DeserializeOwned,
    {
        let object = self.get(&ApiResource::erase::<K>(&()), namespace, name)?;
        object.as_ref().clone().try_parse::<K>().ok()
    }

    /// Every cached object in `namespace` whose controller is `owner_ref`.
    pub fn controlled_by(
        &self,
        owner_ref: &OwnerReference,
        namespace: &str,
    ) -> Vec<(ChildKind, Arc<DynamicObject>)> {
        let mut owned = Vec::new();
        for (kind, store) in self.children.values() {
            for object in store.state() {
                if object.namespace().as_deref() == Some(namespace)
                    && is_controlled_by(object.owner_references(), owner_ref)
                {
                    owned.push((kind.clone(), object));
                }
            }
        }
        owned.sort_by_key(|(kind, object)| (kind.key(), object.name_any()));
        owned
    }

    /// Cached pods in `namespace` that carry every label in `selector`.
    pub fn pods_matching(&self, namespace: &str, selector: &BTreeMap<String, String>) -> Vec<Pod> {
        let mut pods: Vec<Pod> = self
            .pods
            .state()
            .iter()
            .filter(|pod| pod.namespace().as_deref() == Some(namespace))
            .filter(|pod| {
                let labels = pod.labels();
                selector
                    .iter()
                    .all(|(key, value)| labels.get(key) == Some(value))
            })
            .map(|pod| pod.as_ref().clone())
            .collect();
        pods.sort_by_key(ResourceExt::name_any);
        pods
    }

    /// Waits until every cache has completed its first LIST. Readiness waits
    /// for this, because a reconcile on an empty cache would re-apply
    /// everything.
    pub async fn wait_until_ready(&self) -> bool {
        for (_, store) in self.children.values() {
            if store.wait_until_ready().await.is_err() {
                return false;
            }
        }
        self.pods.wait_until_ready().await.is_ok()
    }

    /// The registered child kinds.
    pub fn kinds(&self) -> impl Iterator<Item = &ChildKind> {
        self.children.values().map(|(kind, _)| kind)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::StatefulSet;
    use k8s_openapi::api::core::v1::ConfigMap;
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::config_maps_are_pruned(ChildKind::of::<ConfigMap>(), true)]
    #[case::stateful_sets_are_pruned(ChildKind::of::<StatefulSet>(), true)]
    #[case::persistent_volume_claims_never(ChildKind::of::<PersistentVolumeClaim>(), false)]
    fn prunable(#[case] kind: ChildKind, #[case] expected: bool) {
        assert_eq!(kind.prunable(), expected);
    }
}
