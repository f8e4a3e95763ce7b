//! The custom resource of the Superset operator: `SupersetCluster`, the Superset web
//! server with its metadata database, admin user and authentication.

pub mod celery;
pub mod config;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata_model::cluster_operation::ClusterOperation;
use strata_model::exposure::ServiceExposure;
use strata_model::image::ProductImage;
use strata_model::role::{GenericRoleConfig, Role};
use strata_status::ClusterStatus;

pub use self::celery::{CeleryBeatConfig, CeleryWorkerConfig, Redis};
pub use self::config::{SupersetConfig, SupersetConfigOverrides};

/// Product name: `app.kubernetes.io/name` of every object.
pub const APP_NAME: &str = "superset";
/// The operator's name: `app.kubernetes.io/managed-by` and the field manager.
pub const OPERATOR_NAME: &str = "superset-operator";
/// The web servers' role.
pub const NODE_ROLE: &str = "node";
/// The Celery workers' role.
pub const WORKER_ROLE: &str = "worker";
/// Celery beat's role.
pub const BEAT_ROLE: &str = "beat";
/// Repository of the upstream image; the tag is the product version.
pub const UPSTREAM_IMAGE_REPOSITORY: &str = "docker.io/apache/superset";
/// Product version run when `spec.image.productVersion` is absent.
pub const DEFAULT_PRODUCT_VERSION: &str = "6.1.0";
/// Default `ROW_LIMIT`, Superset's own.
pub const DEFAULT_ROW_LIMIT: u32 = 50_000;
/// Default `SUPERSET_WEBSERVER_TIMEOUT` and gunicorn `--timeout`, in seconds.
pub const DEFAULT_WEBSERVER_TIMEOUT: u32 = 60;

/// A Superset web server: one StatefulSet per role group of `nodes`, all on one
/// metadata database.
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[kube(
    group = "superset.strata.dev",
    version = "v1alpha1",
    kind = "SupersetCluster",
    plural = "supersetclusters",
    shortname = "superset",
    namespaced,
    status = "ClusterStatus",
    derive = "PartialEq",
    doc = "A Superset web server managed by the Strata Superset operator.",
    printcolumn = r#"{"name":"Available","type":"string","jsonPath":".status.conditions[?(@.type==\"Available\")].status"}"#,
    printcolumn = r#"{"name":"Degraded","type":"string","jsonPath":".status.conditions[?(@.type==\"Degraded\")].status"}"#,
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".status.deployedProductVersion"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct SupersetClusterSpec {
    /// The Superset version and image. Defaults to the upstream `apache/superset` image
    /// in version 6.1.0.
    #[serde(default)]
    pub image: ProductImage,

    /// Pause reconciliation or stop the cluster (scale to zero).
    #[serde(default)]
    pub cluster_operation: ClusterOperation,

    /// Settings of the whole cluster.
    pub cluster_config: SupersetClusterConfig,

    /// The web servers.
    pub nodes: Role<SupersetConfig, GenericRoleConfig, SupersetConfigOverrides>,

    /// Celery workers: they run Superset's background tasks (alerts and reports, SQL
    /// Lab's async queries, cache warm-up) from the broker in `clusterConfig.redis`,
    /// which they need.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<Role<CeleryWorkerConfig, GenericRoleConfig, SupersetConfigOverrides>>,

    /// Celery beat: the scheduler that sends the periodic tasks (the alert and report
    /// scheduler every minute, the log pruning every night) to the workers. Exactly one
    /// pod (one role group with one replica): two would send every task twice. Needs
    /// `clusterConfig.redis`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beat: Option<Role<CeleryBeatConfig, GenericRoleConfig, SupersetConfigOverrides>>,
}

/// `spec.clusterConfig`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SupersetClusterConfig {
    /// Where Superset keeps its metadata: exactly one of `postgresql` or `generic`.
    pub metadata_database: MetadataDatabase,

    /// A Secret with the keys `username`, `firstname`, `lastname`, `email` and
    /// `password` of the admin user the operator creates once. Without it no admin is
    /// created (for LDAP or OIDC setups).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_user: Option<SecretRef>,

    /// How users log in; Superset's own database login when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<Authentication>,

    /// `ROW_LIMIT`: the most rows a chart query returns. Defaults to 50000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_limit: Option<u32>,

    /// Seconds a request may take (`SUPERSET_WEBSERVER_TIMEOUT` and gunicorn's
    /// `--timeout`). Defaults to 60.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webserver_timeout: Option<u32>,

    /// A Secret whose key `SECRET_KEY` is Superset's `SECRET_KEY`, which signs
    /// sessions and encrypts the database passwords, SSH tunnel credentials and OAuth
    /// tokens stored in the metadata database. Without it the operator generates one
    /// into `<cluster>-secret-key`, which outlives the cluster (see docs/superset.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_key_secret: Option<String>,

    /// Rotation of `SECRET_KEY`: a Secret whose key `SECRET_KEY` is the key the
    /// metadata database was encrypted with before the current one. While it is set,
    /// each pod's init container re-encrypts every encrypted value from this key to
    /// the current one (under the migration lock; values the current key reads are
    /// left alone), before the web server starts. Remove it once the cluster is
    /// Available again. See docs/superset.md, Rotation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_secret_key_secret: Option<String>,

    /// A Secret whose key `apiKey` is the Mapbox API key (`MAPBOX_API_KEY`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapbox_api_key_secret: Option<String>,

    /// Trino clusters Superset queries, each built from the discovery ConfigMap its
    /// operator publishes. The init container creates each as a Superset database, or
    /// brings its address, TLS and credentials up to date, at every pod start. A
    /// connection removed here stays in Superset, with the charts built on it. Needs
    /// an image with the `trino` Python package (see the derived image in the docs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trino_connections: Vec<TrinoConnection>,

    /// How users outside the cluster reach the web servers' Service (`<superset>`):
    /// its type (`ClusterIP`, the default, `NodePort` or `LoadBalancer`), annotations,
    /// `loadBalancerSourceRanges` and `externalTrafficPolicy`. While a `LoadBalancer`
    /// has no address the cluster is Progressing (`WaitingForLoadBalancer`).
    #[serde(default, skip_serializing_if = "ServiceExposure::is_default")]
    pub service: ServiceExposure,

    /// An Ingress for the web UI: a host name (and path) routed to `<superset>`'s port
    /// `http`, through the IngressClass given or the cluster's default, with HTTPS when
    /// `tlsSecret` names the host's certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress: Option<strata_model::ingress::IngressExposure>,

    /// A Gateway API HTTPRoute for the web UI, attached to the Gateways named, the
    /// alternative to an Ingress: its hostnames and path routed to `<superset>`'s port
    /// `http`. TLS, if any, is the Gateway listener's. Needs the Gateway API CRDs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_route: Option<strata_model::http_route::HttpRouteExposure>,

    /// The Redis of Celery's broker and results and of Superset's caches: needed by
    /// `workers` and `beat`. With it every pod shares the caches, and SQL Lab keeps
    /// async query results there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redis: Option<Redis>,

    /// What a Prometheus Operator in the cluster gets: a ServiceMonitor that scrapes
    /// the statsd exporter beside each web server, and a PrometheusRule with
    /// Superset's alerts (docs/monitoring.md). Both need the Prometheus Operator's
    /// CRDs.
    #[serde(
        default,
        skip_serializing_if = "strata_model::monitoring::Monitoring::is_default"
    )]
    pub monitoring: strata_model::monitoring::Monitoring,
}

/// A Superset database on a Trino cluster of the same namespace.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct TrinoConnection {
    /// The database's name in Superset, unique among the connections.
    pub name: String,
    /// The Trino cluster's discovery ConfigMap (it bears the cluster's name): its
    /// `TRINO_HOST`, `TRINO_PORT` and `TRINO_TLS`, and `ca.crt` with TLS.
    pub discovery_config_map: String,
    /// The catalog of queries that name none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog: Option<String>,
    /// A Secret with `username` and `password`, for a Trino with password or LDAP
    /// authentication. Without it Superset connects as the user `superset` with no
    /// password, which only a Trino without authentication accepts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_secret: Option<String>,
}

/// A Secret in the cluster's namespace.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SecretRef {
    /// The Secret's name.
    pub secret_name: String,
}

/// The metadata database. The schema allows both variants or neither, so that such a
/// spec reaches the operator, which names the problem in a condition.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MetadataDatabase {
    /// A PostgreSQL database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postgresql: Option<PostgresqlDatabase>,
    /// Any database SQLAlchemy reaches, by URI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generic: Option<GenericDatabase>,
    /// The PostgreSQL driver: `pg8000` (default), shipped by the operator because the
    /// 6.1.0 image has none, or `none` when the image brings its own.
    #[serde(default)]
    pub driver: Driver,
}

/// A PostgreSQL metadata database.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PostgresqlDatabase {
    /// Host name, IPv4 address, or IPv6 address in brackets (`[fd00::10]`).
    pub host: String,
    /// Port; defaults to 5432.
    #[serde(default = "default_postgresql_port")]
    pub port: u16,
    /// Database name, without `?`, `#`, `/`, `@`, `[`, `]`, `%` or spaces, which the
    /// database URI would read as its own syntax.
    pub database: String,
    /// A Secret with the keys `username` and `password`.
    pub credentials_secret: String,
    /// TLS to the database. Without it the driver decides: pg8000 tries TLS without
    /// checking the server's certificate, and falls back to plaintext.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<DatabaseTls>,
}

/// TLS to the metadata database, in libpq's terms.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseTls {
    /// libpq's `sslmode`; defaults to `verify-full`.
    #[serde(default)]
    pub ssl_mode: SslMode,
    /// The CA that signed the database server's certificate, as the key `ca.crt` of a
    /// Secret or ConfigMap (cert-manager's and trust-manager's key). Without it the
    /// image's system trust store is used, which suits a managed database whose
    /// certificate a public CA signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_certificate: Option<CaCertificate>,
}

/// How the connection to the database is secured: libpq's `sslmode` values.
#[derive(
    Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq, strum::Display,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum SslMode {
    /// Plaintext only.
    Disable,
    /// Encrypted; the server's certificate is not checked, so an attacker in the path
    /// can pose as the database.
    Require,
    /// Encrypted, and the server's certificate is signed by the CA.
    VerifyCa,
    /// Encrypted, signed by the CA, and naming `host`.
    #[default]
    VerifyFull,
}

/// Where a CA certificate is: exactly one of the two, key `ca.crt`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct CaCertificate {
    /// A Secret with the key `ca.crt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_name: Option<String>,
    /// A ConfigMap with the key `ca.crt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_name: Option<String>,
}

fn default_postgresql_port() -> u16 {
    5432
}

/// A metadata database given by SQLAlchemy URI.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct GenericDatabase {
    /// A Secret whose key `uri` is the SQLAlchemy URI.
    pub uri_secret: String,
}

/// Which PostgreSQL driver Superset uses.
#[derive(
    Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq, strum::Display,
)]
#[serde(rename_all = "camelCase")]
#[strum(serialize_all = "lowercase")]
pub enum Driver {
    /// The pure-Python `pg8000`, whose wheels the operator ships in a ConfigMap.
    #[default]
    Pg8000,
    /// None from the operator: the image has one.
    None,
}

/// How users log in. The schema allows both, so that such a spec reaches the operator,
/// which refuses it in a condition.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Authentication {
    /// LDAP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ldap: Option<Ldap>,
    /// OpenID Connect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oidc: Option<Oidc>,
    /// Whether users who log in for the first time get an account; defaults to true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_registration: Option<bool>,
    /// The role of self-registered users; defaults to `Public`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_registration_role: Option<String>,
}

/// LDAP login (Flask-AppBuilder `AUTH_LDAP`).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Ldap {
    /// Server URI, such as `ldaps://ldap.example.com:636`. `ldap://` sends the bind
    /// password and every user's password in clear text, and needs `startTls: true` or
    /// `allowInsecure: true`.
    pub server_uri: String,
    /// The DN to bind as for searches.
    pub bind_dn: String,
    /// A Secret whose key `password` is the bind password.
    pub bind_password_secret: String,
    /// Where users are searched.
    pub search_base: String,
    /// The attribute that holds the user name; defaults to `uid`.
    #[serde(default = "default_uid_attribute")]
    pub user_attribute: String,
    /// The attribute that lists a user's groups; defaults to `memberOf`.
    #[serde(default = "default_group_attribute")]
    pub group_attribute: String,
    /// Upgrade each `ldap://` connection with StartTLS before the bind: the passwords
    /// then travel encrypted, and a server that refuses StartTLS refuses every login
    /// rather than receiving them in clear. Not with `ldaps://`, which is TLS already.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub start_tls: bool,
    /// The CA that signed the LDAP server's certificate, as the key `ca.crt` of a Secret
    /// or ConfigMap (cert-manager's and trust-manager's key). Without it the image's
    /// system trust store is used, which suits a directory whose certificate a public CA
    /// signed. Either way the certificate is verified and must name the URI's host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_certificate: Option<CaCertificate>,
    /// Allow an `ldap://` server URI without StartTLS, which sends every password in
    /// clear text. False by default.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_insecure: bool,
}

fn default_uid_attribute() -> String {
    "uid".to_owned()
}

fn default_group_attribute() -> String {
    "memberOf".to_owned()
}

/// OpenID Connect login (Flask-AppBuilder `AUTH_OAUTH`).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Oidc {
    /// The issuer URL; its `/.well-known/openid-configuration` is read.
    pub issuer_url: String,
    /// The client id.
    pub client_id: String,
    /// A Secret whose key `clientSecret` is the client secret.
    pub client_secret_secret: String,
    /// Scopes requested; defaults to `openid email profile`.
    #[serde(default = "default_scopes")]
    pub scopes: Vec<String>,
}

fn default_scopes() -> Vec<String> {
    ["openid", "email", "profile"].map(str::to_owned).to_vec()
}

impl strata_operator::pipeline::Operated for SupersetCluster {
    fn cluster_operation(&self) -> &strata_model::cluster_operation::ClusterOperation {
        &self.spec.cluster_operation
    }
}
