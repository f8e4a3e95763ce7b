//! The Trino container: `start.sh` execs the launcher in the foreground, so the JVM is
//! the container's process; its environment (the shared secret and every catalog value
//! by reference), the probes, and the workers' preStop hook that drains them.

use k8s_openapi::api::core::v1::{
    ConfigMapKeySelector, Container, EnvVar, EnvVarSource, ExecAction, Lifecycle, LifecycleHandler,
    ObjectFieldSelector, SecretKeySelector, VolumeMount,
};
use strata_model::build::{
    container_port, env_vars, exec_probe, pause_before_stop, resource_requirements,
    restricted_security_context, tcp_probe, volume_mount,
};

use super::config_map::{GRACEFUL_SHUTDOWN_SCRIPT, READY_SCRIPT, START_SCRIPT};
use super::internal_secret::{SHARED_SECRET_KEY, internal_secret_name};
use super::service::HTTP;
use crate::config::catalog::ValueSource;
use crate::config::server::{DATA_DIR, ETC_DIR, HTTP_PORT, SHARED_SECRET_ENV, SHUTDOWN_USER};
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

fn from_source(name: &str, source: EnvVarSource) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: None,
        value_from: Some(source),
    }
}

/// The operator's variables that read a value from elsewhere: the pod's name, the
/// shared secret, and each catalog's values.
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

fn mounts() -> Vec<VolumeMount> {
    vec![
        volume_mount(ETC_VOLUME, ETC_DIR, true),
        volume_mount(SCRIPTS_VOLUME, SCRIPTS_DIR, true),
        volume_mount(DATA_VOLUME, DATA_DIR, false),
        volume_mount(TMP_VOLUME, "/tmp", false),
    ]
}

fn bash(script: &str, args: &[&str]) -> Vec<String> {
    let mut command = vec!["bash".to_owned(), format!("{SCRIPTS_DIR}/{script}")];
    command.extend(args.iter().map(|arg| (*arg).to_owned()));
    command
}

/// The Trino container of a role group's pods.
///
/// - Readiness and startup: `GET /v1/info` says `"starting": false` (an `httpGet`
///   probe cannot read the body; the script uses bash's `/dev/tcp`, so it needs no
///   curl). Startup allows 5 minutes for plugin loading.
/// - Liveness: the port accepts connections. A node busy with queries still does,
///   so liveness never kills a node for being loaded.
/// - Workers: the preStop hook drains the worker and waits for the JVM to exit.
pub fn trino(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> Container {
    let mut env = env_vars(Default::default(), &group.env_overrides);
    let overridden: Vec<String> = env.iter().map(|variable| variable.name.clone()).collect();
    env.extend(
        referenced_env(cluster)
            .into_iter()
            .filter(|variable| !overridden.contains(&variable.name)),
    );
    let port = HTTP_PORT.to_string();
    let ready = format!("exec bash {SCRIPTS_DIR}/{READY_SCRIPT} {port}");
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
        ports: Some(vec![container_port(HTTP)]),
        resources: Some(resource_requirements(&group.resources)),
        startup_probe: Some(exec_probe(&ready, 5, 60)),
        readiness_probe: Some(exec_probe(&ready, 10, 3)),
        liveness_probe: Some(tcp_probe(HTTP, 10, 6)),
        // A worker drains (it stops taking tasks, then finishes them); the
        // coordinator pauses while it leaves the client Service.
        lifecycle: Some(if group.product.graceful_shutdown {
            Lifecycle {
                pre_stop: Some(LifecycleHandler {
                    exec: Some(ExecAction {
                        command: Some(bash(GRACEFUL_SHUTDOWN_SCRIPT, &[&port, SHUTDOWN_USER])),
                    }),
                    ..LifecycleHandler::default()
                }),
                ..Lifecycle::default()
            }
        } else {
            pause_before_stop()
        }),
        security_context: Some(restricted_security_context()),
        volume_mounts: Some(mounts()),
        ..Container::default()
    }
}
