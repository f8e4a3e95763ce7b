//! The cluster-scoped objects a fresh control plane gets before anything runs on it:
//! the default StorageClass that KWOK provisions, and the Nodes that KWOK plays.

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, PostParams};

use super::{ControlPlane, ControlPlaneError, KWOK_NODE_ANNOTATION, STORAGE_CLASS};

impl ControlPlane {
    pub(super) async fn create_storage_class(
        &self,
        client: &kube::Client,
    ) -> Result<(), ControlPlaneError> {
        let class: StorageClass = serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": STORAGE_CLASS,
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}
            },
            "provisioner": "strata.dev/test-provisioner",
            "reclaimPolicy": "Retain",
            "volumeBindingMode": "Immediate"
        }))
        .map_err(|error| ControlPlaneError::Generate(format!("the StorageClass: {error}")))?;
        Api::<StorageClass>::all(client.clone())
            .create(&PostParams::default(), &class)
            .await
            .map_err(|source| ControlPlaneError::Api {
                doing: format!("creating the StorageClass {STORAGE_CLASS}"),
                source,
            })?;
        Ok(())
    }

    pub(super) async fn create_nodes(
        &self,
        client: &kube::Client,
    ) -> Result<(), ControlPlaneError> {
        let api: Api<Node> = Api::all(client.clone());
        for name in &self.nodes {
            let node: Node = serde_json::from_value(serde_json::json!({
                "metadata": {
                    "name": name,
                    "annotations": {KWOK_NODE_ANNOTATION: "fake"},
                    "labels": {
                        "kubernetes.io/hostname": name,
                        "kubernetes.io/os": "linux",
                        "kubernetes.io/arch": "amd64",
                        "type": "kwok"
                    }
                }
            }))
            .map_err(|error| ControlPlaneError::Generate(format!("a Node: {error}")))?;
            api.create(&PostParams::default(), &node)
                .await
                .map_err(|source| ControlPlaneError::Api {
                    doing: format!("creating the Node {name}"),
                    source,
                })?;
        }
        Ok(())
    }
}
