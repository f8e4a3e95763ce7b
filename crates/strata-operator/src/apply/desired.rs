//! Desired objects: what the pure build step hands to the apply step.
//!
//! The build step pushes typed objects. They stay typed until the apply step
//! erases them ([`DesiredObjects::into_objects`]), because only the apply
//! step knows whether the cluster is stopped: stopping is the same for every
//! product ([`ChildObject::stop`]), so no builder has to know about it.

use std::fmt::Debug;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{ApiResource, DynamicObject};
use serde_json::Value;

use super::compare::{DESIRED_HASH_ANNOTATION, content_hash, is_subset};
use crate::cache::ChildKind;
use crate::child::ChildObject;

/// Annotation on objects the operator creates once and never patches, such as
/// generated secrets; it tells people why edits to them are left alone.
pub const CREATE_ONCE_ANNOTATION: &str = "strata.dev/create-once";

/// Annotation on create-once objects that outlive their owner
/// ([`ApplyMode::CreateOnceRetained`]); it tells people why deleting the cluster left
/// them, and that deleting them is theirs to decide.
pub const RETAINED_ANNOTATION: &str = "strata.dev/retained";

/// Why a typed object could not become a desired object.
#[derive(Debug, thiserror::Error)]
pub enum DesiredObjectError {
    /// Serialisation of k8s-openapi types does not fail in practice; the
    /// variant exists so that no caller has to unwrap.
    #[error("could not serialise {kind}: {source}")]
    Serialise {
        /// The kind that failed.
        kind: String,
        /// The serde error.
        source: serde_json::Error,
    },
    /// Every object we create needs a name; generated names would be created
    /// again on every reconcile.
    #[error("a desired {kind} has no name")]
    MissingName {
        /// The kind without a name.
        kind: String,
    },
    /// A create-once object's values could not be generated.
    #[error("could not generate the values of a {kind}: {message}")]
    Generate {
        /// The kind being generated.
        kind: String,
        /// What went wrong.
        message: String,
    },
}

/// One object the operator wants to exist, in its apply form.
#[derive(Clone, Debug, PartialEq)]
pub struct DesiredObject {
    kind: ChildKind,
    name: String,
    value: Value,
    mode: ApplyMode,
    /// The body sent to the API server when it differs from `value`: a create-once
    /// object's with its generated values filled in, or a sealed object's with its
    /// Secret values ([`DesiredObjects::push_sealed`]).
    creation: Option<Redacted<Value>>,
}

/// A value that holds what no log may show (generated keys, a Secret's values): its
/// `Debug` output names it without showing it.
#[derive(Clone, PartialEq)]
struct Redacted<T>(T);

impl<T> Debug for Redacted<T> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("<redacted>")
    }
}

/// How the apply step treats an object that already exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApplyMode {
    /// Server-side apply with force whenever the cached copy differs.
    Apply,
    /// Created when missing, never patched afterwards, still pruned with its
    /// owner: for values generated once that must survive every reconcile and
    /// operator restart, and whose loss with the owner costs nothing (Trino's
    /// internal shared secret: every pod that used it goes with the cluster).
    CreateOnce,
    /// Created when missing, never patched, and never owned: no owner reference,
    /// so the garbage collector never takes it with the cluster, and never pruned.
    /// An object of that name that exists already is adopted as it is, whoever
    /// made it. For values that protect data outliving the cluster (Superset's
    /// `SECRET_KEY`, which encrypts what the user's metadata database stores).
    CreateOnceRetained,
    /// Server-side applied like [`ApplyMode::Apply`], but never owned, like
    /// [`ApplyMode::CreateOnceRetained`]: for a retained object the operator rewrites on
    /// purpose (a CA Secret during a rotation step). An existing object of its name is
    /// adopted, since the step that decided the rewrite has read it.
    ApplyRetained,
    /// A retained object the apply step only adopts: released from its owner when it
    /// exists, never created, never patched (a kept CA Secret). Creating it again from
    /// what the operator read before would hide that someone deleted it, and only by
    /// chance, when a reconcile read it just before.
    AdoptRetained,
}

impl ApplyMode {
    /// Whether the object is created once and never patched.
    pub fn is_create_once(self) -> bool {
        matches!(
            self,
            Self::CreateOnce | Self::CreateOnceRetained | Self::AdoptRetained
        )
    }

    /// Whether the object outlives its owner: it has no owner reference, so neither the
    /// garbage collector nor pruning ever deletes it.
    pub fn is_retained(self) -> bool {
        matches!(
            self,
            Self::CreateOnceRetained | Self::ApplyRetained | Self::AdoptRetained
        )
    }
}

impl DesiredObject {
    /// Type-erases a built object, keeping its kind so it can be applied and
    /// compared against the cache of that kind.
    pub fn new<K>(object: &K) -> Result<Self, DesiredObjectError>
    where
        K: ChildObject + Default,
    {
        Self::with_mode(object, ApplyMode::Apply)
    }

    fn with_mode<K>(object: &K, mode: ApplyMode) -> Result<Self, DesiredObjectError>
    where
        K: ChildObject + Default,
    {
        let kind = ChildKind::of::<K>();
        let name = object
            .meta()
            .name
            .clone()
            .ok_or_else(|| DesiredObjectError::MissingName {
                kind: kind.resource.kind.clone(),
            })?;
        let mut value =
            serde_json::to_value(object).map_err(|source| DesiredObjectError::Serialise {
                kind: kind.resource.kind.clone(),
                source,
            })?;
        if let Value::Object(map) = &mut value {
            map.insert(
                "apiVersion".into(),
                Value::String(kind.resource.api_version.clone()),
            );
            map.insert("kind".into(), Value::String(kind.resource.kind.clone()));
        }
        let mut desired = Self {
            kind,
            name,
            value,
            mode,
            creation: None,
        };
        if mode.is_create_once() {
            desired.annotate(CREATE_ONCE_ANNOTATION, "true");
        }
        if mode.is_retained() {
            desired.annotate(RETAINED_ANNOTATION, "true");
        }
        Ok(desired)
    }

    /// The kind of the object.
    pub fn kind(&self) -> &ChildKind {
        &self.kind
    }

    /// The kind's API resource.
    pub fn resource(&self) -> &ApiResource {
        &self.kind.resource
    }

    /// The object's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The apply body.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// How the apply step treats the object once it exists.
    pub fn mode(&self) -> ApplyMode {
        self.mode
    }

    /// `Kind/name`, for logs and reports.
    pub fn display_name(&self) -> String {
        format!("{}/{}", self.kind.resource.kind, self.name)
    }

    /// A key that identifies the object among all kinds.
    pub fn key(&self) -> String {
        object_key(&self.kind.resource, &self.name)
    }

    /// The object as it will be applied for `owner_ref`: with the controller
    /// owner reference (unless it is retained) and the hash annotation of exactly
    /// this content.
    pub fn owned_by(mut self, owner_ref: &OwnerReference) -> Self {
        if self.mode.is_retained() {
            let hash = content_hash(&self.value);
            self.annotate(DESIRED_HASH_ANNOTATION, &hash);
            return self;
        }
        let owner_value = serde_json::json!([{
            "apiVersion": owner_ref.api_version,
            "kind": owner_ref.kind,
            "name": owner_ref.name,
            "uid": owner_ref.uid,
            "controller": true,
            "blockOwnerDeletion": true,
        }]);
        for value in [
            Some(&mut self.value),
            self.creation.as_mut().map(|body| &mut body.0),
        ]
        .into_iter()
        .flatten()
        {
            if let Some(Value::Object(metadata)) = value.get_mut("metadata") {
                metadata.insert("ownerReferences".into(), owner_value.clone());
            }
        }
        let hash = content_hash(&self.value);
        self.annotate(DESIRED_HASH_ANNOTATION, &hash);
        self
    }

    /// Whether the cached object already is what we would apply: the same
    /// desired content (hash) and no drift in any field we set (subset). A
    /// create-once object matches any existing copy: it is never patched.
    pub fn matches(&self, cached: &DynamicObject) -> bool {
        if self.mode.is_create_once() {
            return true;
        }
        if self.kind.metadata_only() {
            // Only the metadata is cached; the hash annotation in it stands in
            // for the content.
            let Ok(cached_metadata) = serde_json::to_value(&cached.metadata) else {
                return false;
            };
            return self
                .value
                .get("metadata")
                .is_some_and(|metadata| is_subset(metadata, &cached_metadata));
        }
        let Ok(mut cached_value) = crate::cache::full_value(cached) else {
            return false;
        };
        // The items of a LIST carry no apiVersion and kind (a watch's events do), so a
        // cache filled by its first LIST, after an operator restart or a change of
        // leader, holds them without. Each cache holds one kind: they are the desired
        // object's. Without this, every child of every cluster was applied again.
        if let (Value::Object(cached_fields), Some(desired)) =
            (&mut cached_value, self.value.as_object())
        {
            for key in ["apiVersion", "kind"] {
                if let Some(value) = desired.get(key) {
                    cached_fields.entry(key).or_insert_with(|| value.clone());
                }
            }
        }
        is_subset(&self.value, &cached_value)
    }

    /// The body to create or apply the object with: the generated values of a
    /// create-once object or the values of a sealed one filled in, otherwise the
    /// desired content.
    pub fn creation_value(&self) -> &Value {
        self.creation.as_ref().map_or(&self.value, |body| &body.0)
    }

    /// The object as plain JSON, for `render`. A create-once or sealed object is
    /// shown without its `data` and `stringData`: its values exist only in the
    /// cluster.
    pub fn into_value(mut self) -> Value {
        if (self.mode.is_create_once() || self.creation.is_some())
            && let Value::Object(map) = &mut self.value
        {
            map.remove("data");
            map.remove("stringData");
        }
        self.value
    }

    /// Annotates the compared content and the body sent alike, so that what the API
    /// server stores carries the same hash the next comparison looks for.
    fn annotate(&mut self, key: &str, value: &str) {
        for body in [
            Some(&mut self.value),
            self.creation.as_mut().map(|body| &mut body.0),
        ]
        .into_iter()
        .flatten()
        {
            if let Some(Value::Object(metadata)) = body.get_mut("metadata") {
                let annotations = metadata
                    .entry("annotations")
                    .or_insert_with(|| Value::Object(Default::default()));
                if let Value::Object(annotations) = annotations {
                    annotations.insert(key.into(), Value::String(value.to_owned()));
                }
            }
        }
    }
}

/// The key of an object among all kinds: `apiVersion/kind/name`.
pub(crate) fn object_key(resource: &ApiResource, name: &str) -> String {
    format!("{}/{}/{}", resource.api_version, resource.kind, name)
}

/// A built object that is still typed, so the apply step can stop it.
trait TypedChild: Debug + Send + Sync {
    fn erase(&self, stopped: bool) -> Result<DesiredObject, DesiredObjectError>;
    fn kind(&self) -> ChildKind;
    fn name(&self) -> String;
    fn annotate_pod_template(&mut self, key: &str, value: &str);
    fn pod_template(&mut self) -> Option<&mut k8s_openapi::api::core::v1::PodTemplateSpec>;
    fn clone_box(&self) -> Box<dyn TypedChild>;
}

#[derive(Clone, Debug)]
struct Typed<K> {
    object: K,
    mode: ApplyMode,
    /// Fills generated values into a create-once object when it is created.
    fill: Option<Fill<K>>,
    /// The body sent in place of `object`, which holds values that must never be
    /// compared, hashed or rendered ([`DesiredObjects::push_sealed`]).
    sealed: Option<Redacted<K>>,
}

/// Generates the values of a create-once object; an error names what could not
/// be generated (for example, no randomness available).
pub type Fill<K> = fn(&mut K) -> Result<(), String>;

impl<K: ChildObject + Default> TypedChild for Typed<K> {
    fn erase(&self, stopped: bool) -> Result<DesiredObject, DesiredObjectError> {
        let mut desired = if stopped {
            let mut object = self.object.clone();
            object.stop();
            DesiredObject::with_mode(&object, self.mode)?
        } else {
            DesiredObject::with_mode(&self.object, self.mode)?
        };
        if let Some(fill) = self.fill {
            let mut object = self.object.clone();
            fill(&mut object).map_err(|message| DesiredObjectError::Generate {
                kind: desired.kind.resource.kind.clone(),
                message,
            })?;
            desired.creation = Some(Redacted(
                DesiredObject::with_mode(&object, self.mode)?.value,
            ));
        }
        if let Some(Redacted(sealed)) = &self.sealed {
            desired.creation = Some(Redacted(DesiredObject::with_mode(sealed, self.mode)?.value));
        }
        Ok(desired)
    }

    fn kind(&self) -> ChildKind {
        ChildKind::of::<K>()
    }

    fn name(&self) -> String {
        self.object.meta().name.clone().unwrap_or_default()
    }

    fn annotate_pod_template(&mut self, key: &str, value: &str) {
        if let Some(template) = self.object.pod_template_mut() {
            template
                .metadata
                .get_or_insert_with(Default::default)
                .annotations
                .get_or_insert_with(Default::default)
                .insert(key.to_owned(), value.to_owned());
        }
    }

    fn pod_template(&mut self) -> Option<&mut k8s_openapi::api::core::v1::PodTemplateSpec> {
        self.object.pod_template_mut()
    }

    fn clone_box(&self) -> Box<dyn TypedChild> {
        Box::new(self.clone())
    }
}

impl Clone for Box<dyn TypedChild> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

/// Everything one reconcile wants to exist, as typed objects.
#[derive(Clone, Debug, Default)]
pub struct DesiredObjects {
    objects: Vec<Box<dyn TypedChild>>,
}

impl DesiredObjects {
    /// No objects yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues `object`; the public methods name the modes and what each is for.
    fn push_typed<K: ChildObject + Default>(
        &mut self,
        object: K,
        mode: ApplyMode,
        fill: Option<Fill<K>>,
        sealed: Option<K>,
    ) {
        self.objects.push(Box::new(Typed {
            object,
            mode,
            fill,
            sealed: sealed.map(Redacted),
        }));
    }

    /// Adds an object that the apply step keeps exactly as built.
    pub fn push<K: ChildObject + Default>(&mut self, object: K) {
        self.push_typed(object, ApplyMode::Apply, None, None);
    }

    /// Adds the objects of one role group, files first, so they exist before the
    /// pods that mount them. Destructured field by field: a new kind of role group
    /// object that is not applied does not compile.
    pub fn push_role_group(&mut self, objects: strata_model::build::RoleGroupObjects) {
        let strata_model::build::RoleGroupObjects {
            config_map,
            headless_service,
            metrics_service,
            stateful_set,
        } = objects;
        self.push(config_map);
        self.push(headless_service);
        self.push(metrics_service);
        self.push(stateful_set);
    }

    /// Adds the Prometheus Operator objects a cluster asks for
    /// (`clusterConfig.monitoring`). Destructured like a role group's objects.
    pub fn push_monitoring(&mut self, objects: strata_model::monitoring::MonitoringObjects) {
        let strata_model::monitoring::MonitoringObjects {
            service_monitor,
            prometheus_rule,
        } = objects;
        if let Some(service_monitor) = service_monitor {
            self.push(service_monitor);
        }
        if let Some(prometheus_rule) = prometheus_rule {
            self.push(prometheus_rule);
        }
    }

    /// Adds an object that is created when missing and never patched
    /// afterwards. `fill` runs on a copy just before the object is created, so
    /// values it generates (a random secret key) reach the API server once and
    /// are never part of the desired content, the comparison or `render`.
    pub fn push_create_once<K: ChildObject + Default>(&mut self, object: K, fill: Fill<K>) {
        self.push_typed(object, ApplyMode::CreateOnce, Some(fill), None);
    }

    /// Like [`push_create_once`](Self::push_create_once), but the object outlives
    /// its owner ([`ApplyMode::CreateOnceRetained`]): it is created without an owner
    /// reference, and an object of its name that exists already is adopted.
    pub fn push_retained<K: ChildObject + Default>(&mut self, object: K, fill: Fill<K>) {
        self.push_typed(object, ApplyMode::CreateOnceRetained, Some(fill), None);
    }

    /// Adds an object applied like any other but sent as `sealed`: `shown` is what is
    /// compared, hashed and rendered, so values that must never appear (a private key)
    /// stay out of `render`, the hash and the caches. `shown` must carry something that
    /// changes with those values (a certificate's fingerprint as an annotation), or a
    /// new value would never be applied.
    pub fn push_sealed<K: ChildObject + Default>(&mut self, shown: K, sealed: K) {
        self.push_typed(shown, ApplyMode::Apply, None, Some(sealed));
    }

    /// Like [`push_sealed`](Self::push_sealed), but created once and never patched
    /// ([`ApplyMode::CreateOnce`]): for values made in this reconcile that must never
    /// replace what another made (a CA that pods already trust).
    pub fn push_sealed_once<K: ChildObject + Default>(&mut self, shown: K, sealed: K) {
        self.push_typed(shown, ApplyMode::CreateOnce, None, Some(sealed));
    }

    /// Like [`push_sealed_once`](Self::push_sealed_once), but the object outlives its
    /// owner ([`ApplyMode::CreateOnceRetained`]): a CA whose loss would cut off every
    /// client that trusts it, and lock them out of the data on the retained volumes.
    pub fn push_sealed_retained<K: ChildObject + Default>(&mut self, shown: K, sealed: K) {
        self.push_typed(shown, ApplyMode::CreateOnceRetained, None, Some(sealed));
    }

    /// Adopts a retained object as it is stored ([`ApplyMode::AdoptRetained`]): `sealed`
    /// is never sent, and a missing object stays missing.
    pub fn push_sealed_adopted<K: ChildObject + Default>(&mut self, shown: K, sealed: K) {
        self.push_typed(shown, ApplyMode::AdoptRetained, None, Some(sealed));
    }

    /// Like [`push_sealed`](Self::push_sealed), but never owned
    /// ([`ApplyMode::ApplyRetained`]): a retained CA rewritten by a rotation step.
    pub fn push_sealed_retained_rewrite<K: ChildObject + Default>(&mut self, shown: K, sealed: K) {
        self.push_typed(shown, ApplyMode::ApplyRetained, None, Some(sealed));
    }

    /// Sets the annotation `key` on the pod template of every workload that may change
    /// its template, so a new `value` rolls their pods.
    pub fn annotate_pod_templates(&mut self, key: &str, value: &str) {
        for object in &mut self.objects {
            object.annotate_pod_template(key, value);
        }
    }

    /// Applies the operator's pod security policy to every workload's pod template
    /// ([`crate::pod_security`]).
    pub fn apply_pod_security(&mut self, policy: crate::pod_security::PodSecurity) {
        for object in &mut self.objects {
            if let Some(template) = object.pod_template() {
                policy.apply_to(template);
            }
        }
    }

    /// Takes out the objects of `kinds`, and returns them as `Kind/name`: for kinds the
    /// cluster does not serve ([`crate::optional_kinds`]).
    pub fn remove_kinds(&mut self, kinds: &[ChildKind]) -> Vec<String> {
        let mut removed = Vec::new();
        self.objects.retain(|object| {
            let kind = object.kind();
            if kinds.contains(&kind) {
                removed.push(format!("{}/{}", kind.resource.kind, object.name()));
                false
            } else {
                true
            }
        });
        removed
    }

    /// The objects in apply order (what others refer to first), erased for the
    /// API, with every workload stopped when `stopped` is set.
    pub fn into_objects(self, stopped: bool) -> Result<Vec<DesiredObject>, DesiredObjectError> {
        let mut objects = self
            .objects
            .iter()
            .map(|object| object.erase(stopped))
            .collect::<Result<Vec<_>, _>>()?;
        objects.sort_by(|a, b| {
            (a.kind.rank(), &a.kind.resource.kind, &a.name).cmp(&(
                b.kind.rank(),
                &b.kind.resource.kind,
                &b.name,
            ))
        });
        Ok(objects)
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether nothing is desired.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

#[cfg(test)]
mod tests;
