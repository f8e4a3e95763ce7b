//! `spec.nodes.config`: the settings of the web servers of a role or role group, their
//! product defaults, and `superset_config.py` overrides.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata_model::merge_struct;
use strata_model::resources::{CpuResources, MemoryResources, NoStorage, Resources};
use strata_model::role::FileOverrides;

/// Default CPU request.
pub const DEFAULT_CPU_MIN: &str = "250m";
/// Default CPU limit.
pub const DEFAULT_CPU_MAX: &str = "1";
/// Default memory request and limit: a gunicorn worker with Superset loaded takes
/// about 400 MiB.
pub const DEFAULT_MEMORY_LIMIT: &str = "1Gi";
/// Default time a web server gets to finish requests before it is killed.
pub const DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT: &str = "2m";
/// Default gunicorn workers: one process per pod; scale with replicas.
pub const DEFAULT_WORKERS: u16 = 1;
/// Default threads per worker, the image's own `run-server.sh` value.
pub const DEFAULT_THREADS: u16 = 20;

/// Settings of the web servers of a role or role group.
///
/// Product defaults: CPU 250m to 1, memory 1Gi, shutdown 2m, 1 gunicorn worker with
/// 20 threads.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SupersetConfig {
    /// CPU and memory of each web server.
    #[serde(default)]
    pub resources: Resources<NoStorage>,
    /// Time the web server gets to finish its requests before it is killed, such as
    /// `2m`; the pod's `terminationGracePeriodSeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graceful_shutdown_timeout: Option<String>,
    /// gunicorn worker processes per pod. Defaults to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<u16>,
    /// Threads per gunicorn worker. Defaults to 20.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u16>,
}

merge_struct!(SupersetConfig {
    resources,
    graceful_shutdown_timeout,
    workers,
    threads,
});

strata_model::common_settings!(SupersetConfig, NoStorage);

impl SupersetConfig {
    /// The lowest layer of the merge; after merging every field is set.
    pub fn product_defaults() -> Self {
        let quantity = |value: &str| Some(Quantity(value.to_owned()));
        Self {
            resources: Resources {
                cpu: CpuResources {
                    min: quantity(DEFAULT_CPU_MIN),
                    max: quantity(DEFAULT_CPU_MAX),
                },
                memory: MemoryResources {
                    limit: quantity(DEFAULT_MEMORY_LIMIT),
                },
                storage: NoStorage {},
            },
            graceful_shutdown_timeout: Some(DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT.to_owned()),
            workers: Some(DEFAULT_WORKERS),
            threads: Some(DEFAULT_THREADS),
        }
    }
}

/// `configOverrides`: one field per file.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SupersetConfigOverrides {
    /// Assignments of `superset_config.py`: a Python identifier to one Python
    /// expression (`"ROW_LIMIT": "10000"`, `"FEATURE_FLAGS": "{'ALERT_REPORTS': True}"`),
    /// written after the operator's own, so they win.
    #[serde(
        rename = "superset_config.py",
        default,
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub superset_config_py: FileOverrides,
}

merge_struct!(SupersetConfigOverrides { superset_config_py });
