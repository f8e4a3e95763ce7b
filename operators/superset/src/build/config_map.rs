//! The ConfigMaps: each role group's files, and the Python packages the image lacks.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use strata_model::build::object_meta;

use crate::config::scripts::{
    CELERY_SCRIPT, CELERY_SCRIPT_FILE, DATABASE_TLS_HOOK, DATABASE_TLS_HOOK_FILE, INIT_DATABASE,
    OIDC_SECURITY_MANAGER, OIDC_SECURITY_MANAGER_FILE, SECURITY_MANAGER, SECURITY_MANAGER_FILE,
};
use crate::validate::{ValidatedCluster, ValidatedRoleGroup};

/// Key of the configuration file.
pub const SUPERSET_CONFIG: &str = "superset_config.py";
/// Key of the init script.
pub const INIT_SCRIPT: &str = "init_database.py";

/// `<superset>-node-<rg>`: [`config_files`], the init script and the statsd
/// exporter's mapping; hashed into the pod template.
pub fn role_group_config_map(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> ConfigMap {
    let mut data = config_files(cluster, &group.product.superset_config);
    data.insert(INIT_SCRIPT.to_owned(), INIT_DATABASE.to_owned());
    data.insert(
        super::metrics::STATSD_MAPPING_FILE.to_owned(),
        super::metrics::STATSD_MAPPING.to_owned(),
    );
    ConfigMap {
        metadata: group.object_meta(&cluster.identity.namespace),
        data: Some(data),
        ..ConfigMap::default()
    }
}

/// What every Superset pod mounts, web server, worker or beat: `superset_config.py`
/// and the modules it imports, shipped next to it: the security manager, with OIDC its
/// subclass, with TLS to the database its hook, with Redis the Celery module.
pub fn config_files(cluster: &ValidatedCluster, superset_config: &str) -> BTreeMap<String, String> {
    let mut data = BTreeMap::from([
        (SUPERSET_CONFIG.to_owned(), superset_config.to_owned()),
        (
            SECURITY_MANAGER_FILE.to_owned(),
            SECURITY_MANAGER.to_owned(),
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
    if cluster.redis.is_some() {
        data.insert(CELERY_SCRIPT_FILE.to_owned(), CELERY_SCRIPT.to_owned());
    }
    data
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

/// The hash of a role group ConfigMap's files, put on its pod template so a changed
/// file rolls the pods.
pub fn files_hash(config_map: &ConfigMap) -> String {
    config_map
        .data
        .as_ref()
        .map(strata_model::build::config_hash)
        .unwrap_or_default()
}

/// The packages ConfigMap's name.
pub fn packages_name(cluster: &ValidatedCluster) -> String {
    format!("{}-packages", cluster.identity.name)
}
