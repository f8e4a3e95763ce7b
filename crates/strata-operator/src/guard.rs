//! Custom resources the operator cannot read, isolated so they do not stop the others.
//!
//! The API server validates a custom resource against its CRD schema, but the schema
//! lets some shapes through that the operator's types refuse (a `podOverrides` of the
//! wrong shape, a string where a later operator version expects a number). Without a
//! guard, one such object fails the whole watch, and every other cluster of the kind
//! stops being reconciled. [`Guarded`] reads such an object as [`Unreadable`], with its
//! metadata (so it can be named in an Event) and the path of the field that failed, and
//! the controller reports it and reconciles the rest.
//!
//! This is the pattern of kube's `DeserializeGuard`; it is our own type because the
//! library's error loses the field path, which is the one thing the user needs to find
//! the mistake.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};

/// A primary object as read from the API: the typed object, or why it is unreadable.
#[derive(Clone, Debug)]
pub struct Guarded<K>(pub Result<K, Unreadable>);

/// An object the operator's types cannot read.
#[derive(Clone, Debug, PartialEq)]
pub struct Unreadable {
    /// The object's metadata, which always deserialises.
    pub metadata: ObjectMeta,
    /// The field that failed, as a JSON path (`spec.servers.replicas`), and why.
    pub error: String,
    /// The stored status conditions, so the report changes only Degraded; empty when
    /// they cannot be read either.
    pub conditions: Vec<strata_status::ClusterCondition>,
}

impl<'de, K> Deserialize<'de> for Guarded<K>
where
    K: DeserializeOwned,
{
    fn deserialize<D>(deserializer: D) -> Result<Self, D::Error>
    where
        D: Deserializer<'de>,
    {
        let value = serde_json::Value::deserialize(deserializer)?;
        // The common case first, without the cost of tracking the path; the path is
        // only worked out for an object that does not deserialise.
        if let Ok(object) = K::deserialize(&value) {
            return Ok(Self(Ok(object)));
        }
        match serde_path_to_error::deserialize::<_, K>(&value) {
            Ok(object) => Ok(Self(Ok(object))),
            Err(error) => {
                let metadata = value
                    .get("metadata")
                    .map(ObjectMeta::deserialize)
                    .transpose()
                    .map_err(serde::de::Error::custom)?
                    .unwrap_or_default();
                let conditions = value
                    .pointer("/status/conditions")
                    .and_then(|conditions| {
                        Vec::<strata_status::ClusterCondition>::deserialize(conditions).ok()
                    })
                    .unwrap_or_default();
                Ok(Self(Err(Unreadable {
                    metadata,
                    error: format!("{}: {}", error.path(), error.inner()),
                    conditions,
                })))
            }
        }
    }
}

impl<K: Resource> Resource for Guarded<K> {
    type DynamicType = K::DynamicType;
    type Scope = K::Scope;

    fn kind(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::kind(dt)
    }

    fn group(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::group(dt)
    }

    fn version(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::version(dt)
    }

    fn plural(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        self.0
            .as_ref()
            .map_or_else(|unreadable| &unreadable.metadata, K::meta)
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.0
            .as_mut()
            .map_or_else(|unreadable| &mut unreadable.metadata, K::meta_mut)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::StatefulSet;
    use serde_json::json;

    use super::*;

    #[test]
    fn a_readable_object_is_read() {
        let guarded: Guarded<StatefulSet> = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "ns"},
            "spec": {"replicas": 2, "selector": {}, "template": {}}
        }))
        .expect("the guard always deserialises");
        assert_eq!(guarded.meta().name.as_deref(), Some("web"));
        assert_eq!(guarded.0.ok().and_then(|sts| sts.spec.replicas), Some(2));
    }

    #[test]
    fn an_unreadable_object_keeps_its_name_and_names_the_field() {
        let guarded: Guarded<StatefulSet> = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "ns"},
            "spec": {"replicas": "three", "selector": {}, "template": {}}
        }))
        .expect("the guard always deserialises");
        assert_eq!(guarded.meta().name.as_deref(), Some("web"));
        let error = guarded.0.err().map(|unreadable| unreadable.error);
        assert!(
            error
                .as_deref()
                .is_some_and(|error| error.starts_with("spec.replicas: ")),
            "{error:?}"
        );
    }
}
