//! Celery, checked: the Redis the pods reach, and the rules workers and beat must keep.

use strata_operator::error::ReconcileError;

use super::SecretUse;
use super::database::{CaSource, ca_source};
use crate::crd::celery::{DEFAULT_REDIS_PORT, MAX_FIRST_REDIS_DATABASE, Redis};

/// Workers or beat without `clusterConfig.redis`: nothing to take tasks from.
pub const CELERY_WITHOUT_BROKER: &str = "CeleryWithoutBroker";
/// A `clusterConfig.redis` that names no Redis, or two.
pub const INVALID_REDIS: &str = "InvalidRedis";
/// A beat role that would run no scheduler, or several.
pub const BEAT_NOT_SINGLE: &str = "BeatNotSingle";

/// A `clusterConfig.redis.tls` whose CA names no object, or two.
pub const INVALID_REDIS_TLS: &str = "InvalidRedisTls";
/// The spec's field that names Redis's CA, for messages.
pub const REDIS_CA_FIELD: &str = "clusterConfig.redis.tls.caCertificate";
/// Where the pods find Redis's CA certificate.
pub const REDIS_CA_DIR: &str = "/strata/redis-tls";

/// The Redis key of a password Secret.
pub const REDIS_PASSWORD_KEY: &str = "password";
/// The Redis key of a URL Secret.
pub const REDIS_URL_KEY: &str = "url";

/// Where the pods reach Redis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RedisAddress {
    /// A host and port, with the password from a Secret when there is one.
    Host {
        /// Host name.
        host: String,
        /// Port.
        port: u16,
        /// The Secret with the key `password`.
        password_secret: Option<String>,
    },
    /// The whole URL from a Secret's key `url`.
    Url {
        /// The Secret.
        url_secret: String,
    },
}

/// `clusterConfig.redis`, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidatedRedis {
    /// Where it is.
    pub address: RedisAddress,
    /// The broker's database; Celery's results, the caches and SQL Lab's results use
    /// the three after it.
    pub first_database: u8,
    /// TLS, when the spec asks for it.
    pub tls: Option<ValidatedRedisTls>,
}

/// `clusterConfig.redis.tls`, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidatedRedisTls {
    /// The object with the CA the server's certificate is checked against; the
    /// image's trust store without one.
    pub ca: Option<CaSource>,
}

impl ValidatedRedis {
    /// Checks `redis`, at `spec.clusterConfig.redis`.
    pub fn new(redis: &Redis) -> Result<Self, ReconcileError> {
        let invalid = |message: String| {
            ReconcileError::invalid_spec(
                INVALID_REDIS,
                format!("spec.clusterConfig.redis: {message}"),
            )
        };
        if redis.first_database > MAX_FIRST_REDIS_DATABASE {
            return Err(invalid(format!(
                "firstDatabase is {}, but the cluster uses four databases from it and Redis \
                 has 16 (0 to 15): use at most {MAX_FIRST_REDIS_DATABASE}",
                redis.first_database
            )));
        }
        let address = match (&redis.host, &redis.url_secret) {
            (Some(host), None)
                if strata_model::ingress::is_dns_subdomain(host)
                    || host.parse::<std::net::Ipv4Addr>().is_ok() =>
            {
                let port = redis.port.unwrap_or(DEFAULT_REDIS_PORT);
                if port == 0 {
                    return Err(invalid("port 0 is no port".to_owned()));
                }
                if redis.password_secret.is_none() {
                    return Err(insecure_redis());
                }
                RedisAddress::Host {
                    host: host.clone(),
                    port,
                    password_secret: redis.password_secret.clone(),
                }
            }
            (Some(host), None) => {
                return Err(invalid(format!(
                    "host {host:?} is not a host name (lower case, such as \
                     redis.default.svc.cluster.local) or an IPv4 address; put a port in \
                     port, and an IPv6 address in a urlSecret, in brackets"
                )));
            }
            (None, Some(url_secret)) if redis.port.is_none() && redis.password_secret.is_none() => {
                RedisAddress::Url {
                    url_secret: url_secret.clone(),
                }
            }
            (None, Some(_)) => {
                return Err(invalid(
                    "urlSecret holds the whole URL: port and passwordSecret go with host \
                     only; drop them, or use host instead of urlSecret"
                        .to_owned(),
                ));
            }
            (Some(_), Some(_)) => {
                return Err(invalid("sets both host and urlSecret: keep one".to_owned()));
            }
            (None, None) => {
                return Err(invalid(
                    "names no Redis: set host (with port and passwordSecret) or urlSecret"
                        .to_owned(),
                ));
            }
        };
        let tls = redis
            .tls
            .as_ref()
            .map(|tls| {
                tls.ca_certificate
                    .as_ref()
                    .map(|ca| ca_source(ca, REDIS_CA_FIELD, INVALID_REDIS_TLS))
                    .transpose()
                    .map(|ca| ValidatedRedisTls { ca })
            })
            .transpose()?;
        Ok(Self {
            address,
            first_database: redis.first_database,
            tls,
        })
    }

    /// The object with Redis's CA certificate, if one is named.
    pub fn ca(&self) -> Option<&CaSource> {
        self.tls.as_ref().and_then(|tls| tls.ca.as_ref())
    }

    /// The Secret the pods read Redis's password or URL from, if any.
    pub fn secret(&self) -> Option<SecretUse> {
        match &self.address {
            RedisAddress::Host {
                password_secret: Some(name),
                ..
            } => Some(SecretUse {
                name: name.clone(),
                keys: vec![REDIS_PASSWORD_KEY],
                field: "clusterConfig.redis.passwordSecret",
            }),
            RedisAddress::Host { .. } => None,
            RedisAddress::Url { url_secret } => Some(SecretUse {
                name: url_secret.clone(),
                keys: vec![REDIS_URL_KEY],
                field: "clusterConfig.redis.urlSecret",
            }),
        }
    }
}

/// The Redis, required when the cluster has workers or beat.
pub fn redis(
    redis: Option<&Redis>,
    workers: bool,
    beat: bool,
) -> Result<Option<ValidatedRedis>, ReconcileError> {
    match redis {
        Some(redis) => ValidatedRedis::new(redis).map(Some),
        None if workers || beat => Err(ReconcileError::invalid_spec(
            CELERY_WITHOUT_BROKER,
            format!(
                "spec.{} needs a broker, and spec.clusterConfig.redis names none: set it to \
                 the Redis that carries Celery's tasks",
                if workers { "workers" } else { "beat" }
            ),
        )),
        None => Ok(None),
    }
}

/// Beat must run exactly one scheduler: one role group of one replica. Two would send
/// every periodic task twice, every report twice; none would send none while the
/// cluster looked healthy.
pub fn check_single_beat(groups: &[(String, u16)]) -> Result<(), ReconcileError> {
    match groups {
        [(_, 1)] => Ok(()),
        _ => Err(ReconcileError::invalid_spec(
            BEAT_NOT_SINGLE,
            format!(
                "spec.beat has {}: beat must run exactly one pod (one role group with \
                 replicas 1), or two would send every scheduled report twice; stop the \
                 cluster or remove spec.beat instead",
                if groups.is_empty() {
                    "no role group".to_owned()
                } else {
                    groups
                        .iter()
                        .map(|(name, replicas)| {
                            format!("roleGroups.{name} with {replicas} replicas")
                        })
                        .collect::<Vec<_>>()
                        .join(" and ")
                }
            ),
        )),
    }
}

/// A Redis without a password is refused: Superset's caches and SQL Lab's results keep
/// pickles there (cachelib unpickles every value that starts with `!`), so whoever can
/// write to that Redis runs code in every Superset pod, with the `SECRET_KEY` and every
/// database credential at hand, and reads every cached result.
fn insecure_redis() -> ReconcileError {
    ReconcileError::invalid_spec(
        "InsecureRedis",
        "spec.clusterConfig.redis: host without passwordSecret: Superset keeps pickled \
         values in Redis and unpickles them, so whoever can write to a Redis without a \
         password runs code in every Superset pod. Set requirepass (or an ACL user) on the \
         Redis and name a Secret with its password in passwordSecret, or give the whole \
         URL with its credentials in urlSecret",
    )
}
