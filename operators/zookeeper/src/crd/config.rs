//! `spec.servers.config`: the per-role-group ZooKeeper settings users may set at role or
//! role group level, and the product defaults that fill whatever neither level sets.
//!
//! Every field is optional so that [`Merge`](strata_model::merge::Merge) can resolve
//! product default < role < role group field by field. Nested groups (`resources`, `cpu`,
//! ...) are plain structs rather than `Option`s, so a role group setting only
//! `resources.cpu.max` keeps the role's `resources.memory.limit`.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata_model::merge_struct;
use strata_model::resources::{CpuResources, MemoryResources, PvcResources, Resources};
use strata_model::role::FileOverrides;

/// Default `myidOffset`: ZooKeeper server ids start at 1.
pub const DEFAULT_MYID_OFFSET: u32 = 1;
/// Default CPU request: enough for an idle ensemble member.
pub const DEFAULT_CPU_MIN: &str = "250m";
/// Default CPU limit: one core covers request processing and snapshotting bursts.
pub const DEFAULT_CPU_MAX: &str = "1";
/// Default memory request and limit; the heap is derived from it.
pub const DEFAULT_MEMORY_LIMIT: &str = "1Gi";
/// Default size of the data volume holding snapshots and transaction logs.
pub const DEFAULT_STORAGE_CAPACITY: &str = "1Gi";
/// Default `tickTime` in milliseconds (ZooKeeper's own default).
pub const DEFAULT_TICK_TIME_MS: u32 = 2000;
/// Default `initLimit` in ticks: 20 s for a follower to connect and fetch the leader's
/// snapshot, ZooKeeper's own sample value. A new server joining a grown ensemble must
/// load the whole data tree within it, from network storage in most clusters.
pub const DEFAULT_INIT_LIMIT: u32 = 10;
/// Default `syncLimit` in ticks: a follower may lag 10 s behind the leader before it is
/// dropped, ZooKeeper's own sample value.
pub const DEFAULT_SYNC_LIMIT: u32 = 5;
/// Default time ZooKeeper gets between SIGTERM and SIGKILL.
pub const DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT: &str = "2m";

/// Settings of the ZooKeeper servers of a role or role group.
///
/// Product defaults (see [`ZookeeperConfig::product_defaults`]): CPU 250m to 1, memory
/// 1Gi, storage 1Gi, `tickTime` 2000, `initLimit` 10, `syncLimit` 5, `myidOffset` 1,
/// `gracefulShutdownTimeout` 2m.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ZookeeperConfig {
    /// CPU, memory and storage of each server.
    #[serde(default, skip_serializing_if = "resources_are_empty")]
    pub resources: ZookeeperResources,

    /// ZooKeeper's basic time unit in milliseconds (`tickTime`). Defaults to 2000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick_time: Option<u32>,

    /// Ticks a follower may take to connect and sync to the leader (`initLimit`).
    /// Defaults to 10.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_limit: Option<u32>,

    /// Ticks a follower may fall behind the leader before it is dropped (`syncLimit`).
    /// Defaults to 5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_limit: Option<u32>,

    /// Server id (`myid`) of the role group's first Pod; Pod `n` gets `myidOffset + n`.
    /// Role groups must use non-overlapping ranges. Defaults to 1. Changing it for
    /// existing Pods makes them refuse to start, because their volumes hold the old id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub myid_offset: Option<u32>,

    /// Time ZooKeeper gets to shut down before it is killed, such as `2m`, `90s` or
    /// `1h30m`; it becomes the Pod's `terminationGracePeriodSeconds`. Defaults to `2m`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graceful_shutdown_timeout: Option<String>,

    /// `participant` (votes in the quorum) or `observer` (serves reads and forwards
    /// writes, but does not vote), for every server of the role group. Defaults to
    /// `participant`. It cannot change while the group has servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_type: Option<PeerType>,
}

/// What a server is in the ensemble.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum PeerType {
    /// A voting member.
    #[default]
    Participant,
    /// A non-voting member: it adds read capacity without slowing writes down.
    Observer,
}

merge_struct!(ZookeeperConfig {
    resources,
    tick_time,
    init_limit,
    sync_limit,
    myid_offset,
    graceful_shutdown_timeout,
    peer_type,
});

strata_model::common_settings!(ZookeeperConfig, ZookeeperStorage);

/// Whether nothing is set, so an empty object is left out of serialised specs.
fn resources_are_empty(resources: &ZookeeperResources) -> bool {
    resources.cpu.is_empty() && resources.memory.is_empty() && resources.storage.data.is_empty()
}

impl ZookeeperConfig {
    /// The lowest layer of the merge: what a server gets when neither the role nor the
    /// role group sets a field. After merging on top of it, every field is `Some`.
    pub fn product_defaults() -> Self {
        let quantity = |value: &str| Some(Quantity(value.to_owned()));
        Self {
            resources: ZookeeperResources {
                cpu: CpuResources {
                    min: quantity(DEFAULT_CPU_MIN),
                    max: quantity(DEFAULT_CPU_MAX),
                },
                memory: MemoryResources {
                    limit: quantity(DEFAULT_MEMORY_LIMIT),
                },
                storage: ZookeeperStorage {
                    data: PvcResources {
                        capacity: quantity(DEFAULT_STORAGE_CAPACITY),
                        storage_class: None,
                    },
                },
            },
            tick_time: Some(DEFAULT_TICK_TIME_MS),
            init_limit: Some(DEFAULT_INIT_LIMIT),
            sync_limit: Some(DEFAULT_SYNC_LIMIT),
            myid_offset: Some(DEFAULT_MYID_OFFSET),
            graceful_shutdown_timeout: Some(DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT.to_owned()),
            peer_type: Some(PeerType::Participant),
        }
    }
}

/// `configOverrides`: the files users may override, one field per file, so the CRD
/// schema names them and the API server refuses a file ZooKeeper does not have.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ZookeeperConfigOverrides {
    /// Properties of `zoo.cfg`; they win over the operator's, except the server list.
    #[serde(
        rename = "zoo.cfg",
        default,
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub zoo_cfg: FileOverrides,
    /// Log levels of `logback.xml`: logger name (`ROOT` for the root logger) to one of
    /// TRACE, DEBUG, INFO, WARN, ERROR or OFF.
    #[serde(
        rename = "logback.xml",
        default,
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub logback_xml: FileOverrides,
}

merge_struct!(ZookeeperConfigOverrides {
    zoo_cfg,
    logback_xml
});

/// Resources of one ZooKeeper server: the shared shape with ZooKeeper's one volume.
pub type ZookeeperResources = Resources<ZookeeperStorage>;

/// Persistent volumes of one server.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ZookeeperStorage {
    /// The `data` volume, mounted at `/data`, holding snapshots, transaction logs and
    /// `myid`.
    #[serde(default, skip_serializing_if = "PvcResources::is_empty")]
    pub data: PvcResources,
}

merge_struct!(ZookeeperStorage { data });

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use strata_model::merge::Merge;

    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[test]
    fn role_group_keeps_role_settings_it_does_not_override() -> TestResult {
        let role: ZookeeperConfig = serde_json::from_value(json!({
            "resources": {"memory": {"limit": "2Gi"}, "cpu": {"max": "2"}},
            "tickTime": 3000
        }))?;
        let mut group: ZookeeperConfig = serde_json::from_value(json!({
            "resources": {"cpu": {"max": 4}}
        }))?;
        group.merge_from(&role);
        group.merge_from(&ZookeeperConfig::product_defaults());
        assert_eq!(group.resources.cpu.max, Some(Quantity("4".to_owned())));
        assert_eq!(group.resources.cpu.min, Some(Quantity("250m".to_owned())));
        assert_eq!(
            group.resources.memory.limit,
            Some(Quantity("2Gi".to_owned()))
        );
        assert_eq!(group.tick_time, Some(3000));
        assert_eq!(group.sync_limit, Some(DEFAULT_SYNC_LIMIT));
        Ok(())
    }

    #[test]
    fn empty_config_serialises_as_an_empty_object() -> TestResult {
        assert_eq!(serde_json::to_value(ZookeeperConfig::default())?, json!({}));
        Ok(())
    }

    #[test]
    fn camel_case_round_trip() -> TestResult {
        let value = json!({
            "resources": {"storage": {"data": {"capacity": "5Gi", "storageClass": "fast"}}},
            "myidOffset": 10,
            "gracefulShutdownTimeout": "30s"
        });
        let config: ZookeeperConfig = serde_json::from_value(value.clone())?;
        assert_eq!(serde_json::to_value(&config)?, value);
        Ok(())
    }

    /// The documented defaults are the ones the operator uses: the reference in
    /// docs/zookeeper.md cannot drift from `product_defaults`.
    #[test]
    fn the_documented_defaults_are_the_product_defaults() {
        let docs = include_str!("../../../../docs/zookeeper.md");
        let documented = |key: &str| {
            docs.lines()
                .find_map(|line| line.trim().strip_prefix(&format!("{key}: ")))
                .and_then(|value| value.split_whitespace().next())
                .and_then(|value| value.parse::<u32>().ok())
        };
        let defaults = ZookeeperConfig::product_defaults();
        assert_eq!(documented("tickTime"), defaults.tick_time);
        assert_eq!(documented("initLimit"), defaults.init_limit);
        assert_eq!(documented("syncLimit"), defaults.sync_limit);
        assert_eq!(documented("myidOffset"), defaults.myid_offset);
    }
}
