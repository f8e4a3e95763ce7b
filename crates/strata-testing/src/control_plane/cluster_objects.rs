//! The cluster-scoped objects a fresh control plane gets before anything runs on it
//! (the default StorageClass that KWOK provisions, and the Nodes that KWOK plays), and
//! identities a test creates on it.

use k8s_openapi::api::core::v1::{Node, ServiceAccount};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
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
            "volumeBindingMode": "WaitForFirstConsumer"
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

    /// A client for a new ServiceAccount `namespace/name` bound to `cluster-admin`: for
    /// an operator a test runs in its own process, whose requests the audit log must
    /// tell apart from the test's and KWOK's (both the admin). The charts' own roles
    /// are proven elsewhere (the sandbox, the operator-process tests).
    pub async fn cluster_admin_client(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<kube::Client, ControlPlaneError> {
        let admin = self.client().await?;
        let generate = |what: &str, error: serde_json::Error| {
            ControlPlaneError::Generate(format!("{what}: {error}"))
        };
        let account: ServiceAccount =
            serde_json::from_value(serde_json::json!({"metadata": {"name": name}}))
                .map_err(|error| generate("a ServiceAccount", error))?;
        Api::<ServiceAccount>::namespaced(admin.clone(), namespace)
            .create(&PostParams::default(), &account)
            .await
            .map_err(|source| ControlPlaneError::Api {
                doing: format!("creating the ServiceAccount {namespace}/{name}"),
                source,
            })?;
        let binding: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("{namespace}-{name}-cluster-admin")},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "cluster-admin"
            },
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]
        }))
        .map_err(|error| generate("a ClusterRoleBinding", error))?;
        Api::<ClusterRoleBinding>::all(admin)
            .create(&PostParams::default(), &binding)
            .await
            .map_err(|source| ControlPlaneError::Api {
                doing: format!("binding {namespace}/{name} to cluster-admin"),
                source,
            })?;
        let token = self.service_account_token(namespace, name).await?;
        self.client_with_token(&token).await
    }
}
