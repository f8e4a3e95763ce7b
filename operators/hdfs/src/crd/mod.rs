//! The custom resource of the HDFS operator: `HdfsCluster`, a highly available HDFS
//! namespace with namenodes, journalnodes and datanodes.

pub mod config;
pub mod exposure;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata_model::cluster_operation::ClusterOperation;
use strata_model::image::ProductImage;
use strata_model::role::{GenericRoleConfig, Role};
use strata_status::ClusterStatus;

/// The status of an `HdfsCluster`: the shared conditions and versions, and the format
/// state.
pub type HdfsClusterStatus = ClusterStatus<HdfsFormatStatus>;

/// The format state of the namespace.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct HdfsFormatStatus {
    /// The namespace's cluster ID, as a namenode reported it once the namespace was
    /// formatted; never guessed. While it is set, no namenode formats a new namespace:
    /// one that lost its volume bootstraps from the others. Absent until the first
    /// namenode serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_id: Option<String>,
    /// The uid and gid the pods run as, recorded with the cluster's first StatefulSets:
    /// the files on the volumes are theirs. Kept across product versions, though the
    /// image's `hadoop` user moves from 1000:100 to 1001:1001 at 3.5, because a datanode
    /// refuses a data directory whose mode it cannot set, and only the owner can.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_user: Option<PodUser>,
}

/// A uid and a gid.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PodUser {
    /// `runAsUser`.
    pub uid: i64,
    /// `runAsGroup` and `fsGroup`.
    pub gid: i64,
}

pub use self::config::{HdfsConfig, HdfsConfigOverrides, HdfsRole};

/// API group of the kind.
pub const GROUP: &str = "hdfs.strata.dev";
/// Product name: `app.kubernetes.io/name` of every object.
pub const APP_NAME: &str = "hdfs";
/// The operator's name: `app.kubernetes.io/managed-by` and the field manager.
pub const OPERATOR_NAME: &str = "hdfs-operator";
/// Repository of the upstream image; the tag is the product version. Fully qualified,
/// because CRI-O with short-name mode `enforcing` refuses short names.
pub const UPSTREAM_IMAGE_REPOSITORY: &str = "docker.io/apache/hadoop";
/// Product version run when `spec.image.productVersion` is absent: the newest 3.4
/// release of the upstream image.
pub const DEFAULT_PRODUCT_VERSION: &str = "3.4.2";
/// Default `dfs.replication`, Hadoop's own.
pub const DEFAULT_DFS_REPLICATION: u16 = 3;

/// One role of the cluster, with the shared role shape and HDFS's settings.
pub type HdfsRoleSpec = Role<HdfsConfig, GenericRoleConfig, HdfsConfigOverrides>;

/// An HDFS namespace: two or more namenodes in an HA pair managed by ZKFC, a quorum of
/// journalnodes holding the shared edit log, and datanodes holding the blocks.
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[kube(
    group = "hdfs.strata.dev",
    version = "v1alpha1",
    kind = "HdfsCluster",
    plural = "hdfsclusters",
    shortname = "hdfs",
    namespaced,
    status = "HdfsClusterStatus",
    derive = "PartialEq",
    doc = "An HDFS cluster managed by the Strata HDFS operator.",
    printcolumn = r#"{"name":"Available","type":"string","jsonPath":".status.conditions[?(@.type==\"Available\")].status"}"#,
    printcolumn = r#"{"name":"Degraded","type":"string","jsonPath":".status.conditions[?(@.type==\"Degraded\")].status"}"#,
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".status.deployedProductVersion"}"#,
    printcolumn = r#"{"name":"Cluster ID","type":"string","priority":1,"jsonPath":".status.clusterId"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct HdfsClusterSpec {
    /// The Hadoop version and image to run. Defaults to the upstream `apache/hadoop`
    /// image in version 3.4.2.
    #[serde(default)]
    pub image: ProductImage,

    /// Pause reconciliation or stop the cluster (scale to zero, keeping the data).
    #[serde(default)]
    pub cluster_operation: ClusterOperation,

    /// Settings of the whole cluster.
    pub cluster_config: HdfsClusterConfig,

    /// The namenodes: two for high availability (one active, one standby).
    pub name_nodes: HdfsRoleSpec,

    /// The journalnodes holding the shared edit log: three, or another odd number.
    pub journal_nodes: HdfsRoleSpec,

    /// The datanodes holding the blocks.
    pub data_nodes: HdfsRoleSpec,
}

/// `spec.clusterConfig`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HdfsClusterConfig {
    /// Name of the discovery ConfigMap of a `ZookeeperZnode` in the cluster's namespace.
    /// Its `ZOOKEEPER` key (hosts and chroot) becomes `ha.zookeeper.quorum`, where the
    /// failover controllers elect the active namenode. A change to it rolls the
    /// namenodes.
    pub zookeeper_config_map_name: String,

    /// `dfs.replication`: how many datanodes hold each block. Defaults to 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub dfs_replication: Option<u16>,

    /// What a Prometheus Operator in the cluster gets: a ServiceMonitor that scrapes
    /// every daemon's `/prom`, and a PrometheusRule with HDFS's alerts
    /// (docs/monitoring.md). Both need the Prometheus Operator's CRDs.
    #[serde(
        default,
        skip_serializing_if = "strata_model::monitoring::Monitoring::is_default"
    )]
    pub monitoring: strata_model::monitoring::Monitoring,

    /// How each namenode's web UI (HTTP, port 9870) is reached from outside the
    /// cluster: the type of a Service `<namenode pod>-http` per namenode, with its
    /// annotations and source ranges. Each namenode gets its own, not one for all:
    /// a Service over every namenode would send half the requests to the standby,
    /// whose UI shows nothing of the namespace's files. Only the HTTP port is exposed;
    /// RPC clients outside the cluster would also need every datanode, which no
    /// Service gives. The discovery ConfigMap publishes each namenode's address once
    /// its Service has one (docs/hdfs.md).
    #[serde(
        default,
        skip_serializing_if = "strata_model::exposure::ServiceExposure::is_default"
    )]
    pub name_node_http_service: strata_model::exposure::ServiceExposure,

    /// An Ingress per namenode for its web UI, each at its own host name under
    /// `domain` (`<namenode pod>.<domain>`). The discovery ConfigMap publishes each
    /// namenode's URL once its Ingress has an address. The HTTP port also serves
    /// WebHDFS, which Hadoop 3.4 cannot turn off (docs/hdfs.md): restrict who reaches
    /// it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_node_ingress: Option<exposure::NameNodeIngress>,
}

impl HdfsClusterSpec {
    /// The role's spec.
    pub fn role(&self, role: HdfsRole) -> &HdfsRoleSpec {
        match role {
            HdfsRole::NameNode => &self.name_nodes,
            HdfsRole::JournalNode => &self.journal_nodes,
            HdfsRole::DataNode => &self.data_nodes,
        }
    }
}

impl strata_operator::pipeline::Operated for HdfsCluster {
    fn cluster_operation(&self) -> &strata_model::cluster_operation::ClusterOperation {
        &self.spec.cluster_operation
    }
}

#[cfg(test)]
mod tests {
    use kube::CustomResourceExt;
    use pretty_assertions::assert_eq;
    use serde_json::{Value, json};

    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[test]
    fn crd_names_and_columns() -> TestResult {
        let crd = serde_json::to_value(HdfsCluster::crd())?;
        assert_eq!(crd["metadata"]["name"], "hdfsclusters.hdfs.strata.dev");
        assert_eq!(crd["spec"]["names"]["shortNames"], json!(["hdfs"]));
        let version = &crd["spec"]["versions"][0];
        assert_eq!(version["subresources"]["status"], json!({}));
        let columns: Vec<&Value> = version["additionalPrinterColumns"]
            .as_array()
            .map(|columns| columns.iter().map(|column| &column["name"]).collect())
            .unwrap_or_default();
        assert_eq!(
            columns,
            ["Available", "Degraded", "Version", "Cluster ID", "Age"]
        );
        Ok(())
    }

    #[test]
    fn minimal_spec_deserialises_with_defaults() -> TestResult {
        let spec: HdfsClusterSpec = serde_json::from_value(json!({
            "clusterConfig": {"zookeeperConfigMapName": "hdfs-znode"},
            "nameNodes": {"roleGroups": {"default": {"replicas": 2}}},
            "journalNodes": {"roleGroups": {"default": {"replicas": 3}}},
            "dataNodes": {"roleGroups": {"default": {"replicas": 3}}}
        }))?;
        assert_eq!(spec.image, ProductImage::default());
        assert_eq!(spec.cluster_config.dfs_replication, None);
        assert_eq!(spec.role(HdfsRole::DataNode).role_groups.len(), 1);
        Ok(())
    }
}
