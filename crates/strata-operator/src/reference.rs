//! Objects a controller reads but does not own: a ZNode's cluster, an HDFS cluster's
//! ZooKeeper discovery ConfigMap, a Superset cluster's Secrets, a Trino cluster's
//! catalogs.
//!
//! A controller declares each referenced kind once, with a function from its primary
//! object to what it refers to ([`Target`]: by name or by label selector). From that one
//! declaration the runtime
//!
//! - keeps a watch cache of the kind, so reconciles read it without a GET;
//! - keeps an index from referenced objects to the owners that refer to them, fed by
//!   the owners' own watch events, so a change (including the creation of an object
//!   that was missing, its deletion, and a relabel that moves it out of a selector)
//!   requeues exactly those owners, without waiting for a resync. A declaration can
//!   name what of an object its owners depend on (`reading_changes_of`), so a status
//!   the owners do not read does not requeue them;
//! - grants `list` and `watch` on the kind in the chart's RBAC rules.
//!
//! Secrets are cached without their values: as metadata only
//! ([`Content::MetadataOnly`]), or with their key names and no values
//! ([`Content::KeysOnly`]) when a controller checks that a key its pods read exists.
//! The operator passes Secrets to pods by reference and never holds a value, so no
//! Secret value can reach a log line, an Event or a status.

mod index;
mod keys;
mod requeue;

use std::any::{Any, TypeId};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::api::{Api, ApiResource};
use kube::core::PartialObjectMeta;

use crate::guard::Guarded;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{Controller, WatchStreamExt, watcher};

use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;

pub(crate) use self::index::ReferenceIndex;
pub use self::keys::{KeySource, KeysError, KeysRead};
use self::requeue::{readable, requeue_stream};

/// A namespaced kind a controller can watch and read as its own type.
pub trait Readable:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + DeserializeOwned
    + Debug
    + Send
    + Sync
    + 'static
{
}

impl<T> Readable for T where
    T: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static
{
}

/// What the cache of a referenced kind holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Content {
    /// Whole objects, for kinds whose content the operator renders (ConfigMaps,
    /// custom resources).
    Full,
    /// Metadata only: for Secrets, whose values the operator must never hold.
    MetadataOnly,
    /// Secrets with their key names and every value emptied as each event arrives,
    /// so a missing key is reported before a pod fails on it. The watch skips Helm
    /// release Secrets ([`SKIPPED_SECRET_TYPES`]), the large Secrets no workload
    /// reads.
    KeysOnly,
}

/// The field selector of a keys-only Secret watch: Helm keeps every release's
/// manifest in a Secret of this type, often hundreds of kilobytes, and no product
/// reads one.
pub const SKIPPED_SECRET_TYPES: &str = "type!=helm.sh/release.v1";

/// Empties every value of `secret`, keeping its key names.
pub(crate) fn strip_secret_values(secret: &mut Secret) {
    for value in secret.data.iter_mut().flat_map(|data| data.values_mut()) {
        value.0.clear();
    }
    if let Some(string_data) = secret.string_data.take() {
        let data = secret.data.get_or_insert_with(BTreeMap::new);
        for key in string_data.into_keys() {
            data.entry(key).or_default();
        }
    }
}

/// A kind one controller reads and does not own, as the RBAC rules and the docs see it.
/// Whether owners name or select its objects is up to each owner ([`Target`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ReferencedKind {
    /// The kind.
    pub resource: ApiResource,
    /// What is cached of them.
    pub content: Content,
}

/// One object, or a set of objects, that an owner refers to.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    /// The object `name` in `namespace`.
    Named {
        /// Where the object lives.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// Every object in `namespace` whose labels `selector` matches.
    Selected {
        /// Where the objects live.
        namespace: String,
        /// Which of them.
        selector: LabelSelector,
    },
}

impl Target {
    /// The object `name` in `namespace`.
    pub fn named(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self::Named {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The objects in `namespace` that `selector` matches.
    pub fn selected(namespace: impl Into<String>, selector: LabelSelector) -> Self {
        Self::Selected {
            namespace: namespace.into(),
            selector,
        }
    }
}

/// Whether `selector` matches `labels`, by the Kubernetes rules: every `matchLabels`
/// pair and every expression must hold; an empty selector matches everything.
/// An unknown operator matches nothing, as the API server would reject it.
pub fn selector_matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let pairs_hold = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(key, value)| labels.get(key) == Some(value));
    let expressions_hold = selector.match_expressions.iter().flatten().all(|expr| {
        let values = expr.values.as_deref().unwrap_or_default();
        let value = labels.get(&expr.key);
        match expr.operator.as_str() {
            "In" => value.is_some_and(|value| values.contains(value)),
            "NotIn" => value.is_none_or(|value| !values.contains(value)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    });
    pairs_hold && expressions_hold
}

/// The watch caches of every referenced kind of one controller, read by type.
#[derive(Clone, Default)]
pub struct References {
    stores: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
    readiness: Vec<Arc<dyn ReadyCheck>>,
}

impl std::fmt::Debug for References {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("References")
            .field("kinds", &self.stores.len())
            .finish()
    }
}

/// `<uid>/<resourceVersion>`: changes with every write, and differs between an object
/// and one deleted and created again under its name.
fn version_of(meta: &ObjectMeta) -> String {
    format!(
        "{}/{}",
        meta.uid.as_deref().unwrap_or_default(),
        meta.resource_version.as_deref().unwrap_or_default()
    )
}

/// Why a reference could not be read; always an operator bug, because the controller
/// reads a kind it did not declare.
#[derive(Debug, thiserror::Error)]
#[error("the controller reads {kind} objects but does not declare them as a reference")]
pub struct UndeclaredReference {
    /// The kind that was read.
    pub kind: String,
}

impl crate::error::StepError for UndeclaredReference {
    fn reason(&self) -> &'static str {
        "UndeclaredReference"
    }

    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::OperatorBug
    }
}

impl References {
    fn store<T>(&self) -> Result<&Store<T>, UndeclaredReference>
    where
        T: Resource<DynamicType = ()> + Clone + 'static,
    {
        self.stores
            .get(&TypeId::of::<T>())
            .and_then(|store| store.downcast_ref::<Store<T>>())
            .ok_or_else(|| UndeclaredReference {
                kind: std::any::type_name::<T>().to_owned(),
            })
    }

    /// The object `name` in `namespace` from the cache, or `None` when it does not
    /// exist.
    pub fn get<R>(&self, namespace: &str, name: &str) -> Result<Option<Arc<R>>, UndeclaredReference>
    where
        R: Resource<DynamicType = ()> + Clone + 'static,
    {
        Ok(self
            .store::<R>()?
            .get(&ObjectRef::new(name).within(namespace)))
    }

    /// The version of the object `name` in `namespace` (`<uid>/<resourceVersion>`), or
    /// `None` when it does not exist: what [`crate::pipeline::Prepared::rolling_on`]
    /// rolls pods on. Every write to the object gives a new version, a change of its
    /// labels too: the version is all the operator knows of a Secret's values, and it
    /// reveals nothing of them.
    pub fn version<R>(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<String>, UndeclaredReference>
    where
        R: Resource<DynamicType = ()> + Clone + 'static,
    {
        Ok(self
            .get::<R>(namespace, name)?
            .map(|object| version_of(object.meta())))
    }

    /// The metadata of the object `name` in `namespace`, for kinds cached as metadata
    /// only (Secrets).
    pub fn metadata<R>(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<PartialObjectMeta<R>>>, UndeclaredReference>
    where
        R: Resource<DynamicType = ()> + Clone + 'static,
    {
        Ok(self
            .store::<PartialObjectMeta<R>>()?
            .get(&ObjectRef::new(name).within(namespace)))
    }

    /// The objects in `namespace` that `selector` matches, sorted by name.
    pub fn selected<R>(
        &self,
        namespace: &str,
        selector: &LabelSelector,
    ) -> Result<Vec<Arc<R>>, UndeclaredReference>
    where
        R: Resource<DynamicType = ()> + Clone + 'static,
    {
        let mut objects = self.store::<R>()?.state_filter(|object| {
            object.meta().namespace.as_deref() == Some(namespace)
                && selector_matches(selector, object.labels())
        });
        objects.sort_by_key(|object| object.name_any());
        Ok(objects)
    }

    /// Waits until every cache holds its first complete list; false when a cache was
    /// dropped before that.
    pub async fn wait_until_ready(&self) -> bool {
        for check in &self.readiness {
            if !check.wait().await {
                return false;
            }
        }
        true
    }

    fn insert<T>(&mut self, store: Store<T>)
    where
        T: Resource + Clone + Send + Sync + 'static,
        T::DynamicType: Clone + Eq + std::hash::Hash + Send + Sync,
    {
        self.readiness.push(Arc::new(store.clone()));
        self.stores.insert(TypeId::of::<T>(), Arc::new(store));
    }
}

/// A store that can be waited on, whatever its object type.
trait ReadyCheck: Send + Sync {
    fn wait(&self) -> futures::future::BoxFuture<'_, bool>;
}

impl<T> ReadyCheck for Store<T>
where
    T: Resource + Clone + Send + Sync + 'static,
    T::DynamicType: Clone + Eq + std::hash::Hash + Send + Sync,
{
    fn wait(&self) -> futures::future::BoxFuture<'_, bool> {
        Box::pin(async move { self.wait_until_ready().await.is_ok() })
    }
}

/// The owners' side of one reference declaration: how to find what an owner refers to,
/// and how to start the cache and the requeue.
pub(crate) trait ReferenceWatch<P>: Send + Sync
where
    P: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    /// The kind, for RBAC and docs.
    fn kind(&self) -> ReferencedKind;

    /// Starts the cache of the kind, stores it in `references`, and makes `controller`
    /// requeue the owners of every object that changes.
    fn attach(
        &self,
        controller: Controller<Guarded<P>>,
        client: &Client,
        namespace: Option<&str>,
        index: ReferenceIndex<Guarded<P>>,
        references: &mut References,
    ) -> Controller<Guarded<P>>;

    /// What `owner` refers to through this declaration.
    fn targets(&self, owner: &P) -> Vec<Target>;
}

/// A typed declaration: owners of kind `P` refer to objects of kind `R`.
pub(crate) struct Declared<P, R> {
    pub(crate) content: Content,
    pub(crate) targets: fn(&P) -> Vec<Target>,
    /// What of a referenced object its owners depend on; `None`: every change.
    pub(crate) significance: Option<fn(&R) -> u64>,
    pub(crate) kind: std::marker::PhantomData<fn() -> R>,
}

fn api_for<T>(client: &Client, namespace: Option<&str>) -> Api<T>
where
    T: Resource<DynamicType = (), Scope = NamespaceResourceScope>,
{
    match namespace {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    }
}

fn requeue<P, T>(
    index: ReferenceIndex<Guarded<P>>,
) -> impl Fn(T) -> Vec<ObjectRef<Guarded<P>>> + Send + Sync + 'static
where
    P: Resource<DynamicType = ()> + 'static,
    T: Resource,
{
    move |changed: T| {
        let namespace = changed.meta().namespace.clone().unwrap_or_default();
        let name = changed.meta().name.clone().unwrap_or_default();
        let labels = changed.meta().labels.clone().unwrap_or_default();
        index.owners_of(&namespace, &name, &labels)
    }
}

impl<P, R> ReferenceWatch<P> for Declared<P, R>
where
    P: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    R: Readable,
{
    fn kind(&self) -> ReferencedKind {
        ReferencedKind {
            resource: ApiResource::erase::<R>(&()),
            content: self.content,
        }
    }

    fn attach(
        &self,
        controller: Controller<Guarded<P>>,
        client: &Client,
        namespace: Option<&str>,
        index: ReferenceIndex<Guarded<P>>,
        references: &mut References,
    ) -> Controller<Guarded<P>> {
        match self.content {
            Content::Full => {
                let (store, writer) = reflector::store::<R>();
                let cached = store.clone();
                let last_readable = move |metadata: &ObjectMeta| {
                    let name = metadata.name.as_deref()?;
                    let key = ObjectRef::new(name).within(metadata.namespace.as_deref()?);
                    cached.get(&key).map(|object| R::clone(&object))
                };
                // Read through `Guarded`, so one object the operator's types cannot
                // read (a custom resource whose schema lets a wrong shape through)
                // does not fail the whole list and stall every owner.
                let events = watcher(
                    api_for::<Guarded<R>>(client, namespace),
                    watcher::Config::default(),
                )
                .default_backoff()
                .filter_map(move |event| {
                    let event = match event {
                        Ok(event) => readable(event, &last_readable)
                            .map(|event| Ok(event.modify(crate::cache::trim_metadata))),
                        Err(error) => Some(Err(error)),
                    };
                    async move { event }
                });
                let stream =
                    requeue_stream(reflector::reflector(writer, events), self.significance);
                references.insert(store);
                controller.watches_stream(stream, requeue::<P, R>(index))
            }
            Content::MetadataOnly => {
                let (store, writer) = reflector::store::<PartialObjectMeta<R>>();
                let api = api_for::<PartialObjectMeta<R>>(client, namespace);
                let events = watcher(api, watcher::Config::default())
                    .default_backoff()
                    .map(|event| event.map(|event| event.modify(crate::cache::trim_metadata)));
                let stream = requeue_stream(reflector::reflector(writer, events), None);
                references.insert(store);
                controller.watches_stream(stream, requeue::<P, PartialObjectMeta<R>>(index))
            }
            Content::KeysOnly => {
                let (store, writer) = reflector::store::<Secret>();
                let config = watcher::Config::default().fields(SKIPPED_SECRET_TYPES);
                let events = watcher(api_for::<Secret>(client, namespace), config)
                    .default_backoff()
                    .map(|event| {
                        event.map(|event| {
                            event.modify(|secret| {
                                strip_secret_values(secret);
                                crate::cache::trim_metadata(secret);
                            })
                        })
                    });
                let stream = requeue_stream(reflector::reflector(writer, events), None);
                references.insert(store);
                controller.watches_stream(stream, requeue::<P, Secret>(index))
            }
        }
    }

    fn targets(&self, owner: &P) -> Vec<Target> {
        (self.targets)(owner)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
    use rstest::rstest;

    use super::*;

    fn expression(key: &str, operator: &str, values: &[&str]) -> LabelSelector {
        LabelSelector {
            match_labels: None,
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: key.to_owned(),
                operator: operator.to_owned(),
                values: (!values.is_empty())
                    .then(|| values.iter().map(|v| (*v).to_owned()).collect()),
            }]),
        }
    }

    fn pairs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn a_keys_only_secret_keeps_every_key_name_and_no_value() {
        let mut secret = Secret {
            data: Some(BTreeMap::from([(
                "password".to_owned(),
                k8s_openapi::ByteString(b"hunter2".to_vec()),
            )])),
            string_data: Some(BTreeMap::from([(
                "username".to_owned(),
                "admin".to_owned(),
            )])),
            ..Secret::default()
        };
        strip_secret_values(&mut secret);
        let data = secret.data.expect("data");
        assert_eq!(
            data.keys().collect::<Vec<_>>(),
            ["password", "username"],
            "both key names survive"
        );
        assert!(data.values().all(|value| value.0.is_empty()), "{data:?}");
        assert_eq!(secret.string_data, None);
    }

    #[rstest]
    #[case::empty_selector_matches_all(LabelSelector::default(), &[("a", "1")], true)]
    #[case::match_labels_hold(LabelSelector { match_labels: Some(pairs(&[("a", "1")])), match_expressions: None }, &[("a", "1"), ("b", "2")], true)]
    #[case::match_labels_differ(LabelSelector { match_labels: Some(pairs(&[("a", "1")])), match_expressions: None }, &[("a", "2")], false)]
    #[case::in_holds(expression("tier", "In", &["gold", "silver"]), &[("tier", "gold")], true)]
    #[case::in_missing_label(expression("tier", "In", &["gold"]), &[], false)]
    #[case::not_in_without_label(expression("tier", "NotIn", &["gold"]), &[], true)]
    #[case::not_in_excluded(expression("tier", "NotIn", &["gold"]), &[("tier", "gold")], false)]
    #[case::exists(expression("tier", "Exists", &[]), &[("tier", "x")], true)]
    #[case::does_not_exist(expression("tier", "DoesNotExist", &[]), &[("tier", "x")], false)]
    #[case::unknown_operator_matches_nothing(expression("tier", "Like", &["x"]), &[("tier", "x")], false)]
    fn selectors(
        #[case] selector: LabelSelector,
        #[case] labels: &[(&str, &str)],
        #[case] expected: bool,
    ) {
        assert_eq!(selector_matches(&selector, &pairs(labels)), expected);
    }
}
