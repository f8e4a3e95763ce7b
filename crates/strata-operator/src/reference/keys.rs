//! Keys the pods read from Secrets and ConfigMaps they reference: checked to exist
//! before anything is applied, and versioned, so that a change rolls the pods.
//!
//! A pod reads `secretKeyRef` and `configMapKeyRef` once, at start, and does not start
//! at all when a key is missing. So the operator checks every key first (a clear
//! condition instead of pods stuck in `CreateContainerConfigError`), and hands the
//! versions of the objects to [`crate::pipeline::Prepared::rolling_on`].

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};

use kube::Resource;

use super::{References, UndeclaredReference, version_of};
use crate::error::{ErrorKind, StepError};

/// The kind of object a pod reads keys from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::Display)]
pub enum KeySource {
    /// `secretKeyRef`; the operator caches only the key names.
    Secret,
    /// `configMapKeyRef`; the keys of `data`.
    ConfigMap,
}

/// Keys the pods read from one Secret or ConfigMap, and where the spec names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeysRead<'a> {
    /// Secret or ConfigMap.
    pub object: KeySource,
    /// The object's name, in the reader's namespace.
    pub name: &'a str,
    /// The keys the pods read.
    pub keys: Vec<&'a str>,
    /// Where the spec names the object, for messages (`clusterConfig.adminUser.secretName`).
    pub field: &'a str,
}

/// Why the keys cannot be read. Missing objects and keys are transient: the reference
/// watch requeues the reader as soon as the object appears or changes.
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    /// The object does not exist: `SecretMissing` or `ConfigMapMissing`.
    #[error(
        "the {object} {namespace}/{name} ({field}) does not exist; it must hold the key(s) {keys}"
    )]
    Missing {
        /// Secret or ConfigMap.
        object: KeySource,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Where the spec names it.
        field: String,
        /// Every key the pods read from it, comma-separated.
        keys: String,
    },
    /// The object lacks keys: `SecretKeyMissing` or `ConfigMapKeyMissing`.
    #[error("the {object} {namespace}/{name} ({field}) has no key(s) {keys}")]
    KeyMissing {
        /// Secret or ConfigMap.
        object: KeySource,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Where the spec names it.
        field: String,
        /// The missing keys only, comma-separated.
        keys: String,
    },
    /// The controller did not declare the kind as a reference: the operator's bug.
    #[error(transparent)]
    Undeclared(#[from] UndeclaredReference),
}

impl StepError for KeysError {
    fn reason(&self) -> &'static str {
        match self {
            Self::Missing {
                object: KeySource::Secret,
                ..
            } => "SecretMissing",
            Self::Missing {
                object: KeySource::ConfigMap,
                ..
            } => "ConfigMapMissing",
            Self::KeyMissing {
                object: KeySource::Secret,
                ..
            } => "SecretKeyMissing",
            Self::KeyMissing {
                object: KeySource::ConfigMap,
                ..
            } => "ConfigMapKeyMissing",
            Self::Undeclared(error) => error.reason(),
        }
    }

    fn kind(&self) -> ErrorKind {
        match self {
            Self::Missing { .. } | Self::KeyMissing { .. } => ErrorKind::Transient,
            Self::Undeclared(error) => error.kind(),
        }
    }
}

impl KeysRead<'_> {
    /// The object does not exist.
    fn missing(&self, namespace: &str) -> KeysError {
        KeysError::Missing {
            object: self.object,
            namespace: namespace.to_owned(),
            name: self.name.to_owned(),
            field: self.field.to_owned(),
            keys: self.keys.join(", "),
        }
    }

    /// The object lacks `missing`.
    fn lacking(&self, namespace: &str, missing: &[&str]) -> KeysError {
        KeysError::KeyMissing {
            object: self.object,
            namespace: namespace.to_owned(),
            name: self.name.to_owned(),
            field: self.field.to_owned(),
            keys: missing.join(", "),
        }
    }
}

impl References {
    /// Checks that every object in `reads` exists in `namespace` with the keys the pods
    /// read, and returns the objects' versions by `<Kind>/<name>`, for
    /// [`crate::pipeline::Prepared::rolling_on`]. The first problem is the error.
    pub fn check_keys<'a>(
        &self,
        namespace: &str,
        reads: impl IntoIterator<Item = KeysRead<'a>>,
    ) -> Result<BTreeMap<String, String>, KeysError> {
        let mut versions = BTreeMap::new();
        for read in reads {
            // One lookup for keys and version, so both describe the same object.
            let found = match read.object {
                KeySource::Secret => self
                    .get::<Secret>(namespace, read.name)?
                    .map(|secret| (key_names(secret.data.as_ref()), version_of(secret.meta()))),
                KeySource::ConfigMap => {
                    self.get::<ConfigMap>(namespace, read.name)?
                        .map(|config_map| {
                            (
                                key_names(config_map.data.as_ref()),
                                version_of(config_map.meta()),
                            )
                        })
                }
            };
            let Some((present, version)) = found else {
                return Err(read.missing(namespace));
            };
            let missing: Vec<&str> = read
                .keys
                .iter()
                .copied()
                .filter(|key| !present.contains(*key))
                .collect();
            if !missing.is_empty() {
                return Err(read.lacking(namespace, &missing));
            }
            versions.insert(format!("{}/{}", read.object, read.name), version);
        }
        Ok(versions)
    }
}

/// The key names of a Secret's or ConfigMap's data.
fn key_names<V>(data: Option<&BTreeMap<String, V>>) -> BTreeSet<String> {
    data.into_iter().flat_map(BTreeMap::keys).cloned().collect()
}

#[cfg(test)]
mod tests;
