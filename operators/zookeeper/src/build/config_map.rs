//! The role group ConfigMap mounted at `/conf`, and the hash that rolls Pods when it
//! changes.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use sha2::{Digest, Sha256};

use super::metadata;
use crate::config::render_logback_xml;
use crate::validate::{ValidatedCluster, ValidatedRoleGroup};

/// Key (and file name under `/conf`) of ZooKeeper's configuration.
pub const ZOO_CFG: &str = "zoo.cfg";
/// Key (and file name under `/conf`) of the logging configuration; the image's own
/// `logback.xml` is hidden by the mount, so the ConfigMap must provide one.
pub const LOGBACK_XML: &str = "logback.xml";

/// `<cluster>-server-<group>` with `zoo.cfg` (every server of every role group, config
/// overrides applied) and `logback.xml`.
pub fn role_group_config_map(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> ConfigMap {
    ConfigMap {
        metadata: metadata(
            group.name.object_name(),
            &cluster.namespace,
            group.labels.labels(),
        ),
        data: Some(role_group_config_data(group)),
        ..ConfigMap::default()
    }
}

/// The files of a role group's ConfigMap; also the input of [`config_hash`].
pub fn role_group_config_data(group: &ValidatedRoleGroup) -> BTreeMap<String, String> {
    BTreeMap::from([
        (ZOO_CFG.to_owned(), group.zoo_cfg.to_properties()),
        (LOGBACK_XML.to_owned(), render_logback_xml(&group.logback)),
    ])
}

/// SHA-256 (hex) over the ConfigMap's files, for the Pod template annotation: a changed
/// file changes the template, so the StatefulSet rolls its Pods, which is the only way
/// ZooKeeper picks up a new static configuration. Keys and values are length-prefixed so
/// that moving text between files changes the hash too.
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
    use pretty_assertions::assert_ne;
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
