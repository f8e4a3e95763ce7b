//! The containers of a Superset pod: the database init container and gunicorn, both
//! with the environment that carries every secret by reference.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, EnvVar, EnvVarSource, SecretKeySelector};
use strata_model::build::{
    PAUSE_BEFORE_STOP_SECONDS, container_port, env_vars, http_probe, pause_before_stop,
    resource_requirements, restricted_security_context, volume_mount,
};

use super::config_map::{INIT_SCRIPT, SUPERSET_CONFIG};
use super::secret_key::SECRET_KEY_KEY;
use super::service::HTTP;
use crate::config::packages::{WHEEL_DIR, python_path_entries};
use crate::config::superset_config::{
    DB_PASSWORD_ENV, DB_USERNAME_ENV, LDAP_BIND_PASSWORD_ENV, LDAP_CA_FILE_ENV, MAPBOX_API_KEY_ENV,
    OIDC_CLIENT_SECRET_ENV,
};
use crate::validate::celery::{REDIS_CA_DIR, REDIS_PASSWORD_KEY, REDIS_URL_KEY};
use crate::validate::{
    CA_KEY, CaSource, DATABASE_CA_DIR, LDAP_CA_DIR, RedisAddress, TRINO_DISCOVERY_DIR,
    ValidatedCluster, ValidatedDatabase, ValidatedRoleGroup, discovery_volumes,
};

/// The web server container, the target of `envOverrides`.
pub const SUPERSET_CONTAINER: &str = "superset";
/// The init container.
pub const INIT_CONTAINER: &str = "init-database";
/// The init container's variable with the key a rotation re-encrypts from; the web
/// server never gets it.
pub const PREVIOUS_SECRET_KEY_ENV: &str = "STRATA_PREVIOUS_SECRET_KEY";
/// The init container's variable with the Trino connections (no secret: names,
/// directories and catalogs); connection `n`'s credentials are in
/// `STRATA_TRINO_USERNAME_<n>` and `STRATA_TRINO_PASSWORD_<n>`.
pub const TRINO_CONNECTIONS_ENV: &str = "STRATA_TRINO_CONNECTIONS";
/// The Redis host, with `clusterConfig.redis.host` (read by `strata_celery.py`).
pub const REDIS_HOST_ENV: &str = "STRATA_REDIS_HOST";
/// The Redis port, with `clusterConfig.redis.host`.
pub const REDIS_PORT_ENV: &str = "STRATA_REDIS_PORT";
/// The Redis password, from `clusterConfig.redis.passwordSecret`.
pub const REDIS_PASSWORD_ENV: &str = "STRATA_REDIS_PASSWORD";
/// The whole Redis URL, from `clusterConfig.redis.urlSecret`.
pub const REDIS_URL_ENV: &str = "STRATA_REDIS_URL";
/// `true` with `clusterConfig.redis.tls`: the host form connects with `rediss://`, and
/// a URL must be one.
pub const REDIS_TLS_ENV: &str = "STRATA_REDIS_TLS";
/// Redis's CA file, with `clusterConfig.redis.tls.caCertificate`.
pub const REDIS_CA_FILE_ENV: &str = "STRATA_REDIS_CA_FILE";
/// Where the role group ConfigMap is mounted.
pub const CONFIG_DIR: &str = "/strata/config";
/// `SUPERSET_HOME` (and `HOME`): writable, as the image expects.
pub const SUPERSET_HOME: &str = "/app/superset_home";
/// The image's own `PYTHONPATH`, kept last.
pub const IMAGE_PYTHON_PATH: &str = "/app/pythonpath";
/// Volume names.
pub const CONFIG_VOLUME: &str = "config";
/// The packages' volume.
pub const PACKAGES_VOLUME: &str = "packages";
/// The `SUPERSET_HOME` volume.
pub const HOME_VOLUME: &str = "superset-home";
/// The `/tmp` volume.
pub const TMP_VOLUME: &str = "tmp";
/// The metadata database's CA certificate.
pub const DATABASE_CA_VOLUME: &str = "metadata-database-ca";
/// Redis's CA certificate.
pub const REDIS_CA_VOLUME: &str = "redis-ca";
/// The LDAP server's CA certificate.
pub const LDAP_CA_VOLUME: &str = "ldap-ca";

fn secret_variable(name: &str, secret: &str, key: &str) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: None,
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: secret.to_owned(),
                key: key.to_owned(),
                optional: Some(false),
            }),
            ..EnvVarSource::default()
        }),
    }
}

/// The variables both containers need: where the config and driver are, and every
/// secret as a reference to its Secret.
pub(super) fn superset_env(cluster: &ValidatedCluster) -> (BTreeMap<String, String>, Vec<EnvVar>) {
    let mut python_path = vec![CONFIG_DIR.to_owned()];
    python_path.extend(python_path_entries(&cluster.wheels));
    python_path.push(IMAGE_PYTHON_PATH.to_owned());
    let mut plain = BTreeMap::from([
        (
            "SUPERSET_CONFIG_PATH".to_owned(),
            format!("{CONFIG_DIR}/{SUPERSET_CONFIG}"),
        ),
        ("PYTHONPATH".to_owned(), python_path.join(":")),
        ("SUPERSET_HOME".to_owned(), SUPERSET_HOME.to_owned()),
        ("HOME".to_owned(), SUPERSET_HOME.to_owned()),
    ]);
    let mut secrets = vec![secret_variable(
        "SUPERSET_SECRET_KEY",
        cluster.secret_key.secret_name(),
        SECRET_KEY_KEY,
    )];
    match &cluster.database {
        ValidatedDatabase::Postgresql {
            credentials_secret, ..
        } => {
            secrets.push(secret_variable(
                DB_USERNAME_ENV,
                credentials_secret,
                "username",
            ));
            secrets.push(secret_variable(
                DB_PASSWORD_ENV,
                credentials_secret,
                "password",
            ));
        }
        ValidatedDatabase::Generic { uri_secret } => secrets.push(secret_variable(
            "SUPERSET__SQLALCHEMY_DATABASE_URI",
            uri_secret,
            "uri",
        )),
    }
    if let Some(auth) = &cluster.auth_secret {
        let variable = if auth.keys.contains(&"clientSecret") {
            (OIDC_CLIENT_SECRET_ENV, "clientSecret")
        } else {
            (LDAP_BIND_PASSWORD_ENV, "password")
        };
        secrets.push(secret_variable(variable.0, &auth.name, variable.1));
    }
    if let Some(mapbox) = &cluster.mapbox_secret {
        secrets.push(secret_variable(MAPBOX_API_KEY_ENV, mapbox, "apiKey"));
    }
    match cluster.redis.as_ref().map(|redis| &redis.address) {
        Some(RedisAddress::Host {
            host,
            port,
            password_secret,
        }) => {
            plain.insert(REDIS_HOST_ENV.to_owned(), host.clone());
            plain.insert(REDIS_PORT_ENV.to_owned(), port.to_string());
            if let Some(secret) = password_secret {
                secrets.push(secret_variable(
                    REDIS_PASSWORD_ENV,
                    secret,
                    REDIS_PASSWORD_KEY,
                ));
            }
        }
        Some(RedisAddress::Url { url_secret }) => {
            secrets.push(secret_variable(REDIS_URL_ENV, url_secret, REDIS_URL_KEY));
        }
        None => {}
    }
    if cluster.ldap_ca.is_some() {
        plain.insert(
            LDAP_CA_FILE_ENV.to_owned(),
            format!("{LDAP_CA_DIR}/{CA_KEY}"),
        );
    }
    if let Some(tls) = cluster.redis.as_ref().and_then(|redis| redis.tls.as_ref()) {
        plain.insert(REDIS_TLS_ENV.to_owned(), "true".to_owned());
        if tls.ca.is_some() {
            plain.insert(
                REDIS_CA_FILE_ENV.to_owned(),
                format!("{REDIS_CA_DIR}/{CA_KEY}"),
            );
        }
    }
    (plain, secrets)
}

/// A CA certificate the pods mount: its volume, the directory it is mounted at, and the
/// object it comes from.
pub(super) struct MountedCa<'a> {
    pub(super) volume: &'static str,
    pub(super) dir: &'static str,
    pub(super) source: &'a CaSource,
}

/// The CAs the spec names (the metadata database's, Redis's, the LDAP server's), in the
/// order the pod lists their volumes and mounts.
pub(super) fn mounted_cas(cluster: &ValidatedCluster) -> Vec<MountedCa<'_>> {
    [
        (DATABASE_CA_VOLUME, DATABASE_CA_DIR, cluster.database.ca()),
        (
            REDIS_CA_VOLUME,
            REDIS_CA_DIR,
            cluster.redis.as_ref().and_then(|redis| redis.ca()),
        ),
        (LDAP_CA_VOLUME, LDAP_CA_DIR, cluster.ldap_ca.as_ref()),
    ]
    .into_iter()
    .filter_map(|(volume, dir, source)| {
        Some(MountedCa {
            volume,
            dir,
            source: source?,
        })
    })
    .collect()
}

pub(super) fn mounts(cluster: &ValidatedCluster) -> Vec<k8s_openapi::api::core::v1::VolumeMount> {
    let mut mounts = vec![
        volume_mount(CONFIG_VOLUME, CONFIG_DIR, true),
        volume_mount(HOME_VOLUME, SUPERSET_HOME, false),
        volume_mount(TMP_VOLUME, "/tmp", false),
    ];
    if !cluster.wheels.is_empty() {
        mounts.push(volume_mount(PACKAGES_VOLUME, WHEEL_DIR, true));
    }
    for ca in mounted_cas(cluster) {
        mounts.push(volume_mount(ca.volume, ca.dir, true));
    }
    // The web server too: its Trino client reads the CA at each connection.
    for (config_map, volume) in discovery_volumes(&cluster.trino_connections) {
        mounts.push(volume_mount(
            &volume,
            &format!("{TRINO_DISCOVERY_DIR}/{config_map}"),
            true,
        ));
    }
    mounts
}

/// gunicorn as the container's process (so SIGTERM reaches it; the image's
/// `run-server.sh` does not `exec`), with the image script's flags, sending its statsd
/// metrics to the exporter beside it.
pub fn web_server(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> Container {
    let (plain, secrets) = superset_env(cluster);
    let mut env = env_vars(plain, &group.env_overrides);
    env.extend(secrets);
    // The preStop pause comes first, then gunicorn gets its graceful timeout, and 5 s
    // remain for its exit.
    let graceful = group
        .termination_grace_period_seconds
        .saturating_sub(i64::from(PAUSE_BEFORE_STOP_SECONDS) + 5)
        .max(1);
    let command = [
        "gunicorn".to_owned(),
        "--bind".to_owned(),
        format!("0.0.0.0:{}", HTTP.number),
        "--workers".to_owned(),
        group.product.workers.to_string(),
        "--worker-class".to_owned(),
        "gthread".to_owned(),
        "--threads".to_owned(),
        group.product.threads.to_string(),
        "--timeout".to_owned(),
        cluster.webserver_timeout.to_string(),
        "--graceful-timeout".to_owned(),
        graceful.to_string(),
        "--keep-alive".to_owned(),
        "2".to_owned(),
        "--limit-request-line".to_owned(),
        "0".to_owned(),
        "--limit-request-field_size".to_owned(),
        "0".to_owned(),
    ]
    .into_iter()
    .chain(super::metrics::gunicorn_statsd_args())
    .chain(["superset.app:create_app()".to_owned()])
    .collect::<Vec<_>>();
    Container {
        name: SUPERSET_CONTAINER.to_owned(),
        image: Some(cluster.identity.image.image.clone()),
        image_pull_policy: Some(cluster.identity.image.pull_policy.to_string()),
        command: Some(command),
        env: Some(env),
        ports: Some(vec![container_port(HTTP)]),
        resources: Some(resource_requirements(&group.resources)),
        // A cold start loads every Superset module: up to 5 minutes.
        startup_probe: Some(http_probe("/health", HTTP, 5, 60)),
        liveness_probe: Some(http_probe("/health", HTTP, 10, 6)),
        readiness_probe: Some(http_probe("/health", HTTP, 10, 3)),
        lifecycle: Some(pause_before_stop()),
        security_context: Some(restricted_security_context()),
        volume_mounts: Some(mounts(cluster)),
        ..Container::default()
    }
}

/// The init container: database upgrade, init and the admin user
/// (`src/scripts/init_database.py`). A failed step stops the pod with the step's
/// reason in its termination message.
pub fn init_database(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> Container {
    let (plain, mut secrets) = superset_env(cluster);
    if let Some(admin) = &cluster.admin_secret {
        for (variable, key) in [
            ("STRATA_ADMIN_USERNAME", "username"),
            ("STRATA_ADMIN_FIRSTNAME", "firstname"),
            ("STRATA_ADMIN_LASTNAME", "lastname"),
            ("STRATA_ADMIN_EMAIL", "email"),
            ("STRATA_ADMIN_PASSWORD", "password"),
        ] {
            secrets.push(secret_variable(variable, admin, key));
        }
    }
    let mut plain = plain;
    if !cluster.trino_connections.is_empty() {
        plain.insert(
            TRINO_CONNECTIONS_ENV.to_owned(),
            trino_connections_json(cluster),
        );
    }
    for (index, connection) in cluster.trino_connections.iter().enumerate() {
        if let Some(credentials) = &connection.credentials_secret {
            secrets.push(secret_variable(
                &format!("STRATA_TRINO_USERNAME_{index}"),
                credentials,
                "username",
            ));
            secrets.push(secret_variable(
                &format!("STRATA_TRINO_PASSWORD_{index}"),
                credentials,
                "password",
            ));
        }
    }
    if let Some(previous) = &cluster.previous_secret_key {
        secrets.push(secret_variable(
            PREVIOUS_SECRET_KEY_ENV,
            previous,
            SECRET_KEY_KEY,
        ));
    }
    // superset_config.py runs here too, so a setting that reads an override needs it.
    let mut env = env_vars(plain, &group.env_overrides);
    env.extend(secrets);
    Container {
        name: INIT_CONTAINER.to_owned(),
        image: Some(cluster.identity.image.image.clone()),
        image_pull_policy: Some(cluster.identity.image.pull_policy.to_string()),
        command: Some(vec![
            "python".to_owned(),
            format!("{CONFIG_DIR}/{INIT_SCRIPT}"),
        ]),
        env: Some(env),
        resources: Some(resource_requirements(&group.resources)),
        security_context: Some(restricted_security_context()),
        termination_message_policy: Some("FallbackToLogsOnError".to_owned()),
        volume_mounts: Some(mounts(cluster)),
        ..Container::default()
    }
}

/// [`TRINO_CONNECTIONS_ENV`]'s value: a JSON list the init script reads.
fn trino_connections_json(cluster: &ValidatedCluster) -> String {
    serde_json::Value::Array(
        cluster
            .trino_connections
            .iter()
            .map(|connection| {
                serde_json::json!({
                    "name": connection.name,
                    "directory": connection.directory,
                    "catalog": connection.catalog,
                })
            })
            .collect(),
    )
    .to_string()
}
