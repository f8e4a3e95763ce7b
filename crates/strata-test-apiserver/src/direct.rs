//! Direct test access: read and change server state without going through HTTP.
//!
//! Nothing here is logged in [`TestApiServer::requests`] or affected by faults. Writes still
//! bump resourceVersion and reach watchers, so they model "another actor" (the StatefulSet
//! controller setting status, the kubelet moving a Pod to Running, a user editing a CR).

use std::{
    collections::{BTreeMap, BTreeSet},
    time::Duration,
};

use kube::Resource;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;
use tokio::time::Instant;

use crate::{
    TestApiServer,
    apply::Part,
    gc::{self, Propagation},
    kinds::{ResourceInfo, ResourceKey},
    lock,
    patch::merge_patch,
    status::ApiError,
    write::{self, Address},
};

/// The field manager recorded for direct writes.
pub const DIRECT_MANAGER: &str = "strata-test-apiserver";

/// Why a direct access failed.
#[derive(Debug, thiserror::Error)]
pub enum DirectError {
    /// The resource was never registered.
    #[error("resource {0} is not registered with the test API server")]
    UnknownResource(String),
    /// The object does not exist.
    #[error("{resource} {namespace}/{name} not found")]
    NotFound {
        /// `plural.group`.
        resource: String,
        /// "" for cluster-scoped objects.
        namespace: String,
        /// Object name.
        name: String,
    },
    /// The typed value could not be converted to or from its stored JSON.
    #[error("cannot convert {resource} between its Rust type and JSON")]
    Serde {
        /// `plural.group`.
        resource: String,
        /// The serde failure.
        #[source]
        source: serde_json::Error,
    },
    /// The write broke a server rule (for example an invalid object).
    #[error("the server rejected the direct write")]
    Rejected(#[source] ApiError),
    /// [`TestApiServer::wait_for`] gave up.
    #[error("timed out after {timeout:?} waiting for {resource} {namespace}/{name}")]
    Timeout {
        /// `plural.group`.
        resource: String,
        /// "" for cluster-scoped objects.
        namespace: String,
        /// Object name.
        name: String,
        /// How long it waited.
        timeout: Duration,
    },
}

fn to_typed<K: DeserializeOwned>(key: &ResourceKey, value: Value) -> Result<K, DirectError> {
    serde_json::from_value(value).map_err(|source| DirectError::Serde {
        resource: key.to_string(),
        source,
    })
}

fn to_value<K: Serialize>(key: &ResourceKey, object: &K) -> Result<Value, DirectError> {
    serde_json::to_value(object).map_err(|source| DirectError::Serde {
        resource: key.to_string(),
        source,
    })
}

impl TestApiServer {
    fn info(&self, key: &ResourceKey) -> Result<ResourceInfo, DirectError> {
        lock(&self.state)
            .registry
            .get(key)
            .cloned()
            .ok_or_else(|| DirectError::UnknownResource(key.to_string()))
    }

    /// The stored JSON of an object. `resource` is `plural` or `plural.group`
    /// (`"statefulsets.apps"`); `namespace` is "" for cluster-scoped objects.
    pub fn object(&self, resource: &str, namespace: &str, name: &str) -> Option<Value> {
        lock(&self.state)
            .object(&ResourceKey::parse(resource), namespace, name)
            .cloned()
    }

    /// All stored objects of a resource, ordered by namespace and name.
    pub fn objects(&self, resource: &str) -> Vec<Value> {
        lock(&self.state)
            .store(&ResourceKey::parse(resource))
            .map(|s| s.objects.values().cloned().collect())
            .unwrap_or_default()
    }

    /// A typed object, or `None` if it does not exist or does not deserialize.
    pub fn get_typed<K>(&self, namespace: &str, name: &str) -> Option<K>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        let key = ResourceKey::of::<K>();
        let value = lock(&self.state).object(&key, namespace, name).cloned()?;
        to_typed(&key, value).ok()
    }

    /// All typed objects of a kind across namespaces; ones that fail to deserialize are skipped.
    pub fn list_typed<K>(&self) -> Vec<K>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        let key = ResourceKey::of::<K>();
        let values: Vec<Value> = lock(&self.state)
            .store(&key)
            .map(|s| s.objects.values().cloned().collect())
            .unwrap_or_default();
        values
            .into_iter()
            .filter_map(|v| to_typed(&key, v).ok())
            .collect()
    }

    /// Creates or wholly replaces an object, status included, as another actor would.
    ///
    /// Server-owned metadata (uid, creationTimestamp, generation, resourceVersion) is kept
    /// for existing objects; a new object keeps a uid it brings along. Namespaced objects
    /// without a namespace go to `default`.
    pub fn upsert<K>(&self, object: &K) -> Result<K, DirectError>
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned,
    {
        let key = ResourceKey::of::<K>();
        let stored = self.upsert_value(&key.to_string(), to_value(&key, object)?)?;
        to_typed(&key, stored)
    }

    /// [`TestApiServer::upsert`] for untyped JSON; `resource` is `plural` or `plural.group`.
    pub fn upsert_value(&self, resource: &str, object: Value) -> Result<Value, DirectError> {
        let info = self.info(&ResourceKey::parse(resource))?;
        write::upsert(&mut lock(&self.state), &info, object, DIRECT_MANAGER)
            .map_err(DirectError::Rejected)
    }

    /// Reads an object, lets `change` edit it and stores the result like [`TestApiServer::upsert`].
    pub fn modify<K>(
        &self,
        namespace: &str,
        name: &str,
        change: impl FnOnce(&mut K),
    ) -> Result<K, DirectError>
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned,
    {
        let key = ResourceKey::of::<K>();
        let mut object: K = to_typed(&key, self.existing(&key, namespace, name)?)?;
        change(&mut object);
        self.upsert(&object)
    }

    /// Merge-patches `.status` of an object (`{"readyReplicas": 3}`), as a workload
    /// controller or the kubelet would.
    pub fn patch_status_direct<K>(
        &self,
        namespace: &str,
        name: &str,
        status_patch: Value,
    ) -> Result<K, DirectError>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        let key = ResourceKey::of::<K>();
        let info = self.info(&key)?;
        let mut state = lock(&self.state);
        let old = state
            .object(&key, namespace, name)
            .cloned()
            .ok_or_else(|| not_found(&key, namespace, name))?;
        let mut candidate = old.clone();
        let mut status = candidate.get("status").cloned().unwrap_or(Value::Null);
        merge_patch(&mut status, &status_patch);
        if let Some(map) = candidate.as_object_mut() {
            map.insert("status".to_owned(), status);
        }
        let address = Address {
            info: &info,
            namespace,
            name,
            part: Part::Whole,
        };
        let stored = write::store_update(&mut state, address, old, candidate, Some(DIRECT_MANAGER));
        drop(state);
        to_typed(&key, stored)
    }

    /// Deletes an object as the API server would for a background-propagated DELETE:
    /// finalizers hold it with a deletionTimestamp, otherwise it goes and its dependents
    /// are garbage-collected.
    pub fn delete_direct<K>(&self, namespace: &str, name: &str) -> Result<(), DirectError>
    where
        K: Resource<DynamicType = ()>,
    {
        let key = ResourceKey::of::<K>();
        let mut state = lock(&self.state);
        let old = state
            .object(&key, namespace, name)
            .cloned()
            .ok_or_else(|| not_found(&key, namespace, name))?;
        gc::delete(&mut state, &key, old, Propagation::Cascade);
        Ok(())
    }

    /// One pass of the garbage collector over objects whose owners are all gone: an
    /// owner's deletion collects its dependents at once, but a dependent created after
    /// that (by an operator whose apply raced the deletion) is only found by this pass,
    /// which the sandbox's data plane runs, as the real collector would. Returns how
    /// many objects were deleted.
    pub fn collect_orphans(&self) -> usize {
        gc::collect_orphans(&mut lock(&self.state))
    }

    /// Which field managers own which fields of an object, as `.spec.replicas` → managers.
    ///
    /// Useful to check that an operator writes only through its own apply field manager.
    pub fn field_owners(
        &self,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> BTreeMap<String, BTreeSet<String>> {
        let state = lock(&self.state);
        let uid = state
            .object(&ResourceKey::parse(resource), namespace, name)
            .and_then(|o| crate::object::meta_str(o, "uid").map(str::to_owned));
        uid.and_then(|uid| state.ownership(&uid).cloned())
            .map(|o| {
                o.owners()
                    .iter()
                    .map(|(path, managers)| (path.to_string(), managers.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The current global resourceVersion (bumped by every effective write).
    pub fn resource_version(&self) -> u64 {
        lock(&self.state).resource_version()
    }

    /// Drops all watch history: watches resuming from an older version get `410 Gone`
    /// and kube-runtime watchers re-list, as after etcd compaction.
    pub fn compact_history(&self) {
        lock(&self.state).compact();
    }

    /// Waits until an object exists and satisfies `predicate`; wakes on every write instead
    /// of polling. Fails with [`DirectError::Timeout`] after `timeout`.
    pub async fn wait_for<K>(
        &self,
        namespace: &str,
        name: &str,
        predicate: impl Fn(&K) -> bool,
        timeout: Duration,
    ) -> Result<K, DirectError>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        let found = self
            .wait_until(timeout, || {
                self.get_typed::<K>(namespace, name)
                    .filter(|o| predicate(o))
            })
            .await;
        found.ok_or_else(|| timed_out(&ResourceKey::of::<K>(), namespace, name, timeout))
    }

    /// Waits until an object no longer exists.
    pub async fn wait_for_deletion<K>(
        &self,
        namespace: &str,
        name: &str,
        timeout: Duration,
    ) -> Result<(), DirectError>
    where
        K: Resource<DynamicType = ()>,
    {
        let key = ResourceKey::of::<K>();
        let gone = self
            .wait_until(timeout, || {
                lock(&self.state)
                    .object(&key, namespace, name)
                    .is_none()
                    .then_some(())
            })
            .await;
        gone.ok_or_else(|| timed_out(&key, namespace, name, timeout))
    }

    /// Re-evaluates `check` after every state change until it yields a value or time runs out.
    async fn wait_until<T>(&self, timeout: Duration, check: impl Fn() -> Option<T>) -> Option<T> {
        let deadline = Instant::now() + timeout;
        let mut changes = lock(&self.state).subscribe();
        loop {
            changes.borrow_and_update();
            if let Some(found) = check() {
                return Some(found);
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => return None,
            }
        }
    }

    fn existing(
        &self,
        key: &ResourceKey,
        namespace: &str,
        name: &str,
    ) -> Result<Value, DirectError> {
        lock(&self.state)
            .object(key, namespace, name)
            .cloned()
            .ok_or_else(|| not_found(key, namespace, name))
    }
}

fn not_found(key: &ResourceKey, namespace: &str, name: &str) -> DirectError {
    DirectError::NotFound {
        resource: key.to_string(),
        namespace: namespace.to_owned(),
        name: name.to_owned(),
    }
}

fn timed_out(key: &ResourceKey, namespace: &str, name: &str, timeout: Duration) -> DirectError {
    DirectError::Timeout {
        resource: key.to_string(),
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        timeout,
    }
}
