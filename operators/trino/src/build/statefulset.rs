//! The StatefulSet of a role group.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    ConfigMapProjection, KeyToPath, PodSpec, ProjectedVolumeSource, Volume, VolumeProjection,
};
use strata_model::build::{
    PodUpdates, config_map_volume, memory_volume, pod_security_context, preferred_spread,
    scratch_volume, secret_volume,
};
use strata_model::role_group::Workload;

use super::config_map::{SCRIPTS, catalog_config_map_name};
use super::container::{
    DATA_VOLUME, ETC_VOLUME, KEYSTORE_VOLUME, LDAP_CA_VOLUME, METRICS_PASSWORD_VOLUME,
    OAUTH2_CA_VOLUME, SCRIPTS_VOLUME, SHUTDOWN_PASSWORD_VOLUME, TLS_VOLUME, TMP_VOLUME,
    USERS_PASSWORD_VOLUME, trino,
};
use super::security::{
    access_control_config_map_name, graceful_shutdown_secret_name, metrics_secret_name,
    password_db_secret_name,
};
use crate::config::access_control::RULES_KEY;
use crate::config::security::PASSWORD_DB_KEY;
use crate::config::server::ACCESS_CONTROL_RULES;
use crate::validate::{TrinoRole, ValidatedCluster, ValidatedRole, ValidatedRoleGroup};

/// uid and gid of the image's `trino` user.
pub const TRINO_UID: i64 = 1000;
/// Room in `node.data-dir` beyond a heap dump: the pid file and the request log.
pub const DATA_DIR_EXTRA_MIB: u64 = 1024;

/// `<trino>-<role>-<rg>`. Workers start in parallel (they only announce themselves to
/// the coordinator). The coordinator rolls by the StatefulSet controller; the workers
/// by the operator (`crate::controller::workers`): one at a time through their preStop
/// drain, or all at once when the catalogs change. Nodes are stateless: no volume
/// claims.
pub fn stateful_set(
    cluster: &ValidatedCluster,
    role: &ValidatedRole,
    group: &ValidatedRoleGroup,
    config_hash: &str,
) -> StatefulSet {
    let name = group.name.object_name();
    let data_limit = format!("{}Mi", group.resources.heap_mib + DATA_DIR_EXTRA_MIB);
    let mut scripts = config_map_volume(SCRIPTS_VOLUME, name);
    if let Some(source) = scripts.config_map.as_mut() {
        source.items = Some(
            SCRIPTS
                .map(|key| KeyToPath {
                    key: key.to_owned(),
                    path: key.to_owned(),
                    mode: None,
                    ..KeyToPath::default()
                })
                .to_vec(),
        );
    }
    let mut volumes = vec![
        etc_volume(cluster, group),
        scripts,
        scratch_volume(DATA_VOLUME, &data_limit),
        scratch_volume(TMP_VOLUME, "1Gi"),
    ];
    volumes.extend(security_volumes(cluster, group));
    group.stateful_set(
        &cluster.identity,
        Workload {
            parallel: role.role == TrinoRole::Worker,
            pod_updates: match role.role {
                TrinoRole::Coordinator => PodUpdates::Rolling,
                TrinoRole::Worker => PodUpdates::ByOperator,
            },
            config_hash,
            pod: PodSpec {
                containers: vec![trino(cluster, group)],
                volumes: Some(volumes),
                security_context: Some(pod_security_context(TRINO_UID)),
                affinity: Some(preferred_spread(role.labels.selector())),
                ..PodSpec::default()
            },
            claims: Vec::new(),
        },
    )
}

/// The certificate Secret and the in-memory keystore with TLS, and the password files
/// with authentication.
fn security_volumes(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> Vec<Volume> {
    let security = &cluster.security;
    let mut volumes = Vec::new();
    if let Some(source) = &security.tls {
        volumes.push(secret_volume(
            TLS_VOLUME,
            &source.secret_name(group.name.object_name()),
        ));
        volumes.push(memory_volume(KEYSTORE_VOLUME, "1Mi"));
    }
    if security.authenticates() {
        volumes.push(secret_volume(
            SHUTDOWN_PASSWORD_VOLUME,
            &graceful_shutdown_secret_name(cluster),
        ));
        // Only the password file: nothing in the pod needs the password itself.
        let mut metrics = secret_volume(METRICS_PASSWORD_VOLUME, &metrics_secret_name(cluster));
        if let Some(source) = metrics.secret.as_mut() {
            source.items = Some(vec![KeyToPath {
                key: PASSWORD_DB_KEY.to_owned(),
                path: PASSWORD_DB_KEY.to_owned(),
                ..KeyToPath::default()
            }]);
        }
        volumes.push(metrics);
    }
    if security.users_secret.is_some() {
        volumes.push(secret_volume(
            USERS_PASSWORD_VOLUME,
            &password_db_secret_name(cluster),
        ));
    }
    if let Some((_, Some(ca))) = &security.ldap {
        volumes.push(config_map_volume(LDAP_CA_VOLUME, ca));
    }
    if let Some((_, _, Some(ca))) = &security.oauth2 {
        volumes.push(config_map_volume(OAUTH2_CA_VOLUME, ca));
    }
    volumes
}

/// `/etc/trino` as one projected volume: the role group's files at the top, the access
/// control rules (updated in place, which Trino reads again every few seconds), and each
/// catalog under `catalog/`. One volume, because a second mount inside a read-only
/// ConfigMap mount cannot create its mount point.
fn etc_volume(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> Volume {
    let items = |keys: Vec<(String, String)>| {
        Some(
            keys.into_iter()
                .map(|(key, path)| KeyToPath {
                    key,
                    path,
                    mode: None,
                    ..KeyToPath::default()
                })
                .collect(),
        )
    };
    let mut sources = vec![VolumeProjection {
        config_map: Some(ConfigMapProjection {
            name: group.name.object_name().to_owned(),
            items: items(
                group
                    .product
                    .files
                    .keys()
                    .map(|file| (file.clone(), file.clone()))
                    .collect(),
            ),
            optional: None,
        }),
        ..VolumeProjection::default()
    }];
    sources.push(VolumeProjection {
        config_map: Some(ConfigMapProjection {
            name: access_control_config_map_name(cluster),
            items: items(vec![(
                RULES_KEY.to_owned(),
                ACCESS_CONTROL_RULES.to_owned(),
            )]),
            optional: None,
        }),
        ..VolumeProjection::default()
    });
    if !cluster.catalogs.is_empty() {
        sources.push(VolumeProjection {
            config_map: Some(ConfigMapProjection {
                name: catalog_config_map_name(cluster),
                items: items(
                    cluster
                        .catalogs
                        .iter()
                        .map(|catalog| {
                            let file = catalog.file_name();
                            (file.clone(), format!("catalog/{file}"))
                        })
                        .collect(),
                ),
                optional: None,
            }),
            ..VolumeProjection::default()
        });
    }
    Volume {
        name: ETC_VOLUME.to_owned(),
        projected: Some(ProjectedVolumeSource {
            sources: Some(sources),
            ..ProjectedVolumeSource::default()
        }),
        ..Volume::default()
    }
}
