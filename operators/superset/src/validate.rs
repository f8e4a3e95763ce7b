//! Validation: a `SupersetCluster` to a [`ValidatedCluster`], with every default
//! applied, every rule checked and `superset_config.py` rendered.

use strata_model::exposure::{INVALID_SERVICE_EXPOSURE, ServiceExposure};
use strata_model::identity::{ClusterIdentity, Product, ValidatedRole, check_cluster_domain};
use strata_model::merge::{Merge, defaulted};
use strata_model::resources::HeapRule;
use strata_model::role::{GenericRoleConfig, Role};
use strata_model::role_group::CommonSettings;
use strata_operator::error::ReconcileError;

use crate::build::secret_key::SECRET_KEY_KEY;
use crate::config::packages::{Wheel, wheels};
use crate::config::superset_config::{
    AuthSetting, CelerySetting, Registration, SupersetSettings, render,
};
use crate::crd::{
    APP_NAME, BEAT_ROLE, CeleryBeatConfig, CeleryWorkerConfig, DEFAULT_PRODUCT_VERSION,
    DEFAULT_ROW_LIMIT, DEFAULT_WEBSERVER_TIMEOUT, NODE_ROLE, OPERATOR_NAME, SupersetCluster,
    SupersetConfig, SupersetConfigOverrides, UPSTREAM_IMAGE_REPOSITORY, WORKER_ROLE,
};
pub use strata_model::identity::DEFAULT_CLUSTER_DOMAIN;

/// Smallest memory limit accepted: Superset with one gunicorn worker needs about 400 MiB.
pub const MIN_MEMORY_LIMIT_MIB: u64 = 512;

/// The Secrets a cluster reads, by what they hold. Their values reach pods through
/// `secretKeyRef`, never the operator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretUse {
    /// The Secret's name.
    pub name: String,
    /// The keys the pods read from it.
    pub keys: Vec<&'static str>,
    /// Where it is named in the spec, for messages.
    pub field: &'static str,
}

/// Where the pods read `SECRET_KEY` from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SecretKeySource {
    /// The user's Secret (`clusterConfig.secretKeySecret`), checked like every Secret
    /// the pods read.
    User(String),
    /// `<cluster>-secret-key`: generated once, or adopted when it exists already,
    /// and never deleted by the operator (see [`crate::build::secret_key`]).
    Generated(String),
}

impl SecretKeySource {
    /// The Secret's name.
    pub fn secret_name(&self) -> &str {
        match self {
            Self::User(name) | Self::Generated(name) => name,
        }
    }
}

/// A `SupersetCluster` with every default applied and every rule checked.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ValidatedCluster {
    /// Who the cluster is: its name, its namespace (every built object's), the
    /// image every pod runs and the labels of cluster-wide objects.
    pub identity: ClusterIdentity,
    /// The metadata database.
    pub database: ValidatedDatabase,
    /// The Python packages the operator ships to the pods (driver, OIDC).
    pub wheels: Vec<Wheel>,
    /// Whether users log in through OpenID Connect, which needs the operator's security
    /// manager next to `superset_config.py`.
    pub oidc_login: bool,
    /// The admin user's Secret, if an admin is created.
    pub admin_secret: Option<String>,
    /// The LDAP bind password Secret or the OIDC client secret Secret, if any.
    pub auth_secret: Option<SecretUse>,
    /// The object with the LDAP server's CA, when the spec names one.
    pub ldap_ca: Option<CaSource>,
    /// The Mapbox API key Secret, if any.
    pub mapbox_secret: Option<String>,
    /// Where `SECRET_KEY` comes from.
    pub secret_key: SecretKeySource,
    /// The Secret of the key being rotated away from, while a rotation runs.
    pub previous_secret_key: Option<String>,
    /// gunicorn's `--timeout`.
    pub webserver_timeout: u32,
    /// The Trino connections the init container keeps up to date.
    pub trino_connections: Vec<ValidatedTrinoConnection>,
    /// How the client Service is exposed.
    pub service: ServiceExposure,
    /// The web UI's Ingress, if asked for.
    pub ingress: Option<strata_model::ingress::IngressExposure>,
    /// The web UI's HTTPRoute, if asked for.
    pub http_route: Option<strata_model::http_route::HttpRouteExposure>,
    /// The Prometheus Operator objects the cluster asks for.
    pub monitoring: strata_model::monitoring::Monitoring,
    /// The web servers, `node`: `<cluster>-node` names its PodDisruptionBudget.
    pub nodes: ValidatedRole<(), ValidatedRoleGroup>,
    /// The Redis of Celery and the caches, when the spec names one.
    pub redis: Option<ValidatedRedis>,
    /// The Celery workers, `worker`.
    pub workers: Option<ValidatedRole<(), ValidatedWorkerGroup>>,
    /// Celery beat, `beat`: one role group of one pod.
    pub beat: Option<ValidatedRole<(), ValidatedBeatGroup>>,
}

/// A Celery worker role group, checked.
pub type ValidatedWorkerGroup = strata_model::role_group::ValidatedRoleGroup<WorkerGroup>;
/// Celery beat's role group, checked.
pub type ValidatedBeatGroup = strata_model::role_group::ValidatedRoleGroup<BeatGroup>;

/// What only the worker role groups have.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct WorkerGroup {
    /// Celery's `--concurrency`.
    pub concurrency: u16,
    /// The rendered `superset_config.py`.
    pub superset_config: String,
}

/// What only beat's role group has.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct BeatGroup {
    /// The rendered `superset_config.py`.
    pub superset_config: String,
}

/// A role group, checked: the settings every product shares and [`WebServerGroup`].
pub type ValidatedRoleGroup = strata_model::role_group::ValidatedRoleGroup<WebServerGroup>;

/// What only Superset's role groups have: gunicorn's settings and the config file.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct WebServerGroup {
    /// gunicorn workers.
    pub workers: u16,
    /// gunicorn threads per worker.
    pub threads: u16,
    /// The rendered `superset_config.py`.
    pub superset_config: String,
}

impl ValidatedCluster {
    /// Validates `cluster`.
    pub fn new(cluster: &SupersetCluster, cluster_domain: &str) -> Result<Self, ReconcileError> {
        let identity = ClusterIdentity::new(PRODUCT, &cluster.metadata, &cluster.spec.image)?;
        check_cluster_domain(cluster_domain)?;
        let config = &cluster.spec.cluster_config;
        let database = &config.metadata_database;
        let (validated_database, database_setting) = database::database(database)?;
        let Authentication {
            setting: authentication,
            secret: auth_secret,
            ldap_ca,
        } = authentication(
            config.authentication.as_ref(),
            cluster.spec.image.custom.is_none(),
        )?;
        let oidc_login = matches!(authentication, Some(AuthSetting::Oidc { .. }));
        let redis = celery::redis(
            config.redis.as_ref(),
            cluster.spec.workers.is_some(),
            cluster.spec.beat.is_some(),
        )?;
        let trino_connections = trino::trino_connections(
            &config.trino_connections,
            cluster.spec.image.custom.is_none(),
        )?;
        let settings = SupersetSettings {
            database: database_setting,
            row_limit: config.row_limit.unwrap_or(DEFAULT_ROW_LIMIT),
            webserver_timeout: config
                .webserver_timeout
                .unwrap_or(DEFAULT_WEBSERVER_TIMEOUT),
            mapbox_api_key: config.mapbox_api_key_secret.is_some(),
            authentication,
            celery: redis.as_ref().map(|redis| CelerySetting {
                first_database: redis.first_database,
                alerts_reports: cluster.spec.workers.is_some() && cluster.spec.beat.is_some(),
                web_server_url: format!(
                    "http://{}.{}.svc.{cluster_domain}:{}/",
                    identity.name.client_service_name(),
                    identity.namespace,
                    crate::build::service::HTTP.number
                ),
            }),
            behind_proxy: config.ingress.is_some() || config.http_route.is_some(),
            ingress_url: config
                .ingress
                .as_ref()
                .map(strata_model::ingress::IngressExposure::url),
        };

        let nodes = validated_role(
            &identity,
            NODE_ROLE,
            "nodes",
            &cluster.spec.nodes,
            &SupersetConfig::product_defaults(),
            &settings,
            |config, superset_config| {
                Ok(WebServerGroup {
                    workers: defaulted("workers", &config.workers)?.max(1),
                    threads: defaulted("threads", &config.threads)?.max(1),
                    superset_config,
                })
            },
        )?;
        let workers = cluster
            .spec
            .workers
            .as_ref()
            .map(|workers| {
                validated_role(
                    &identity,
                    WORKER_ROLE,
                    "workers",
                    workers,
                    &CeleryWorkerConfig::product_defaults(),
                    &settings,
                    |config, superset_config| {
                        Ok(WorkerGroup {
                            concurrency: defaulted("concurrency", &config.concurrency)?.max(1),
                            superset_config,
                        })
                    },
                )
            })
            .transpose()?;
        let beat = cluster
            .spec
            .beat
            .as_ref()
            .map(|beat| {
                let role = validated_role(
                    &identity,
                    BEAT_ROLE,
                    "beat",
                    beat,
                    &CeleryBeatConfig::product_defaults(),
                    &settings,
                    |_, superset_config| Ok(BeatGroup { superset_config }),
                )?;
                celery::check_single_beat(
                    &role
                        .groups
                        .iter()
                        .map(|group| (group.name.role_group().as_str().to_owned(), group.replicas))
                        .collect::<Vec<_>>(),
                )?;
                Ok::<_, ReconcileError>(role)
            })
            .transpose()?;

        config
            .service
            .check("spec.clusterConfig.service")
            .map_err(|message| ReconcileError::invalid_spec(INVALID_SERVICE_EXPOSURE, message))?;
        strata_operator::web_exposure::check(config.ingress.as_ref(), config.http_route.as_ref())?;
        config
            .monitoring
            .check("spec.clusterConfig.monitoring")
            .map_err(|message| {
                ReconcileError::invalid_spec(strata_model::monitoring::INVALID_MONITORING, message)
            })?;
        let secret_key = match &config.secret_key_secret {
            Some(name) => SecretKeySource::User(name.clone()),
            None => SecretKeySource::Generated(format!("{}-secret-key", identity.name)),
        };
        Ok(Self {
            identity,
            database: validated_database,
            wheels: wheels(database.driver, oidc_login),
            oidc_login,
            admin_secret: config
                .admin_user
                .as_ref()
                .map(|admin| admin.secret_name.clone()),
            auth_secret,
            ldap_ca,
            mapbox_secret: config.mapbox_api_key_secret.clone(),
            secret_key,
            previous_secret_key: config.previous_secret_key_secret.clone(),
            webserver_timeout: settings.webserver_timeout,
            trino_connections,
            service: config.service.clone(),
            ingress: config.ingress.clone(),
            http_route: config.http_route.clone(),
            monitoring: config.monitoring.clone(),
            nodes,
            redis,
            workers,
            beat,
        })
    }

    /// Every Secret the pods read, with the keys they need: what the controller checks
    /// before anything is applied.
    pub fn secrets(&self) -> Vec<SecretUse> {
        let mut secrets = vec![match &self.database {
            ValidatedDatabase::Postgresql {
                credentials_secret, ..
            } => SecretUse {
                name: credentials_secret.clone(),
                keys: vec!["username", "password"],
                field: "clusterConfig.metadataDatabase.postgresql.credentialsSecret",
            },
            ValidatedDatabase::Generic { uri_secret } => SecretUse {
                name: uri_secret.clone(),
                keys: vec!["uri"],
                field: "clusterConfig.metadataDatabase.generic.uriSecret",
            },
        }];
        if let Some(admin) = &self.admin_secret {
            secrets.push(SecretUse {
                name: admin.clone(),
                keys: vec!["username", "firstname", "lastname", "email", "password"],
                field: "clusterConfig.adminUser.secretName",
            });
        }
        secrets.extend(self.auth_secret.clone());
        if let SecretKeySource::User(name) = &self.secret_key {
            secrets.push(SecretUse {
                name: name.clone(),
                keys: vec![SECRET_KEY_KEY],
                field: "clusterConfig.secretKeySecret",
            });
        }
        if let Some(previous) = &self.previous_secret_key {
            secrets.push(SecretUse {
                name: previous.clone(),
                keys: vec![SECRET_KEY_KEY],
                field: "clusterConfig.previousSecretKeySecret",
            });
        }
        secrets.extend(self.redis.as_ref().and_then(ValidatedRedis::secret));
        if let Some(mapbox) = &self.mapbox_secret {
            secrets.push(SecretUse {
                name: mapbox.clone(),
                keys: vec!["apiKey"],
                field: "clusterConfig.mapboxApiKeySecret",
            });
        }
        secrets.extend(self.trino_connections.iter().filter_map(|connection| {
            connection
                .credentials_secret
                .as_ref()
                .map(|name| SecretUse {
                    name: name.clone(),
                    keys: vec!["username", "password"],
                    field: "clusterConfig.trinoConnections[].credentialsSecret",
                })
        }));
        secrets
    }
}

/// A role of Superset's pods, checked: each merged role group's shared settings, its
/// `superset_config.py` (the cluster's settings, then the group's overrides) and the
/// role's own part from `product`.
fn validated_role<C, P>(
    identity: &ClusterIdentity,
    role_name: &str,
    field: &str,
    role: &Role<C, GenericRoleConfig, SupersetConfigOverrides>,
    defaults: &C,
    settings: &SupersetSettings,
    product: impl Fn(&C, String) -> Result<P, ReconcileError>,
) -> Result<ValidatedRole<(), strata_model::role_group::ValidatedRoleGroup<P>>, ReconcileError>
where
    C: CommonSettings + Merge + Clone,
{
    let role_identity = identity.role_with_groups(role_name, field, &role.role_groups)?;
    let groups = role
        .merged_role_groups(defaults)
        .into_values()
        .map(|merged| {
            let group = strata_model::role_group::ValidatedRoleGroup::check(
                identity,
                &role_identity,
                field,
                &merged,
                HeapRule {
                    heap_percent: 0,
                    min_memory_mib: MIN_MEMORY_LIMIT_MIB,
                    non_heap_reserve_mib: 0,
                },
            )?;
            let superset_config = render(settings, &merged.config_overrides.superset_config_py)
                .map_err(|error| {
                    ReconcileError::invalid_spec(
                        "InvalidConfigOverride",
                        format!("{}: superset_config.py: {error}", group.field),
                    )
                })?;
            let product = product(&merged.config, superset_config)?;
            Ok(group.with(product))
        })
        .collect::<Result<Vec<_>, ReconcileError>>()?;
    Ok(ValidatedRole::new(
        (),
        role_identity,
        role.role_config.pod_disruption_budget.clone(),
        groups,
    ))
}

/// The login settings and what they read. LDAP is refused on the stock image,
/// which has no `python-ldap` since Superset 4.1 (apache/superset#30553): every LDAP
/// login would fail, the admin's included, while the cluster looked healthy. It is a C
/// extension, so the operator cannot ship it as a wheel the way it ships pg8000.
fn authentication(
    authentication: Option<&crate::crd::Authentication>,
    stock_image: bool,
) -> Result<Authentication, ReconcileError> {
    let Some(authentication) = authentication else {
        return Ok(Authentication::default());
    };
    let registration = Registration {
        enabled: authentication.user_registration.unwrap_or(true),
        role: authentication
            .user_registration_role
            .clone()
            .unwrap_or_else(|| "Public".to_owned()),
    };
    match (&authentication.ldap, &authentication.oidc) {
        (Some(ldap), None) => {
            let (setting, ca) = ldap::ldap(ldap, registration)?;
            if stock_image {
                return Err(ReconcileError::invalid_spec(
                    "LdapNeedsPythonLdap",
                    "clusterConfig.authentication.ldap needs python-ldap, which the stock \
                     Superset image has not shipped since 4.1, so every LDAP login would \
                     fail, the admin's included: build an image that adds it (see the \
                     derived image in the Superset docs) and set spec.image.custom to it",
                ));
            }
            Ok(Authentication {
                setting: Some(setting),
                secret: Some(SecretUse {
                    name: ldap.bind_password_secret.clone(),
                    keys: vec!["password"],
                    field: "clusterConfig.authentication.ldap.bindPasswordSecret",
                }),
                ldap_ca: ca,
            })
        }
        (None, Some(oidc)) if !oidc.scopes.iter().any(|scope| scope == "openid") => {
            Err(ReconcileError::invalid_spec(
                "OidcWithoutOpenidScope",
                format!(
                    "clusterConfig.authentication.oidc.scopes is {:?} without `openid`: the \
                     provider would return no ID token, and the login would silently become \
                     plain OAuth2 with unverified claims from the userinfo endpoint; add \
                     `openid`",
                    oidc.scopes
                ),
            ))
        }
        (None, Some(oidc)) => Ok(Authentication {
            setting: Some(AuthSetting::Oidc {
                issuer_url: oidc.issuer_url.clone(),
                client_id: oidc.client_id.clone(),
                scopes: oidc.scopes.clone(),
                registration,
            }),
            secret: Some(SecretUse {
                name: oidc.client_secret_secret.clone(),
                keys: vec!["clientSecret"],
                field: "clusterConfig.authentication.oidc.clientSecretSecret",
            }),
            ldap_ca: None,
        }),
        (Some(_), Some(_)) => Err(ReconcileError::invalid_spec(
            "ConflictingAuthentication",
            "clusterConfig.authentication sets both ldap and oidc; Superset logs users in \
             one way: keep one",
        )),
        (None, None) => Ok(Authentication::default()),
    }
}

/// How users log in, as [`authentication`] checked it.
#[derive(Default)]
struct Authentication {
    setting: Option<AuthSetting>,
    /// The LDAP bind password's or the OIDC client secret's Secret.
    secret: Option<SecretUse>,
    /// The object with the LDAP server's CA.
    ldap_ca: Option<CaSource>,
}

/// The Superset operator's facts for the shared identity checks.
const PRODUCT: Product = Product {
    kind: "SupersetCluster",
    app_name: APP_NAME,
    operator_name: OPERATOR_NAME,
    repository: UPSTREAM_IMAGE_REPOSITORY,
    default_version: DEFAULT_PRODUCT_VERSION,
};

pub mod celery;
mod database;
mod ldap;
mod trino;

pub use self::celery::{RedisAddress, ValidatedRedis};

pub use self::database::{CA_FIELD, CA_KEY, CaSource, DATABASE_CA_DIR, ValidatedDatabase};
pub use self::ldap::{LDAP_CA_DIR, LDAP_CA_FIELD};
pub use self::trino::{
    CONNECTIONS_FIELD, DISCOVERY_KEYS, TRINO_DISCOVERY_DIR, ValidatedTrinoConnection,
    discovery_volumes,
};

#[cfg(test)]
pub(crate) mod tests;
