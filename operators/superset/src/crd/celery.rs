//! Celery: `spec.workers`, `spec.beat` and the Redis they share
//! (`spec.clusterConfig.redis`), with their product defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata_model::merge_struct;
use strata_model::resources::{NoStorage, Resources};

use super::CaCertificate;

/// The Redis port when `port` is absent.
pub const DEFAULT_REDIS_PORT: u16 = 6379;
/// The databases the operator uses, from `firstDatabase` on: the Celery broker, Celery's
/// results, Superset's caches and SQL Lab's async query results.
pub const REDIS_DATABASES: u8 = 4;
/// The highest `firstDatabase`: Redis has 16 databases unless configured otherwise.
pub const MAX_FIRST_REDIS_DATABASE: u8 = 16 - REDIS_DATABASES;

/// The Redis that carries Celery's broker and results and Superset's caches: exactly one
/// of `host` or `urlSecret`. The schema allows both or neither, so that such a spec
/// reaches the operator, which names the problem in a condition.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Redis {
    /// The Redis host name, such as `redis.default.svc.cluster.local`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The port with `host`; defaults to 6379.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// With `host`: a Secret whose key `password` is Redis's password (`requirepass`).
    /// Required: Superset keeps pickled values in Redis and unpickles them, so a Redis
    /// anyone can write to runs their code in every Superset pod (`InsecureRedis`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_secret: Option<String>,
    /// Instead of `host`: a Secret whose key `url` is the whole Redis URL,
    /// `redis://[[user]:password@]host:port` or `rediss://...` for TLS, with no database
    /// number, path or query: the operator appends the database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_secret: Option<String>,
    /// TLS to Redis: with `host`, the pods connect over TLS; with `urlSecret`, its URL
    /// must then be `rediss://`. The server's certificate is checked, its name included,
    /// against `caCertificate`, or the image's system trust store without one. A
    /// `rediss://` URL without `tls` is checked against the system trust store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<RedisTls>,
    /// The first of the four consecutive Redis databases the cluster uses (the broker,
    /// Celery's results, the caches and SQL Lab's results), so that two Superset clusters
    /// can share one Redis. Defaults to 0; at most 12.
    #[serde(default)]
    #[schemars(range(max = 12))]
    pub first_database: u8,
}

/// TLS to Redis.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RedisTls {
    /// The CA that signed Redis's certificate, as the key `ca.crt` of a Secret or
    /// ConfigMap (cert-manager's and trust-manager's key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_certificate: Option<CaCertificate>,
}

/// Settings of the Celery workers of a role or role group.
///
/// Product defaults: CPU 250m to 1, memory 1Gi, shutdown 5m, 2 processes.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CeleryWorkerConfig {
    /// CPU and memory of each worker pod.
    #[serde(default)]
    pub resources: Resources<NoStorage>,
    /// Time a worker gets to finish the tasks it runs after it is asked to stop (Celery's
    /// warm shutdown), such as `5m`; the pod's `terminationGracePeriodSeconds`. A task
    /// still running then is killed, and lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graceful_shutdown_timeout: Option<String>,
    /// Worker processes per pod (Celery's `--concurrency`): tasks a pod runs at once.
    /// Defaults to 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u16>,
}

merge_struct!(CeleryWorkerConfig {
    resources,
    graceful_shutdown_timeout,
    concurrency,
});

strata_model::common_settings!(CeleryWorkerConfig, NoStorage);

/// Default worker CPU request.
pub const DEFAULT_WORKER_CPU_MIN: &str = "250m";
/// Default worker CPU limit.
pub const DEFAULT_WORKER_CPU_MAX: &str = "1";
/// Default worker memory: the main process with Superset loaded and two forked
/// children, about 400 MiB each once their pages diverge.
pub const DEFAULT_WORKER_MEMORY_LIMIT: &str = "1Gi";
/// Default time a worker gets for its running tasks: reports render for minutes.
pub const DEFAULT_WORKER_GRACEFUL_SHUTDOWN_TIMEOUT: &str = "5m";
/// Default worker processes per pod.
pub const DEFAULT_CONCURRENCY: u16 = 2;

impl CeleryWorkerConfig {
    /// The lowest layer of the merge; after merging every field is set.
    pub fn product_defaults() -> Self {
        Self {
            resources: Resources::defaults(
                DEFAULT_WORKER_CPU_MIN,
                DEFAULT_WORKER_CPU_MAX,
                DEFAULT_WORKER_MEMORY_LIMIT,
                NoStorage {},
            ),
            graceful_shutdown_timeout: Some(DEFAULT_WORKER_GRACEFUL_SHUTDOWN_TIMEOUT.to_owned()),
            concurrency: Some(DEFAULT_CONCURRENCY),
        }
    }
}

/// Settings of Celery beat, the scheduler.
///
/// Product defaults: CPU 100m to 500m, memory 512Mi, shutdown 30s.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CeleryBeatConfig {
    /// CPU and memory of the beat pod.
    #[serde(default)]
    pub resources: Resources<NoStorage>,
    /// Time beat gets to stop, such as `30s`; the pod's `terminationGracePeriodSeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graceful_shutdown_timeout: Option<String>,
}

merge_struct!(CeleryBeatConfig {
    resources,
    graceful_shutdown_timeout,
});

strata_model::common_settings!(CeleryBeatConfig, NoStorage);

/// Default beat CPU request: beat sends a few messages a minute.
pub const DEFAULT_BEAT_CPU_MIN: &str = "100m";
/// Default beat CPU limit.
pub const DEFAULT_BEAT_CPU_MAX: &str = "500m";
/// Default beat memory: one process with Superset loaded.
pub const DEFAULT_BEAT_MEMORY_LIMIT: &str = "512Mi";
/// Default time beat gets to stop.
pub const DEFAULT_BEAT_GRACEFUL_SHUTDOWN_TIMEOUT: &str = "30s";

impl CeleryBeatConfig {
    /// The lowest layer of the merge; after merging every field is set.
    pub fn product_defaults() -> Self {
        Self {
            resources: Resources::defaults(
                DEFAULT_BEAT_CPU_MIN,
                DEFAULT_BEAT_CPU_MAX,
                DEFAULT_BEAT_MEMORY_LIMIT,
                NoStorage {},
            ),
            graceful_shutdown_timeout: Some(DEFAULT_BEAT_GRACEFUL_SHUTDOWN_TIMEOUT.to_owned()),
        }
    }
}
