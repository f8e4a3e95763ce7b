//! `spec.coordinators.config` and `spec.workers.config`: the settings of the Trino
//! nodes of a role or role group, their product defaults, and the overrides per file.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata_model::merge_struct;
use strata_model::resources::{CpuResources, MemoryResources, NoStorage, Resources};
use strata_model::role::FileOverrides;

/// Default CPU request.
pub const DEFAULT_CPU_MIN: &str = "500m";
/// Default CPU limit.
pub const DEFAULT_CPU_MAX: &str = "2";
/// Default memory request and limit.
pub const DEFAULT_MEMORY_LIMIT: &str = "4Gi";
/// Default share of the memory limit given to the heap; Trino's deployment guide
/// advises 70 to 85 percent.
pub const DEFAULT_HEAP_PERCENT: u8 = 80;
/// Default `shutdown.grace-period` of workers: how long a worker that was told to shut
/// down keeps announcing itself before and after draining, so the coordinator stops
/// scheduling on it. Trino's own default is 2m; 30s is several discovery rounds.
pub const DEFAULT_SHUTDOWN_GRACE_PERIOD: &str = "30s";
/// Default time a worker gets to finish its running tasks once it drains: the
/// longest query the cluster is expected to run.
pub const DEFAULT_WORKER_GRACEFUL_SHUTDOWN_TIMEOUT: &str = "1h";
/// Default time a coordinator gets to stop; it cannot drain (Trino answers
/// "Cannot shutdown coordinator"), so this only lets the JVM exit cleanly.
pub const DEFAULT_COORDINATOR_GRACEFUL_SHUTDOWN_TIMEOUT: &str = "30s";

/// Settings of the Trino nodes of a role or role group.
///
/// Product defaults: CPU 500m to 2, memory 4Gi with 80% heap, Trino's memory limits,
/// workers drain for up to 1h with a 30s grace period, coordinators stop within 30s.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TrinoConfig {
    /// CPU and memory of each node.
    #[serde(default)]
    pub resources: Resources<NoStorage>,
    /// Share of the memory limit given to the JVM heap (`-Xmx`), in percent, 50 to 90.
    /// Defaults to 80. The heap always leaves 512 MiB of the limit for the JVM's own
    /// memory, so below 2.5Gi it is smaller than this share (768 MiB at 1280Mi).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heap_percent: Option<u8>,
    /// `query.max-memory` (coordinators): the most user memory one query may use over
    /// the whole cluster, such as `50Gi`. Trino's default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_max_memory: Option<Quantity>,
    /// `query.max-memory-per-node`: the most user memory one query may use on one
    /// node, such as `1Gi`. With Trino's heap headroom (30% of the heap) it must fit in
    /// the heap. Trino's default (30% of the heap) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_max_memory_per_node: Option<Quantity>,
    /// `shutdown.grace-period` (workers), such as `30s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shutdown_grace_period: Option<String>,
    /// Time a node gets to finish its work before it is killed, such as `1h`: for
    /// workers, the longest query to wait for while draining.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graceful_shutdown_timeout: Option<String>,
}

merge_struct!(TrinoConfig {
    resources,
    heap_percent,
    query_max_memory,
    query_max_memory_per_node,
    shutdown_grace_period,
    graceful_shutdown_timeout,
});

strata_model::common_settings!(TrinoConfig, NoStorage);

impl TrinoConfig {
    /// The lowest layer of the merge for a role; after merging, every field but the
    /// two memory limits (Trino's defaults apply when absent) is set.
    pub fn product_defaults(graceful_shutdown_timeout: &str) -> Self {
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
            heap_percent: Some(DEFAULT_HEAP_PERCENT),
            query_max_memory: None,
            query_max_memory_per_node: None,
            shutdown_grace_period: Some(DEFAULT_SHUTDOWN_GRACE_PERIOD.to_owned()),
            graceful_shutdown_timeout: Some(graceful_shutdown_timeout.to_owned()),
        }
    }
}

/// `configOverrides`: one field per file Trino reads. Properties files take
/// `key: value`; `jvm.config` takes one JVM option per key, written as the key alone
/// when the value is empty and as `key=value` otherwise (`-Dfoo: bar` is `-Dfoo=bar`).
/// Every override wins over the operator's value, except the keys the operator owns
/// (listed in the docs), which are refused.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TrinoConfigOverrides {
    /// `config.properties`.
    #[serde(
        rename = "config.properties",
        default,
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub config_properties: FileOverrides,
    /// `node.properties`.
    #[serde(
        rename = "node.properties",
        default,
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub node_properties: FileOverrides,
    /// `jvm.config`.
    #[serde(
        rename = "jvm.config",
        default,
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub jvm_config: FileOverrides,
    /// `log.properties`: logger name to level.
    #[serde(
        rename = "log.properties",
        default,
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub log_properties: FileOverrides,
}

merge_struct!(TrinoConfigOverrides {
    config_properties,
    node_properties,
    jvm_config,
    log_properties,
});
