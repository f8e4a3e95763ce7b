//! The role group ConfigMap mounted at `/conf`, and the hash that rolls Pods when it
//! changes.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;

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
        metadata: group.object_meta(&cluster.identity.namespace),
        data: Some(role_group_config_data(group)),
        ..ConfigMap::default()
    }
}

/// The files of a role group's ConfigMap; also the input of the config hash.
pub fn role_group_config_data(group: &ValidatedRoleGroup) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            ZOO_CFG.to_owned(),
            group.product.zoo_cfg.to_properties().to_owned(),
        ),
        (
            LOGBACK_XML.to_owned(),
            render_logback_xml(&group.product.logback),
        ),
    ])
}
