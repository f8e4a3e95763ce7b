//! The ConfigMaps: each role group's files, and the driver wheels.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use strata_model::build::object_meta;

use crate::config::driver::PG8000_WHEELS;
use crate::config::scripts::INIT_DATABASE;
use crate::validate::{ValidatedCluster, ValidatedRoleGroup};

/// Key of the configuration file.
pub const SUPERSET_CONFIG: &str = "superset_config.py";
/// Key of the init script.
pub const INIT_SCRIPT: &str = "init_database.py";

/// `<superset>-node-<rg>`: `superset_config.py` and the init script, hashed into the
/// pod template.
pub fn role_group_config_map(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> ConfigMap {
    ConfigMap {
        metadata: object_meta(
            group.name.object_name(),
            &cluster.namespace,
            group.labels.labels(),
        ),
        data: Some(BTreeMap::from([
            (SUPERSET_CONFIG.to_owned(), group.superset_config.clone()),
            (INIT_SCRIPT.to_owned(), INIT_DATABASE.to_owned()),
        ])),
        ..ConfigMap::default()
    }
}

/// `<superset>-driver`: the pg8000 wheels as binary data.
pub fn driver_config_map(cluster: &ValidatedCluster) -> ConfigMap {
    ConfigMap {
        metadata: object_meta(
            &driver_name(cluster),
            &cluster.namespace,
            cluster.cluster_labels.labels(),
        ),
        binary_data: Some(
            PG8000_WHEELS
                .iter()
                .map(|wheel| (wheel.file_name.to_owned(), ByteString(wheel.bytes.to_vec())))
                .collect(),
        ),
        ..ConfigMap::default()
    }
}

/// The driver ConfigMap's name.
pub fn driver_name(cluster: &ValidatedCluster) -> String {
    format!("{}-driver", cluster.name)
}
