//! The ConfigMaps: each role group's files, and the Python packages the image lacks.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use strata_model::build::object_meta;

use crate::config::scripts::{
    DATABASE_TLS_HOOK, DATABASE_TLS_HOOK_FILE, INIT_DATABASE, OIDC_SECURITY_MANAGER,
    OIDC_SECURITY_MANAGER_FILE,
};
use crate::validate::{ValidatedCluster, ValidatedRoleGroup};

/// Key of the configuration file.
pub const SUPERSET_CONFIG: &str = "superset_config.py";
/// Key of the init script.
pub const INIT_SCRIPT: &str = "init_database.py";

/// `<superset>-node-<rg>`: `superset_config.py`, the init script, the statsd exporter's
/// mapping and, with OIDC, the
/// security manager and, with TLS to the database, its hook; hashed into the pod
/// template.
pub fn role_group_config_map(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> ConfigMap {
    let mut data = BTreeMap::from([
        (
            SUPERSET_CONFIG.to_owned(),
            group.product.superset_config.clone(),
        ),
        (INIT_SCRIPT.to_owned(), INIT_DATABASE.to_owned()),
        (
            super::metrics::STATSD_MAPPING_FILE.to_owned(),
            super::metrics::STATSD_MAPPING.to_owned(),
        ),
    ]);
    if cluster.database.tls() {
        data.insert(
            DATABASE_TLS_HOOK_FILE.to_owned(),
            DATABASE_TLS_HOOK.to_owned(),
        );
    }
    if cluster.oidc_login {
        data.insert(
            OIDC_SECURITY_MANAGER_FILE.to_owned(),
            OIDC_SECURITY_MANAGER.to_owned(),
        );
    }
    ConfigMap {
        metadata: group.object_meta(&cluster.identity.namespace),
        data: Some(data),
        ..ConfigMap::default()
    }
}

/// `<superset>-packages`: the wheels the pods need, as binary data.
pub fn packages_config_map(cluster: &ValidatedCluster) -> ConfigMap {
    ConfigMap {
        metadata: object_meta(
            &packages_name(cluster),
            &cluster.identity.namespace,
            cluster.identity.labels.labels(),
        ),
        binary_data: Some(
            cluster
                .wheels
                .iter()
                .map(|wheel| (wheel.file_name.to_owned(), ByteString(wheel.bytes.to_vec())))
                .collect(),
        ),
        ..ConfigMap::default()
    }
}

/// The packages ConfigMap's name.
pub fn packages_name(cluster: &ValidatedCluster) -> String {
    format!("{}-packages", cluster.identity.name)
}
