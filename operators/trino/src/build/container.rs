//! The Trino container: `start.sh` assembles the keystore and execs the launcher in the
//! foreground, so the JVM is the container's process; its environment (the shared
//! secret and every catalog value by reference), the probes, the workers' preStop hook
//! that drains them, and the certificate and password files.

use k8s_openapi::api::core::v1::{
    ConfigMapKeySelector, Container, EnvVar, EnvVarSource, ExecAction, Lifecycle, LifecycleHandler,
    ObjectFieldSelector, SecretKeySelector, VolumeMount,
};
use strata_model::build::{
    container_port, env_vars, exec_probe, pause_before_stop, resource_requirements,
    restricted_security_context, tcp_probe, volume_mount,
};

use super::certificates::service_suffix;
use super::config_map::{GRACEFUL_SHUTDOWN_SCRIPT, READY_SCRIPT, START_SCRIPT};
use super::internal_secret::{SHARED_SECRET_KEY, internal_secret_name};
use super::security::SHUTDOWN_PASSWORD_KEY;
use super::service::server_port;
use crate::config::catalog::ValueSource;
use crate::config::security::{
    CA_FILE, KEYSTORE, KEYSTORE_DIR, LDAP_CA_DIR, METRICS_PASSWORD_DIR, OAUTH2_CA_DIR,
    OAUTH2_CLIENT_ID_ENV, OAUTH2_CLIENT_KEYS, OAUTH2_CLIENT_SECRET_ENV, SHUTDOWN_PASSWORD_DIR,
    TLS_DIR, USERS_PASSWORD_DIR,
};
use crate::config::server::{DATA_DIR, ETC_DIR, SHARED_SECRET_ENV, SHUTDOWN_USER};
use crate::validate::{ValidatedCluster, ValidatedRoleGroup};

/// The Trino container, the target of `envOverrides`.
pub const TRINO_CONTAINER: &str = "trino";
/// The launcher of the image; `run` keeps it in the foreground, and it execs the JVM,
/// so the JVM is the container's process and gets its signals.
pub const LAUNCHER: &str = "/usr/lib/trino/bin/launcher";
/// Where the scripts are mounted.
pub const SCRIPTS_DIR: &str = "/strata/scripts";
/// The variable that names the list values `start.sh` joins with commas.
pub const COMMA_LISTS_ENV: &str = "STRATA_COMMA_LISTS";
/// The variable with the pod's name, for `-Dnode.id`.
pub const POD_NAME_ENV: &str = "POD_NAME";
/// Volume names.
pub const ETC_VOLUME: &str = "etc";
/// The scripts' volume.
pub const SCRIPTS_VOLUME: &str = "scripts";
/// `node.data-dir`'s volume.
pub const DATA_VOLUME: &str = "data";
/// The `/tmp` volume; an `emptyDir`, which is never `noexec`, as Trino's native codecs
/// need.
pub const TMP_VOLUME: &str = "tmp";
/// The certificate Secret's volume, with TLS.
pub const TLS_VOLUME: &str = "tls";
/// The in-memory volume of the keystore `start.sh` assembles, with TLS.
pub const KEYSTORE_VOLUME: &str = "keystore";
/// The shutdown user's Secret, with authentication.
pub const SHUTDOWN_PASSWORD_VOLUME: &str = "graceful-shutdown";
/// The metrics user's password file.
pub const METRICS_PASSWORD_VOLUME: &str = "metrics-user";
/// The users' password file, with password authentication.
pub const USERS_PASSWORD_VOLUME: &str = "users";
/// The LDAP server's CA, from the user's ConfigMap.
pub const LDAP_CA_VOLUME: &str = "ldap-ca";
/// The OAuth2 provider's CA, from the user's ConfigMap.
pub const OAUTH2_CA_VOLUME: &str = "oauth2-ca";
/// The variables the probe, the hook and `start.sh` read (`trino-http.sh`).
pub const TRINO_URL_ENV: &str = "STRATA_TRINO_URL";
/// The CA the probe and the hook check the node's certificate against.
pub const TRINO_CA_ENV: &str = "STRATA_TRINO_CA";
/// Where `start.sh` finds the certificate Secret.
pub const TLS_DIR_ENV: &str = "STRATA_TLS_DIR";
/// Where `start.sh` writes the keystore.
pub const KEYSTORE_ENV: &str = "STRATA_KEYSTORE";

fn from_source(name: &str, source: EnvVarSource) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: None,
        value_from: Some(source),
    }
}

/// The operator's variables that read a value from elsewhere: the pod's name, the
/// shared secret, each catalog's values and the OAuth2 client's credentials.
fn referenced_env(cluster: &ValidatedCluster) -> Vec<EnvVar> {
    let mut env = vec![
        from_source(
            POD_NAME_ENV,
            EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: "metadata.name".to_owned(),
                    api_version: Some("v1".to_owned()),
                }),
                ..EnvVarSource::default()
            },
        ),
        from_source(
            SHARED_SECRET_ENV,
            EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: internal_secret_name(cluster),
                    key: SHARED_SECRET_KEY.to_owned(),
                    optional: Some(false),
                }),
                ..EnvVarSource::default()
            },
        ),
    ];
    for variable in cluster
        .catalogs
        .iter()
        .flat_map(|catalog| &catalog.variables)
    {
        let source = match &variable.source {
            ValueSource::Secret(reference) => EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: reference.name.clone(),
                    key: reference.key.clone(),
                    optional: Some(false),
                }),
                ..EnvVarSource::default()
            },
            ValueSource::ConfigMap(reference) => EnvVarSource {
                config_map_key_ref: Some(ConfigMapKeySelector {
                    name: reference.name.clone(),
                    key: reference.key.clone(),
                    optional: Some(false),
                }),
                ..EnvVarSource::default()
            },
        };
        env.push(from_source(&variable.variable, source));
    }
    if let Some((_, secret, _)) = &cluster.security.oauth2 {
        for (variable, key) in [OAUTH2_CLIENT_ID_ENV, OAUTH2_CLIENT_SECRET_ENV]
            .into_iter()
            .zip(OAUTH2_CLIENT_KEYS)
        {
            env.push(from_source(
                variable,
                EnvVarSource {
                    secret_key_ref: Some(SecretKeySelector {
                        name: secret.clone(),
                        key: key.to_owned(),
                        optional: Some(false),
                    }),
                    ..EnvVarSource::default()
                },
            ));
        }
    }
    let comma_lists: Vec<&str> = cluster
        .catalogs
        .iter()
        .flat_map(|catalog| &catalog.variables)
        .filter(|variable| variable.comma_list)
        .map(|variable| variable.variable.as_str())
        .collect();
    if !comma_lists.is_empty() {
        env.push(EnvVar {
            name: COMMA_LISTS_ENV.to_owned(),
            value: Some(comma_lists.join(" ")),
            value_from: None,
        });
    }
    env
}

fn mounts(cluster: &ValidatedCluster) -> Vec<VolumeMount> {
    let mut mounts = vec![
        volume_mount(ETC_VOLUME, ETC_DIR, true),
        volume_mount(SCRIPTS_VOLUME, SCRIPTS_DIR, true),
        volume_mount(DATA_VOLUME, DATA_DIR, false),
        volume_mount(TMP_VOLUME, "/tmp", false),
    ];
    let security = &cluster.security;
    if security.tls.is_some() {
        mounts.push(volume_mount(TLS_VOLUME, TLS_DIR, true));
        mounts.push(volume_mount(KEYSTORE_VOLUME, KEYSTORE_DIR, false));
    }
    if security.authenticates() {
        mounts.push(volume_mount(
            SHUTDOWN_PASSWORD_VOLUME,
            SHUTDOWN_PASSWORD_DIR,
            true,
        ));
        mounts.push(volume_mount(
            METRICS_PASSWORD_VOLUME,
            METRICS_PASSWORD_DIR,
            true,
        ));
    }
    if security.users_secret.is_some() {
        mounts.push(volume_mount(
            USERS_PASSWORD_VOLUME,
            USERS_PASSWORD_DIR,
            true,
        ));
    }
    if let Some((_, Some(_))) = &security.ldap {
        mounts.push(volume_mount(LDAP_CA_VOLUME, LDAP_CA_DIR, true));
    }
    if let Some((_, _, Some(_))) = &security.oauth2 {
        mounts.push(volume_mount(OAUTH2_CA_VOLUME, OAUTH2_CA_DIR, true));
    }
    mounts
}

/// The variables of `trino-http.sh` and `start.sh`. With TLS the node's own URL names
/// its FQDN, which its certificate covers (`$(POD_NAME)` is expanded by the kubelet).
fn server_env(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> Vec<EnvVar> {
    let value = |name: &str, value: String| EnvVar {
        name: name.to_owned(),
        value: Some(value),
        value_from: None,
    };
    let port = server_port(cluster).number;
    if cluster.security.tls.is_none() {
        return vec![value(TRINO_URL_ENV, format!("http://127.0.0.1:{port}"))];
    }
    let object_name = group.name.object_name();
    vec![
        value(
            TRINO_URL_ENV,
            format!(
                "https://$({POD_NAME_ENV}).{object_name}.{}:{port}",
                service_suffix(cluster)
            ),
        ),
        value(TRINO_CA_ENV, CA_FILE.to_owned()),
        value(TLS_DIR_ENV, TLS_DIR.to_owned()),
        value(KEYSTORE_ENV, KEYSTORE.to_owned()),
    ]
}

fn bash(script: &str, args: &[String]) -> Vec<String> {
    let mut command = vec!["bash".to_owned(), format!("{SCRIPTS_DIR}/{script}")];
    command.extend(args.iter().cloned());
    command
}

/// The Trino container of a role group's pods.
///
/// - Readiness and startup: `GET /v1/info` says `"starting": false` (an `httpGet`
///   probe cannot read the body, nor check the certificate). Startup allows 5 minutes
///   for plugin loading.
/// - Liveness: the port accepts connections. A node busy with queries still does,
///   so liveness never kills a node for being loaded.
/// - Workers: the preStop hook drains the worker and waits for the JVM to exit.
pub fn trino(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> Container {
    let mut env = env_vars(Default::default(), &group.env_overrides);
    let overridden: Vec<String> = env.iter().map(|variable| variable.name.clone()).collect();
    env.extend(
        referenced_env(cluster)
            .into_iter()
            .chain(server_env(cluster, group))
            .filter(|variable| !overridden.contains(&variable.name)),
    );
    let port = server_port(cluster);
    let ready = format!("exec bash {SCRIPTS_DIR}/{READY_SCRIPT}");
    let mut shutdown_args = vec![SHUTDOWN_USER.to_owned()];
    if cluster.security.authenticates() {
        shutdown_args.push(format!("{SHUTDOWN_PASSWORD_DIR}/{SHUTDOWN_PASSWORD_KEY}"));
    }
    Container {
        name: TRINO_CONTAINER.to_owned(),
        image: Some(cluster.identity.image.image.clone()),
        image_pull_policy: Some(cluster.identity.image.pull_policy.to_string()),
        command: Some(vec![
            "bash".to_owned(),
            format!("{SCRIPTS_DIR}/{START_SCRIPT}"),
            LAUNCHER.to_owned(),
            "run".to_owned(),
            "--etc-dir".to_owned(),
            ETC_DIR.to_owned(),
            format!("-Dnode.id=$({POD_NAME_ENV})"),
        ]),
        env: Some(env),
        ports: Some(vec![container_port(port)]),
        resources: Some(resource_requirements(&group.resources)),
        startup_probe: Some(exec_probe(&ready, 5, 60)),
        readiness_probe: Some(exec_probe(&ready, 10, 3)),
        liveness_probe: Some(tcp_probe(port, 10, 6)),
        // A worker drains (it stops taking tasks, then finishes them); the
        // coordinator pauses while it leaves the client Service.
        lifecycle: Some(if group.product.graceful_shutdown {
            Lifecycle {
                pre_stop: Some(LifecycleHandler {
                    exec: Some(ExecAction {
                        command: Some(bash(GRACEFUL_SHUTDOWN_SCRIPT, &shutdown_args)),
                    }),
                    ..LifecycleHandler::default()
                }),
                ..Lifecycle::default()
            }
        } else {
            pause_before_stop()
        }),
        security_context: Some(restricted_security_context()),
        volume_mounts: Some(mounts(cluster)),
        ..Container::default()
    }
}
