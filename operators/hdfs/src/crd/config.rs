//! `spec.<role>.config`: the settings users may set per role or role group, the product
//! defaults of each role, and the files users may override.
//!
//! Every field is optional so that [`Merge`](strata_model::merge::Merge) resolves
//! product default < role < role group field by field.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata_model::merge_struct;
use strata_model::resources::{CpuResources, MemoryResources, PvcResources, Resources};
use strata_model::role::FileOverrides;

/// The three roles of an HDFS cluster.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    strum::Display,
    strum::IntoStaticStr,
    strum::EnumIter,
)]
#[strum(serialize_all = "lowercase")]
pub enum HdfsRole {
    /// Holds the namespace; one active, the others standby.
    NameNode,
    /// Holds the shared edit log the namenodes write and read.
    JournalNode,
    /// Holds blocks.
    DataNode,
}

impl HdfsRole {
    /// The field of the spec that holds the role, for messages.
    pub fn spec_field(self) -> &'static str {
        match self {
            Self::NameNode => "nameNodes",
            Self::JournalNode => "journalNodes",
            Self::DataNode => "dataNodes",
        }
    }

    /// The `hdfs` subcommand that runs the role's daemon.
    pub fn daemon(self) -> &'static str {
        self.into()
    }
}

/// Settings of the pods of a role or role group.
///
/// Product defaults (see [`HdfsConfig::product_defaults`]): namenodes CPU 250m to 1,
/// memory 1Gi, storage 2Gi, shutdown 15m; journalnodes CPU 100m to 500m, memory 512Mi,
/// storage 1Gi, shutdown 15m; datanodes CPU 250m to 1, memory 1Gi, storage 10Gi,
/// shutdown 30m.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HdfsConfig {
    /// CPU, memory (the heap is three quarters of it) and the data volume of each pod.
    #[serde(default, skip_serializing_if = "resources_are_empty")]
    pub resources: HdfsResources,

    /// Time the daemon gets to shut down before it is killed, such as `15m` or `90s`;
    /// it becomes the Pod's `terminationGracePeriodSeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graceful_shutdown_timeout: Option<String>,
}

merge_struct!(HdfsConfig {
    resources,
    graceful_shutdown_timeout,
});

strata_model::common_settings!(HdfsConfig, HdfsStorage);

fn resources_are_empty(resources: &HdfsResources) -> bool {
    resources.cpu.is_empty() && resources.memory.is_empty() && resources.storage.data.is_empty()
}

/// One role's defaults, as the documentation's table lists them.
struct RoleDefaults {
    cpu_min: &'static str,
    cpu_max: &'static str,
    memory: &'static str,
    storage: &'static str,
    graceful_shutdown: &'static str,
}

const fn role_defaults(role: HdfsRole) -> RoleDefaults {
    match role {
        HdfsRole::NameNode => RoleDefaults {
            cpu_min: "250m",
            cpu_max: "1",
            memory: "1Gi",
            storage: "2Gi",
            graceful_shutdown: "15m",
        },
        HdfsRole::JournalNode => RoleDefaults {
            cpu_min: "100m",
            cpu_max: "500m",
            memory: "512Mi",
            storage: "1Gi",
            graceful_shutdown: "15m",
        },
        HdfsRole::DataNode => RoleDefaults {
            cpu_min: "250m",
            cpu_max: "1",
            memory: "1Gi",
            storage: "10Gi",
            graceful_shutdown: "30m",
        },
    }
}

impl HdfsConfig {
    /// The lowest layer of the merge for `role`. After merging on top of it, every field
    /// is set.
    pub fn product_defaults(role: HdfsRole) -> Self {
        let defaults = role_defaults(role);
        let quantity = |value: &str| Some(Quantity(value.to_owned()));
        Self {
            resources: HdfsResources {
                cpu: CpuResources {
                    min: quantity(defaults.cpu_min),
                    max: quantity(defaults.cpu_max),
                },
                memory: MemoryResources {
                    limit: quantity(defaults.memory),
                },
                storage: HdfsStorage {
                    data: PvcResources {
                        capacity: quantity(defaults.storage),
                        storage_class: None,
                    },
                },
            },
            graceful_shutdown_timeout: Some(defaults.graceful_shutdown.to_owned()),
        }
    }
}

/// Resources of one pod: the shared shape with one data volume.
pub type HdfsResources = Resources<HdfsStorage>;

/// Persistent volumes of one pod.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HdfsStorage {
    /// The `data` volume, mounted at `/data`: the name directory of a namenode, the
    /// edit log of a journalnode, the blocks of a datanode. Its size cannot change
    /// after the pods exist.
    #[serde(default, skip_serializing_if = "PvcResources::is_empty")]
    pub data: PvcResources,
}

merge_struct!(HdfsStorage { data });

/// `configOverrides`: one field per file, so the CRD schema names them and the API
/// server refuses a file HDFS does not have.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HdfsConfigOverrides {
    /// Properties of `core-site.xml`; they win over the operator's, except the ones
    /// that define the nameservice.
    #[serde(
        rename = "core-site.xml",
        default,
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub core_site_xml: FileOverrides,
    /// Properties of `hdfs-site.xml`; they win over the operator's, except the ones
    /// that define the nameservice, the directories and format safety.
    #[serde(
        rename = "hdfs-site.xml",
        default,
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub hdfs_site_xml: FileOverrides,
    /// Log levels of `log4j.properties`: logger name (`ROOT` for the root logger) to
    /// one of TRACE, DEBUG, INFO, WARN, ERROR or OFF.
    #[serde(
        rename = "log4j.properties",
        default,
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub log4j_properties: FileOverrides,
}

merge_struct!(HdfsConfigOverrides {
    core_site_xml,
    hdfs_site_xml,
    log4j_properties
});

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use rstest::rstest;
    use serde_json::json;
    use strata_model::merge::Merge;

    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[rstest]
    #[case::namenodes(HdfsRole::NameNode, "namenode", "nameNodes")]
    #[case::journalnodes(HdfsRole::JournalNode, "journalnode", "journalNodes")]
    #[case::datanodes(HdfsRole::DataNode, "datanode", "dataNodes")]
    fn role_names(#[case] role: HdfsRole, #[case] name: &str, #[case] field: &str) {
        assert_eq!(role.to_string(), name);
        assert_eq!(role.daemon(), name);
        assert_eq!(role.spec_field(), field);
    }

    #[test]
    fn role_group_keeps_role_settings_it_does_not_override() -> TestResult {
        let role: HdfsConfig = serde_json::from_value(json!({
            "resources": {"memory": {"limit": "4Gi"}},
            "gracefulShutdownTimeout": "5m"
        }))?;
        let mut group: HdfsConfig = serde_json::from_value(json!({
            "resources": {"storage": {"data": {"capacity": "100Gi"}}}
        }))?;
        group.merge_from(&role);
        group.merge_from(&HdfsConfig::product_defaults(HdfsRole::DataNode));
        assert_eq!(
            group.resources.storage.data.capacity,
            Some(Quantity("100Gi".to_owned()))
        );
        assert_eq!(
            group.resources.memory.limit,
            Some(Quantity("4Gi".to_owned()))
        );
        assert_eq!(group.resources.cpu.min, Some(Quantity("250m".to_owned())));
        assert_eq!(group.graceful_shutdown_timeout.as_deref(), Some("5m"));
        Ok(())
    }

    #[test]
    fn overrides_name_their_files() -> TestResult {
        let overrides: HdfsConfigOverrides = serde_json::from_value(json!({
            "hdfs-site.xml": {"dfs.blocksize": "256m"}
        }))?;
        assert_eq!(
            overrides
                .hdfs_site_xml
                .get("dfs.blocksize")
                .map(String::as_str),
            Some("256m")
        );
        assert!(
            serde_json::from_value::<HdfsConfigOverrides>(json!({"yarn-site.xml": {}})).is_err()
        );
        Ok(())
    }
}
