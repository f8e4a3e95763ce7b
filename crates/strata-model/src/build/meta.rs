//! Object metadata and the config hash.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use sha2::{Digest, Sha256};

/// Pod template annotation holding the hash of the files the pods mount.
pub const CONFIG_HASH_ANNOTATION: &str = "strata.dev/config-hash";

/// Pod template annotation holding the hash of the versions of the objects the pods
/// read but the operator does not own (a Secret named in the spec, through
/// `secretKeyRef`), so a new version rolls the pods as a changed file does.
pub const REFERENCES_HASH_ANNOTATION: &str = "strata.dev/references-hash";

/// Metadata every built object starts from. No owner reference: the apply step adds
/// it to every object, because only it knows the owner's uid.
pub fn object_meta(name: &str, namespace: &str, labels: BTreeMap<String, String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some(namespace.to_owned()),
        labels: Some(labels),
        ..ObjectMeta::default()
    }
}

/// SHA-256 (hex) over a ConfigMap's files, for the pod template annotation
/// [`CONFIG_HASH_ANNOTATION`]: a changed file changes the template, so the workload
/// rolls its pods, which is how products that read their config once at start pick up
/// a change. Keys and values are length-prefixed, so moving text between files changes
/// the hash too.
pub fn config_hash(data: &BTreeMap<String, String>) -> String {
    let mut hasher = Sha256::new();
    for (key, value) in data {
        for part in [key, value] {
            hasher.update(part.len().to_le_bytes());
            hasher.update(part.as_bytes());
        }
    }
    hex::encode(hasher.finalize())
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn data(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect()
    }

    #[rstest]
    #[case::value_changed(&[("zoo.cfg", "a=1")], &[("zoo.cfg", "a=2")])]
    #[case::text_moved_between_files(&[("a", "bc"), ("d", "")], &[("a", "b"), ("d", "c")])]
    #[case::file_added(&[("zoo.cfg", "a=1")], &[("zoo.cfg", "a=1"), ("logback.xml", "")])]
    fn different_files_hash_differently(
        #[case] first: &[(&str, &str)],
        #[case] second: &[(&str, &str)],
    ) {
        assert_ne!(config_hash(&data(first)), config_hash(&data(second)));
    }

    #[test]
    fn hash_is_hex_sha256() {
        let hash = config_hash(&data(&[("zoo.cfg", "a=1")]));
        assert_eq!(hash.len(), 64);
        assert!(hash.chars().all(|c| c.is_ascii_hexdigit()), "{hash}");
    }
}
