//! The custom resources of the ZooKeeper operator: `ZookeeperCluster` (an ensemble) and
//! `ZookeeperZnode` (a path reserved in an ensemble for one client application).

pub mod config;
pub mod tls;
pub mod znode;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata_model::cluster_operation::ClusterOperation;
use strata_model::image::ProductImage;
use strata_model::role::{GenericRoleConfig, Role};
use strata_status::ClusterStatus;

pub use self::config::{ZookeeperConfig, ZookeeperConfigOverrides};
pub use self::tls::{ClientAuthentication, ZookeeperClusterConfig, ZookeeperTls};
pub use self::znode::{ClusterRef, ZnodeStatus, ZookeeperZnode, ZookeeperZnodeSpec};

/// API group of both kinds.
pub const GROUP: &str = "zookeeper.strata.dev";
/// Product name: `app.kubernetes.io/name` of every object.
pub const APP_NAME: &str = "zookeeper";
/// The operator's name: `app.kubernetes.io/managed-by` and the field manager.
pub const OPERATOR_NAME: &str = "zookeeper-operator";
/// The one role of a ZooKeeper cluster.
pub const SERVER_ROLE: &str = "server";
/// Repository of the official image; the tag is the product version. Fully
/// qualified, because CRI-O with short-name mode `enforcing` refuses short
/// names such as `zookeeper`.
pub const UPSTREAM_IMAGE_REPOSITORY: &str = "docker.io/library/zookeeper";
/// Product version run when `spec.image.productVersion` is absent: the newest 3.9 release
/// the official image publishes.
pub const DEFAULT_PRODUCT_VERSION: &str = "3.9.5";

/// A ZooKeeper ensemble: one StatefulSet per role group of `servers`, all of them members
/// of one quorum.
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[kube(
    group = "zookeeper.strata.dev",
    version = "v1alpha1",
    kind = "ZookeeperCluster",
    plural = "zookeeperclusters",
    shortname = "zk",
    namespaced,
    status = "ClusterStatus",
    derive = "PartialEq",
    doc = "A ZooKeeper ensemble managed by the Strata ZooKeeper operator.",
    printcolumn = r#"{"name":"Available","type":"string","jsonPath":".status.conditions[?(@.type==\"Available\")].status"}"#,
    printcolumn = r#"{"name":"Degraded","type":"string","jsonPath":".status.conditions[?(@.type==\"Degraded\")].status"}"#,
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".status.deployedProductVersion"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ZookeeperClusterSpec {
    /// The ZooKeeper version and image to run. Defaults to the official `zookeeper` image
    /// in version 3.9.5.
    #[serde(default)]
    pub image: ProductImage,

    /// Pause reconciliation or stop the cluster (scale to zero, keeping the data).
    #[serde(default)]
    pub cluster_operation: ClusterOperation,

    /// Settings of the whole ensemble: TLS.
    #[serde(default)]
    pub cluster_config: ZookeeperClusterConfig,

    /// The ZooKeeper servers. Every replica of every role group is a voting member of the
    /// ensemble.
    pub servers: Role<ZookeeperConfig, GenericRoleConfig, ZookeeperConfigOverrides>,
}

impl strata_operator::pipeline::Operated for ZookeeperCluster {
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
    fn cluster_crd_names_and_columns() -> TestResult {
        let crd = serde_json::to_value(ZookeeperCluster::crd())?;
        assert_eq!(
            crd["metadata"]["name"],
            "zookeeperclusters.zookeeper.strata.dev"
        );
        assert_eq!(crd["spec"]["names"]["shortNames"], json!(["zk"]));
        assert_eq!(crd["spec"]["scope"], "Namespaced");
        let version = &crd["spec"]["versions"][0];
        assert_eq!(version["subresources"]["status"], json!({}));
        let columns: Vec<&Value> = version["additionalPrinterColumns"]
            .as_array()
            .map(|columns| columns.iter().map(|column| &column["jsonPath"]).collect())
            .unwrap_or_default();
        assert_eq!(
            columns,
            [
                ".status.conditions[?(@.type==\"Available\")].status",
                ".status.conditions[?(@.type==\"Degraded\")].status",
                ".status.deployedProductVersion",
                ".metadata.creationTimestamp"
            ]
        );
        Ok(())
    }

    #[test]
    fn minimal_spec_deserialises_with_defaults() -> TestResult {
        let spec: ZookeeperClusterSpec =
            serde_json::from_value(json!({"servers": {"roleGroups": {"default": {}}}}))?;
        assert_eq!(spec.image, ProductImage::default());
        assert!(!spec.cluster_operation.stopped);
        assert_eq!(spec.servers.role_groups.len(), 1);
        Ok(())
    }
}
