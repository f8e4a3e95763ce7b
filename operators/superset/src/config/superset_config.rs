//! `superset_config.py`: the operator's settings, then the user's overrides, which
//! win because a later assignment replaces an earlier one.
//!
//! No secret value is ever written here. Secrets reach the pod as environment
//! variables from their Secrets, and the file reads them with `os.environ`. The
//! PostgreSQL URI is put together in Python, with the user name and password
//! percent-encoded, so any character in them is safe.

use std::collections::BTreeMap;

use strata_model::files::python::{self, PyValue, PythonError, string_literal};

use crate::crd::{Driver, SslMode};

/// Environment variable with the metadata database user (from its Secret).
pub const DB_USERNAME_ENV: &str = "STRATA_DB_USERNAME";
/// Environment variable with the metadata database password (from its Secret).
pub const DB_PASSWORD_ENV: &str = "STRATA_DB_PASSWORD";
/// Environment variable with the LDAP bind password.
pub const LDAP_BIND_PASSWORD_ENV: &str = "STRATA_LDAP_BIND_PASSWORD";
/// Environment variable with the path of the LDAP server's CA file, with
/// `clusterConfig.authentication.ldap.caCertificate`.
pub const LDAP_CA_FILE_ENV: &str = "STRATA_LDAP_CA_FILE";
/// Environment variable with the OIDC client secret.
pub const OIDC_CLIENT_SECRET_ENV: &str = "STRATA_OIDC_CLIENT_SECRET";
/// Environment variable with the Mapbox API key.
pub const MAPBOX_API_KEY_ENV: &str = "STRATA_MAPBOX_API_KEY";

/// The metadata database as the file sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DatabaseSetting {
    /// The URI is built from the credentials in the environment.
    Postgresql {
        /// Host name.
        host: String,
        /// Port.
        port: u16,
        /// Database.
        database: String,
        /// The driver in the URI's scheme.
        driver: Driver,
        /// TLS to the database, when the spec sets it.
        tls: Option<DatabaseTlsSetting>,
    },
    /// The URI comes whole from the environment (`SUPERSET__SQLALCHEMY_DATABASE_URI`),
    /// which Superset 6 reads itself; the file says nothing.
    FromEnvironment,
}

/// TLS to the metadata database: applied by `strata_database_tls.py` to every
/// connection to it, the migrations' included (Superset's Alembic environment builds
/// its engine from the URI alone, so engine options would miss them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatabaseTlsSetting {
    /// libpq's `sslmode`.
    pub ssl_mode: SslMode,
    /// The CA certificate's path in the pod; the system trust store when `None`.
    pub ca_file: Option<String>,
}

/// The config's name for the TLS hook's result, which says the hook is installed.
pub const DATABASE_TLS_SETTING: &str = "STRATA_METADATA_DATABASE_TLS";

/// How users log in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthSetting {
    /// LDAP, with self-registration.
    Ldap {
        /// Server URI.
        server_uri: String,
        /// Bind DN.
        bind_dn: String,
        /// Search base.
        search_base: String,
        /// User name attribute.
        user_attribute: String,
        /// Group attribute.
        group_attribute: String,
        /// How the connection is encrypted; `None` is clear text (`allowInsecure`).
        tls: Option<LdapTlsSetting>,
        /// Self-registration and its role.
        registration: Registration,
    },
    /// OpenID Connect, with self-registration.
    Oidc {
        /// Issuer URL.
        issuer_url: String,
        /// Client id.
        client_id: String,
        /// Scopes.
        scopes: Vec<String>,
        /// Self-registration and its role.
        registration: Registration,
    },
}

/// TLS to the LDAP server: `ldaps://`, or StartTLS on `ldap://`. The server's certificate
/// is always demanded and verified (`AUTH_LDAP_TLS_DEMAND`), whatever the image's
/// `ldap.conf` says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LdapTlsSetting {
    /// `AUTH_LDAP_USE_TLS`: StartTLS before the bind.
    pub start_tls: bool,
    /// Whether the CA comes from [`LDAP_CA_FILE_ENV`] rather than the system trust store.
    pub ca_file: bool,
}

/// Whether first-time users get an account, and which role.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registration {
    /// `AUTH_USER_REGISTRATION`.
    pub enabled: bool,
    /// `AUTH_USER_REGISTRATION_ROLE`.
    pub role: String,
}

/// Everything the file is rendered from.
#[derive(Clone, Debug, PartialEq)]
pub struct SupersetSettings {
    /// The metadata database.
    pub database: DatabaseSetting,
    /// `ROW_LIMIT`.
    pub row_limit: u32,
    /// `SUPERSET_WEBSERVER_TIMEOUT`.
    pub webserver_timeout: u32,
    /// Whether `MAPBOX_API_KEY` comes from the environment.
    pub mapbox_api_key: bool,
    /// How users log in; the database when `None`.
    pub authentication: Option<AuthSetting>,
    /// Celery and the shared caches, with `clusterConfig.redis`.
    pub celery: Option<CelerySetting>,
    /// Whether users come through a proxy (an Ingress or a Gateway): Flask then reads
    /// its `X-Forwarded-*` headers (`ENABLE_PROXY_FIX`), so the URLs it builds (an OIDC
    /// `redirect_uri`) carry the host and scheme users see.
    pub behind_proxy: bool,
    /// The Ingress's URL, with `clusterConfig.ingress`: report e-mails link there
    /// (`WEBDRIVER_BASEURL_USER_FRIENDLY`). An HTTPRoute gives none: its scheme is the
    /// Gateway listener's, which the operator does not read.
    pub ingress_url: Option<String>,
}

/// Celery's broker and results and Superset's caches on Redis. The URLs come from
/// `strata_celery.py`, shipped next to the file, which builds them from the
/// environment, so no password is written here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CelerySetting {
    /// The broker's database; Celery's results, the caches and SQL Lab's results use
    /// the next three.
    pub first_database: u8,
    /// Whether alerts and reports are on (`ALERT_REPORTS`): only with workers to run
    /// them and beat to schedule them.
    pub alerts_reports: bool,
    /// `WEBDRIVER_BASEURL`: where a worker fetches a report's chart data, the client
    /// Service (Superset's default, `http://0.0.0.0:8080/`, answers nowhere in a pod).
    pub web_server_url: String,
}

/// The caches' Redis database, counted from the broker's; the login rate limits count
/// there too.
const CACHES_DATABASE: u8 = 2;
/// What the web server and the workers share through Redis: the Flask caches.
const CACHE_TIMEOUT_SECONDS: i64 = 86_400;
/// How long a report schedule's task may wait in the queue: Superset's own week.
const SCHEDULER_EXPIRES_SECONDS: i64 = 604_800;
/// The task modules every worker imports: Superset's own list.
const CELERY_IMPORTS: [&str; 5] = [
    "superset.sql_lab",
    "superset.tasks.scheduler",
    "superset.tasks.thumbnails",
    "superset.tasks.cache",
    "superset.tasks.slack",
];

fn redis_url(database: u8) -> PyValue {
    PyValue::Expression(format!("redis_url({database})"))
}

fn dict<const N: usize>(entries: [(&str, PyValue); N]) -> PyValue {
    PyValue::Dict(
        entries
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value))
            .collect(),
    )
}

/// `CELERY_CONFIG` (a mapping, which Celery's `config_from_object` takes as it takes
/// Superset's class), the caches, SQL Lab's results backend and the feature flag.
fn celery_assignments(celery: &CelerySetting) -> Vec<(String, PyValue)> {
    let first = celery.first_database;
    let schedule = |task: &str, crontab: &str, expires: Option<i64>| {
        let mut entry = vec![
            ("task", PyValue::Str(task.to_owned())),
            (
                "schedule",
                PyValue::Expression(format!("crontab({crontab})")),
            ),
        ];
        if let Some(seconds) = expires {
            entry.push(("options", dict([("expires", PyValue::Int(seconds))])));
        }
        PyValue::Dict(
            entry
                .into_iter()
                .map(|(key, value)| (key.to_owned(), value))
                .collect(),
        )
    };
    let config = dict([
        ("broker_url", redis_url(first)),
        ("result_backend", redis_url(first + 1)),
        (
            "imports",
            PyValue::List(
                CELERY_IMPORTS
                    .iter()
                    .map(|module| PyValue::Str((*module).to_owned()))
                    .collect(),
            ),
        ),
        ("worker_prefetch_multiplier", PyValue::Int(1)),
        ("task_acks_late", PyValue::Bool(false)),
        ("broker_connection_retry_on_startup", PyValue::Bool(true)),
        (
            "broker_use_ssl",
            PyValue::Expression("redis_tls()".to_owned()),
        ),
        (
            "redis_backend_use_ssl",
            PyValue::Expression("redis_tls()".to_owned()),
        ),
        (
            "task_annotations",
            dict([(
                "sql_lab.get_sql_results",
                dict([("rate_limit", PyValue::Str("100/s".to_owned()))]),
            )]),
        ),
        (
            "beat_schedule",
            dict([
                (
                    "reports.scheduler",
                    schedule(
                        "reports.scheduler",
                        "minute=\"*\", hour=\"*\"",
                        Some(SCHEDULER_EXPIRES_SECONDS),
                    ),
                ),
                (
                    "reports.prune_log",
                    schedule("reports.prune_log", "minute=0, hour=0", None),
                ),
            ]),
        ),
    ]);
    let cache = |prefix: &str| {
        dict([
            ("CACHE_TYPE", PyValue::Str("RedisCache".to_owned())),
            ("CACHE_REDIS_URL", redis_url(first + CACHES_DATABASE)),
            (
                "CACHE_OPTIONS",
                PyValue::Expression("redis_options()".to_owned()),
            ),
            ("CACHE_KEY_PREFIX", PyValue::Str(prefix.to_owned())),
            ("CACHE_DEFAULT_TIMEOUT", PyValue::Int(CACHE_TIMEOUT_SECONDS)),
        ])
    };
    let mut out = vec![
        ("CELERY_CONFIG".to_owned(), config),
        ("CACHE_CONFIG".to_owned(), cache("superset_")),
        ("DATA_CACHE_CONFIG".to_owned(), cache("superset_data_")),
        (
            "RESULTS_BACKEND".to_owned(),
            PyValue::Expression(format!(
                "RedisCache(host=redis_client({}), key_prefix=\"superset_results_\")",
                first + 3
            )),
        ),
    ];
    out.push((
        "WEBDRIVER_BASEURL".to_owned(),
        PyValue::Str(celery.web_server_url.clone()),
    ));
    if celery.alerts_reports {
        out.push((
            "FEATURE_FLAGS".to_owned(),
            dict([("ALERT_REPORTS", PyValue::Bool(true))]),
        ));
    }
    out
}

impl SupersetSettings {
    /// Whether the file installs the TLS hook, which ships next to it.
    pub fn database_tls(&self) -> bool {
        matches!(
            self.database,
            DatabaseSetting::Postgresql { tls: Some(_), .. }
        )
    }
}

fn env(name: &str) -> PyValue {
    PyValue::Expression(format!("os.environ[{}]", string_literal(name)))
}

fn registration_assignments(registration: &Registration) -> Vec<(String, PyValue)> {
    vec![
        (
            "AUTH_USER_REGISTRATION".to_owned(),
            PyValue::Bool(registration.enabled),
        ),
        (
            "AUTH_USER_REGISTRATION_ROLE".to_owned(),
            PyValue::Str(registration.role.clone()),
        ),
    ]
}

/// The operator's assignments, in the order they are written.
pub fn assignments(settings: &SupersetSettings) -> Vec<(String, PyValue)> {
    let mut out: Vec<(String, PyValue)> = Vec::new();
    if let DatabaseSetting::Postgresql {
        host,
        port,
        database,
        driver,
        tls,
    } = &settings.database
    {
        let scheme = match driver {
            Driver::Pg8000 => "postgresql+pg8000://",
            Driver::None => "postgresql://",
        };
        out.push((
            "SQLALCHEMY_DATABASE_URI".to_owned(),
            PyValue::Expression(format!(
                "{} + quote(os.environ[{}], safe=\"\") + \":\" + quote(os.environ[{}], safe=\"\") + {}",
                string_literal(scheme),
                string_literal(DB_USERNAME_ENV),
                string_literal(DB_PASSWORD_ENV),
                string_literal(&format!("@{host}:{port}/{database}")),
            )),
        ));
        if let Some(tls) = tls {
            out.push((
                DATABASE_TLS_SETTING.to_owned(),
                PyValue::Expression(format!(
                    "secure_metadata_database(host={}, port={port}, database={}, ssl_mode={}, \
                     ca_file={})",
                    // SQLAlchemy parses an IPv6 host out of its brackets.
                    string_literal(host.trim_start_matches('[').trim_end_matches(']')),
                    string_literal(database),
                    string_literal(&tls.ssl_mode.to_string()),
                    tls.ca_file
                        .as_deref()
                        .map_or_else(|| "None".to_owned(), string_literal),
                )),
            ));
        }
    }
    out.push((
        "ROW_LIMIT".to_owned(),
        PyValue::Int(i64::from(settings.row_limit)),
    ));
    out.push((
        "SUPERSET_WEBSERVER_TIMEOUT".to_owned(),
        PyValue::Int(i64::from(settings.webserver_timeout)),
    ));
    if settings.mapbox_api_key {
        out.push(("MAPBOX_API_KEY".to_owned(), env(MAPBOX_API_KEY_ENV)));
    }
    match &settings.authentication {
        None => {}
        Some(AuthSetting::Ldap {
            server_uri,
            bind_dn,
            search_base,
            user_attribute,
            group_attribute,
            tls,
            registration,
        }) => {
            out.push((
                "AUTH_TYPE".to_owned(),
                PyValue::Expression("AUTH_LDAP".to_owned()),
            ));
            out.push((
                "AUTH_LDAP_SERVER".to_owned(),
                PyValue::Str(server_uri.clone()),
            ));
            out.push((
                "AUTH_LDAP_BIND_USER".to_owned(),
                PyValue::Str(bind_dn.clone()),
            ));
            out.push((
                "AUTH_LDAP_BIND_PASSWORD".to_owned(),
                env(LDAP_BIND_PASSWORD_ENV),
            ));
            out.push((
                "AUTH_LDAP_SEARCH".to_owned(),
                PyValue::Str(search_base.clone()),
            ));
            out.push((
                "AUTH_LDAP_UID_FIELD".to_owned(),
                PyValue::Str(user_attribute.clone()),
            ));
            out.push((
                "AUTH_LDAP_GROUP_FIELD".to_owned(),
                PyValue::Str(group_attribute.clone()),
            ));
            if let Some(tls) = tls {
                out.push(("AUTH_LDAP_TLS_DEMAND".to_owned(), PyValue::Bool(true)));
                if tls.start_tls {
                    out.push(("AUTH_LDAP_USE_TLS".to_owned(), PyValue::Bool(true)));
                }
                if tls.ca_file {
                    out.push(("AUTH_LDAP_TLS_CACERTFILE".to_owned(), env(LDAP_CA_FILE_ENV)));
                }
            }
            out.extend(registration_assignments(registration));
        }
        Some(AuthSetting::Oidc {
            issuer_url,
            client_id,
            scopes,
            registration,
        }) => {
            out.push((
                "AUTH_TYPE".to_owned(),
                PyValue::Expression("AUTH_OAUTH".to_owned()),
            ));
            let remote_app = BTreeMap::from([
                ("client_id".to_owned(), PyValue::Str(client_id.clone())),
                ("client_secret".to_owned(), env(OIDC_CLIENT_SECRET_ENV)),
                (
                    "server_metadata_url".to_owned(),
                    PyValue::Str(format!(
                        "{}/.well-known/openid-configuration",
                        issuer_url.trim_end_matches('/')
                    )),
                ),
                (
                    "client_kwargs".to_owned(),
                    PyValue::Dict(BTreeMap::from([(
                        "scope".to_owned(),
                        PyValue::Str(scopes.join(" ")),
                    )])),
                ),
            ]);
            let provider = BTreeMap::from([
                ("name".to_owned(), PyValue::Str("oidc".to_owned())),
                ("icon".to_owned(), PyValue::Str("fa-openid".to_owned())),
                (
                    "token_key".to_owned(),
                    PyValue::Str("access_token".to_owned()),
                ),
                ("remote_app".to_owned(), PyValue::Dict(remote_app)),
            ]);
            out.push((
                "OAUTH_PROVIDERS".to_owned(),
                PyValue::List(vec![PyValue::Dict(provider)]),
            ));
            out.extend(registration_assignments(registration));
        }
    }
    out.extend(rate_limit_assignments(settings));
    if let Some(celery) = &settings.celery {
        out.extend(celery_assignments(celery));
    }
    if settings.behind_proxy {
        out.push(("ENABLE_PROXY_FIX".to_owned(), PyValue::Bool(true)));
    }
    if let Some(url) = &settings.ingress_url {
        out.push((
            "WEBDRIVER_BASEURL_USER_FRIENDLY".to_owned(),
            PyValue::Str(url.clone()),
        ));
        if url.starts_with("https://") {
            out.extend(secure_cookie_assignments());
        }
    }
    out
}

/// Behind an Ingress that serves HTTPS, the session and remember-me cookies carry
/// `Secure`, so a browser never sends them over plain HTTP (Superset's default sends
/// them on either), and the URLs Flask builds outside a request say `https`. A user
/// who must reach the web servers over plain HTTP (a port-forward) overrides
/// `SESSION_COOKIE_SECURE`.
fn secure_cookie_assignments() -> [(String, PyValue); 3] {
    [
        ("SESSION_COOKIE_SECURE".to_owned(), PyValue::Bool(true)),
        ("REMEMBER_COOKIE_SECURE".to_owned(), PyValue::Bool(true)),
        (
            "PREFERRED_URL_SCHEME".to_owned(),
            PyValue::Str("https".to_owned()),
        ),
    ]
}

/// A security manager `superset_config.py` names, shipped next to it.
struct SecurityManager {
    class: &'static str,
    import: &'static str,
}

/// The operator's, whose login API has the login form's rate limit.
const RATE_LIMITED_MANAGER: SecurityManager = SecurityManager {
    class: "StrataSecurityManager",
    import: "from strata_security import StrataSecurityManager",
};

/// Its subclass for OIDC, which reads the users from the ID token's claims.
const OIDC_MANAGER: SecurityManager = SecurityManager {
    class: "OidcSecurityManager",
    import: "from strata_oidc import OidcSecurityManager",
};

fn security_manager(settings: &SupersetSettings) -> &'static SecurityManager {
    if matches!(settings.authentication, Some(AuthSetting::Oidc { .. })) {
        &OIDC_MANAGER
    } else {
        &RATE_LIMITED_MANAGER
    }
}

/// Login rate limits on, whatever the image's `SUPERSET_ENV` (Superset turns
/// Flask-Limiter on only for `production`, which the `apache/superset` image sets and a
/// derived image or an `envOverrides` may not). Superset's own limits stay: the login
/// form and, through [`security_manager`], the login API at `AUTH_RATE_LIMIT` ("5 per
/// second") per client address, every request at `RATELIMIT_APPLICATION` ("50 per
/// second"). Without Redis each web server process counts on its own; with Redis they
/// count together in the caches' database (keys prefixed `LIMITS`), and a Redis that
/// does not answer falls back to counting in memory rather than failing every request.
fn rate_limit_assignments(settings: &SupersetSettings) -> Vec<(String, PyValue)> {
    let mut out = vec![
        ("RATELIMIT_ENABLED".to_owned(), PyValue::Bool(true)),
        (
            "CUSTOM_SECURITY_MANAGER".to_owned(),
            PyValue::Expression(security_manager(settings).class.to_owned()),
        ),
    ];
    if let Some(celery) = &settings.celery {
        out.extend([
            (
                "RATELIMIT_STORAGE_URI".to_owned(),
                redis_url(celery.first_database + CACHES_DATABASE),
            ),
            (
                "RATELIMIT_STORAGE_OPTIONS".to_owned(),
                PyValue::Expression("redis_options()".to_owned()),
            ),
            (
                "RATELIMIT_IN_MEMORY_FALLBACK_ENABLED".to_owned(),
                PyValue::Bool(true),
            ),
        ]);
    }
    out
}

/// The file: imports, the operator's assignments, then `overrides` (name to Python
/// expression), which win.
pub fn render(
    settings: &SupersetSettings,
    overrides: &BTreeMap<String, String>,
) -> Result<String, PythonError> {
    let mut all = assignments(settings);
    all.extend(
        overrides
            .iter()
            .map(|(name, expression)| (name.clone(), PyValue::Expression(expression.clone()))),
    );
    python::write(
        "Rendered by the Strata Superset operator; edit the SupersetCluster instead.\n\
         Secrets come from the environment; none is written here.",
        &imports(settings),
        all.iter().map(|(name, value)| (name.as_str(), value)),
    )
}

/// The file's imports, among them the security manager shipped next to it.
fn imports(settings: &SupersetSettings) -> Vec<&'static str> {
    let mut imports = vec![
        "import os",
        "from urllib.parse import quote",
        "from flask_appbuilder.security.manager import AUTH_LDAP, AUTH_OAUTH",
    ];
    imports.push(security_manager(settings).import);
    if settings.database_tls() {
        imports.push("from strata_database_tls import secure_metadata_database");
    }
    if settings.celery.is_some() {
        imports.push("from cachelib.redis import RedisCache");
        imports.push("from celery.schedules import crontab");
        imports.push("from strata_celery import redis_client, redis_options, redis_tls, redis_url");
    }
    imports
}

#[cfg(test)]
mod tests;
