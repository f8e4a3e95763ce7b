//! `ZookeeperZnode`: a path in a ZooKeeper ensemble reserved for one client application.
//!
//! The controller creates the path (a chroot) in the referenced cluster and publishes a
//! discovery ConfigMap named after the ZNode, so applications such as HDFS connect with
//! their own chroot instead of sharing the ensemble's root.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata_status::ResourceStatus;

/// A znode (path) in a ZooKeeper ensemble, created by the operator and removed only when
/// this object is deleted.
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[kube(
    group = "zookeeper.strata.dev",
    version = "v1alpha1",
    kind = "ZookeeperZnode",
    plural = "zookeeperznodes",
    shortname = "znode",
    namespaced,
    status = "ZnodeStatus",
    derive = "PartialEq",
    doc = "A znode reserved in a ZooKeeper ensemble, with a discovery ConfigMap for clients.",
    printcolumn = r#"{"name":"Path","type":"string","jsonPath":".status.znodePath"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ZookeeperZnodeSpec {
    /// The `ZookeeperCluster` to create the znode in.
    pub cluster_ref: ClusterRef,
}

/// Reference to a `ZookeeperCluster`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterRef {
    /// Name of the `ZookeeperCluster`.
    pub name: String,
    /// Namespace of the `ZookeeperCluster`; defaults to the ZNode's own namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

impl ClusterRef {
    /// The namespace the cluster lives in, given the ZNode's own namespace.
    pub fn namespace_or<'a>(&'a self, znode_namespace: &'a str) -> &'a str {
        self.namespace.as_deref().unwrap_or(znode_namespace)
    }
}

/// Observed state of a `ZookeeperZnode`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ZnodeStatus {
    /// The path the operator created. Recorded once, so the ZNode keeps its path even if
    /// the naming scheme changes in a later operator release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub znode_path: Option<String>,
    /// Conditions and observed generation, as every sub-resource has them.
    #[serde(flatten)]
    pub resource: ResourceStatus,
}

#[cfg(test)]
mod tests {
    use kube::CustomResourceExt;
    use pretty_assertions::assert_eq;
    use rstest::rstest;
    use serde_json::json;

    use super::*;

    #[test]
    fn znode_crd_names() -> Result<(), serde_json::Error> {
        let crd = serde_json::to_value(ZookeeperZnode::crd())?;
        assert_eq!(
            crd["metadata"]["name"],
            "zookeeperznodes.zookeeper.strata.dev"
        );
        assert_eq!(crd["spec"]["names"]["shortNames"], json!(["znode"]));
        assert_eq!(
            crd["spec"]["versions"][0]["subresources"]["status"],
            json!({})
        );
        Ok(())
    }

    #[rstest]
    #[case::defaults_to_own_namespace(None, "apps")]
    #[case::explicit_namespace(Some("zk"), "zk")]
    fn cluster_namespace(#[case] namespace: Option<&str>, #[case] expected: &str) {
        let cluster_ref = ClusterRef {
            name: "simple-zk".to_owned(),
            namespace: namespace.map(str::to_owned),
        };
        assert_eq!(cluster_ref.namespace_or("apps"), expected);
    }
}
