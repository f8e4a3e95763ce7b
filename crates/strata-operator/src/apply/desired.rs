//! Desired objects: what the pure build step hands to the apply step.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource;
use kube::api::{ApiResource, DynamicObject};
use serde::Serialize;
use serde_json::Value;

use super::compare::{DESIRED_HASH_ANNOTATION, content_hash, is_subset};

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
}

/// One object the operator wants to exist, in its apply form.
#[derive(Clone, Debug, PartialEq)]
pub struct DesiredObject {
    resource: ApiResource,
    name: String,
    value: Value,
}

impl DesiredObject {
    /// Type-erases a built object, keeping its kind so it can be applied and
    /// compared against the cache of that kind.
    pub fn new<K>(object: &K) -> Result<Self, DesiredObjectError>
    where
        K: Resource<DynamicType = ()> + Serialize,
    {
        let resource = ApiResource::erase::<K>(&());
        let name = object
            .meta()
            .name
            .clone()
            .ok_or_else(|| DesiredObjectError::MissingName {
                kind: resource.kind.clone(),
            })?;
        let mut value =
            serde_json::to_value(object).map_err(|source| DesiredObjectError::Serialise {
                kind: resource.kind.clone(),
                source,
            })?;
        if let Value::Object(map) = &mut value {
            map.insert(
                "apiVersion".into(),
                Value::String(resource.api_version.clone()),
            );
            map.insert("kind".into(), Value::String(resource.kind.clone()));
        }
        Ok(Self {
            resource,
            name,
            value,
        })
    }

    /// The kind of the object.
    pub fn resource(&self) -> &ApiResource {
        &self.resource
    }

    /// The object's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The apply body.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// `Kind/name`, for logs and reports.
    pub fn display_name(&self) -> String {
        format!("{}/{}", self.resource.kind, self.name)
    }

    /// A key that identifies the object among all kinds.
    pub fn key(&self) -> String {
        object_key(&self.resource, &self.name)
    }

    /// The object as it will be applied for `owner_ref`: with the controller
    /// owner reference and the hash annotation of exactly this content.
    pub fn owned_by(mut self, owner_ref: &OwnerReference) -> Self {
        let owner_value = serde_json::json!([{
            "apiVersion": owner_ref.api_version,
            "kind": owner_ref.kind,
            "name": owner_ref.name,
            "uid": owner_ref.uid,
            "controller": true,
            "blockOwnerDeletion": true,
        }]);
        if let Some(metadata) = self.metadata_mut() {
            metadata.insert("ownerReferences".into(), owner_value);
        }
        let hash = content_hash(&self.value);
        if let Some(metadata) = self.metadata_mut() {
            let annotations = metadata
                .entry("annotations")
                .or_insert_with(|| Value::Object(Default::default()));
            if let Value::Object(annotations) = annotations {
                annotations.insert(DESIRED_HASH_ANNOTATION.into(), Value::String(hash));
            }
        }
        self
    }

    /// Whether the cached object already is what we would apply: the same
    /// desired content (hash) and no drift in any field we set (subset).
    pub fn matches(&self, cached: &DynamicObject) -> bool {
        let Ok(cached_value) = serde_json::to_value(cached) else {
            return false;
        };
        is_subset(&self.value, &cached_value)
    }

    /// The object as plain JSON, for `render`.
    pub fn into_value(self) -> Value {
        self.value
    }

    fn metadata_mut(&mut self) -> Option<&mut serde_json::Map<String, Value>> {
        match self.value.get_mut("metadata") {
            Some(Value::Object(metadata)) => Some(metadata),
            _ => None,
        }
    }
}

/// A key that identifies an object among all kinds in one namespace.
pub(crate) fn object_key(resource: &ApiResource, name: &str) -> String {
    format!("{}/{}/{}", resource.api_version, resource.kind, name)
}

/// Everything the build step wants for one owner.
///
/// Objects are kept sorted by kind and name so that apply order, render output
/// and test expectations are deterministic.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DesiredObjects {
    objects: Vec<DesiredObject>,
}

impl DesiredObjects {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a typed object.
    pub fn push<K>(&mut self, object: &K) -> Result<(), DesiredObjectError>
    where
        K: Resource<DynamicType = ()> + Serialize,
    {
        self.objects.push(DesiredObject::new(object)?);
        Ok(())
    }

    /// The objects, sorted by apply order: config first, then services, then
    /// workloads and budgets, so pods never start before their config exists.
    pub fn into_objects(mut self) -> Vec<DesiredObject> {
        self.objects.sort_by(|a, b| {
            (apply_rank(&a.resource.kind), &a.resource.kind, &a.name).cmp(&(
                apply_rank(&b.resource.kind),
                &b.resource.kind,
                &b.name,
            ))
        });
        self.objects
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Iterates without consuming, in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = &DesiredObject> {
        self.objects.iter()
    }
}

fn apply_rank(kind: &str) -> u8 {
    match kind {
        "ServiceAccount" | "Secret" | "ConfigMap" => 0,
        "Service" => 1,
        "StatefulSet" | "Deployment" | "DaemonSet" | "Job" => 2,
        _ => 3,
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    use super::*;

    fn config_map(data: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some("cm".into()),
                namespace: Some("ns".into()),
                ..ObjectMeta::default()
            },
            data: Some([("k".to_string(), data.to_string())].into()),
            ..ConfigMap::default()
        }
    }

    fn owner() -> OwnerReference {
        OwnerReference {
            api_version: "test.strata.dev/v1alpha1".into(),
            kind: "Owner".into(),
            name: "o".into(),
            uid: "uid-1".into(),
            ..OwnerReference::default()
        }
    }

    fn cached(desired: &DesiredObject) -> DynamicObject {
        let mut value = desired.value().clone();
        value["metadata"]["resourceVersion"] = "7".into();
        value["metadata"]["namespace"] = "ns".into();
        serde_json::from_value(value).expect("valid object")
    }

    #[test]
    fn an_applied_object_matches_its_cached_copy() {
        let desired = DesiredObject::new(&config_map("a"))
            .expect("desired")
            .owned_by(&owner());
        assert!(desired.matches(&cached(&desired)));
    }

    #[test]
    fn drift_in_a_field_we_set_does_not_match() {
        let desired = DesiredObject::new(&config_map("a"))
            .expect("desired")
            .owned_by(&owner());
        let mut drifted = cached(&desired);
        drifted.data["data"]["k"] = "edited".into();
        assert!(!desired.matches(&drifted));
    }

    #[test]
    fn changed_desired_content_does_not_match_the_old_copy() {
        let old = DesiredObject::new(&config_map("a"))
            .expect("desired")
            .owned_by(&owner());
        let new = DesiredObject::new(&config_map("b"))
            .expect("desired")
            .owned_by(&owner());
        assert!(!new.matches(&cached(&old)));
    }

    #[test]
    fn owner_reference_and_hash_are_set() {
        let desired = DesiredObject::new(&config_map("a"))
            .expect("desired")
            .owned_by(&owner());
        let metadata = &desired.value()["metadata"];
        assert_eq!(metadata["ownerReferences"][0]["uid"], "uid-1");
        assert_eq!(metadata["ownerReferences"][0]["controller"], true);
        assert!(metadata["annotations"][DESIRED_HASH_ANNOTATION].is_string());
        assert_eq!(desired.value()["kind"], "ConfigMap");
        assert_eq!(desired.value()["apiVersion"], "v1");
    }

    #[test]
    fn objects_are_ordered_config_first() {
        let mut objects = DesiredObjects::new();
        objects
            .push(&k8s_openapi::api::apps::v1::StatefulSet {
                metadata: ObjectMeta {
                    name: Some("a".into()),
                    ..ObjectMeta::default()
                },
                ..Default::default()
            })
            .expect("push");
        objects.push(&config_map("x")).expect("push");
        let kinds: Vec<_> = objects
            .into_objects()
            .iter()
            .map(|o| o.resource().kind.clone())
            .collect();
        assert_eq!(kinds, ["ConfigMap", "StatefulSet"]);
    }
}
