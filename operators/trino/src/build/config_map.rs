//! The ConfigMaps: each role group's files and scripts, and the catalogs every node
//! serves.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use strata_model::build::{config_hash, object_meta};

use crate::config::scripts::{GRACEFUL_SHUTDOWN, READY, START, TRINO_HTTP};
use crate::validate::{ValidatedCluster, ValidatedRoleGroup};

/// Key of the preStop script.
pub const GRACEFUL_SHUTDOWN_SCRIPT: &str = "graceful-shutdown.sh";
/// Key of the readiness script.
pub const READY_SCRIPT: &str = "ready.sh";
/// Key of the container's entry point.
pub const START_SCRIPT: &str = "start.sh";
/// Key of what the probe and the hook share.
pub const TRINO_HTTP_SCRIPT: &str = "trino-http.sh";
/// Every script, each mounted under `/strata/scripts`.
pub const SCRIPTS: [&str; 4] = [
    START_SCRIPT,
    READY_SCRIPT,
    GRACEFUL_SHUTDOWN_SCRIPT,
    TRINO_HTTP_SCRIPT,
];

/// `<trino>-<role>-<rg>`: the files under `/etc/trino` and the probe and hook scripts.
pub fn role_group_config_map(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> ConfigMap {
    let mut data = group.product.files.clone();
    data.insert(
        GRACEFUL_SHUTDOWN_SCRIPT.to_owned(),
        GRACEFUL_SHUTDOWN.to_owned(),
    );
    data.insert(READY_SCRIPT.to_owned(), READY.to_owned());
    data.insert(START_SCRIPT.to_owned(), START.to_owned());
    data.insert(TRINO_HTTP_SCRIPT.to_owned(), TRINO_HTTP.to_owned());
    ConfigMap {
        metadata: group.object_meta(&cluster.identity.namespace),
        data: Some(data),
        ..ConfigMap::default()
    }
}

/// `<trino>-catalog`: one `<catalog>.properties` per selected catalog. Coordinator and
/// workers mount the same ConfigMap, so they always serve the same catalogs.
pub fn catalog_config_map(cluster: &ValidatedCluster) -> ConfigMap {
    ConfigMap {
        metadata: object_meta(
            &catalog_config_map_name(cluster),
            &cluster.identity.namespace,
            cluster.identity.labels.labels(),
        ),
        data: Some(
            cluster
                .catalogs
                .iter()
                .map(|catalog| (catalog.file_name(), catalog.file()))
                .collect(),
        ),
        ..ConfigMap::default()
    }
}

/// The catalog ConfigMap's name.
pub fn catalog_config_map_name(cluster: &ValidatedCluster) -> String {
    format!("{}-catalog", cluster.identity.name)
}

/// The hash in a role group's pod template: its own files and every catalog file, so
/// a catalog that is created, edited, deleted or relabelled rolls every pod (Trino
/// reads static catalogs only at start).
pub fn pod_config_hash(config_map: &ConfigMap, catalogs: &BTreeMap<String, String>) -> String {
    let mut data = config_map.data.clone().unwrap_or_default();
    data.extend(
        catalogs
            .iter()
            .map(|(file, content)| (format!("catalog/{file}"), content.clone())),
    );
    config_hash(&data)
}
