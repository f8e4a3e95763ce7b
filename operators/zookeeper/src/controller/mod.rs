//! The operator's two controllers and how they are wired together.

pub mod cluster;
pub mod znode;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::ResourceExt;
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{WatchStreamExt, watcher};
use strata_operator::cache::ChildKind;
use strata_operator::controller::{ControllerSpec, OperatorRuntime, run_controller};
use strata_operator::rbac::{ControllerRegistration, OperatorRegistration};

use self::cluster::ClusterContext;
use self::znode::{ClientServiceAddress, EnsembleAddress, ZnodeContext};
use crate::crd::{ZookeeperCluster, ZookeeperZnode};

/// Kinds the cluster controller creates. The same list drives the watches,
/// the pruning and the Helm chart's RBAC rules.
pub fn cluster_child_kinds() -> Vec<ChildKind> {
    vec![
        ChildKind::of::<ConfigMap>(),
        ChildKind::of::<Service>(),
        ChildKind::of::<StatefulSet>(),
        ChildKind::of::<PodDisruptionBudget>(),
    ]
}

/// Kinds the ZNode controller creates.
pub fn znode_child_kinds() -> Vec<ChildKind> {
    vec![ChildKind::of::<ConfigMap>()]
}

/// The cluster controller's registration.
pub fn cluster_controller_spec() -> ControllerSpec {
    ControllerSpec {
        name: "zookeepercluster",
        child_kinds: cluster_child_kinds(),
        watch_pods: true,
    }
}

/// The ZNode controller's registration.
pub fn znode_controller_spec() -> ControllerSpec {
    ControllerSpec {
        name: "zookeeperznode",
        child_kinds: znode_child_kinds(),
        watch_pods: false,
    }
}

/// The cluster controller as [`run`] starts it: ZookeeperClusters with their
/// children and pods.
pub fn cluster_registration() -> ControllerRegistration {
    ControllerRegistration::of::<ZookeeperCluster>(cluster_controller_spec())
}

/// The ZNode controller as [`run`] starts it: it also follows clusters, and
/// keeps a finalizer until the znode path is removed.
pub fn znode_registration() -> ControllerRegistration {
    ControllerRegistration::of::<ZookeeperZnode>(znode_controller_spec())
        .watching::<ZookeeperCluster>()
        .with_finalizer()
}

/// Both controllers: what [`run`] starts and what the Helm chart's RBAC rules
/// are derived from, so the two cannot drift apart.
pub fn registration() -> OperatorRegistration {
    OperatorRegistration {
        controllers: vec![cluster_registration(), znode_registration()],
    }
}

/// Settings of a running operator that tests replace.
#[derive(Clone)]
pub struct RunOptions {
    /// The cluster's DNS domain.
    pub cluster_domain: String,
    /// How the ZNode controller reaches ensembles.
    pub ensemble_address: Arc<dyn EnsembleAddress>,
    /// Bound on every ZooKeeper operation.
    pub zookeeper_timeout: Duration,
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("cluster_domain", &self.cluster_domain)
            .field("zookeeper_timeout", &self.zookeeper_timeout)
            .finish_non_exhaustive()
    }
}

impl RunOptions {
    /// Options for a real cluster: the domain from `KUBERNETES_CLUSTER_DOMAIN`
    /// (default `cluster.local`), ensembles through their client Services.
    pub fn from_environment() -> Self {
        let cluster_domain = std::env::var("KUBERNETES_CLUSTER_DOMAIN")
            .ok()
            .filter(|domain| !domain.is_empty())
            .unwrap_or_else(|| crate::validate::DEFAULT_CLUSTER_DOMAIN.to_owned());
        Self {
            ensemble_address: Arc::new(ClientServiceAddress {
                cluster_domain: cluster_domain.clone(),
            }),
            cluster_domain,
            zookeeper_timeout: Duration::from_secs(10),
        }
    }
}

/// Runs both controllers of [`registration`] until the runtime shuts down.
pub async fn run(runtime: OperatorRuntime, options: RunOptions) {
    let cluster = cluster_registration();
    let znode = znode_registration();
    let (clusters, cluster_writer) = reflector::store::<ZookeeperCluster>();
    let cluster_changes = reflector::reflector(
        cluster_writer,
        watcher(
            runtime.api::<ZookeeperCluster>(),
            watcher::Config::default(),
        )
        .default_backoff(),
    )
    .applied_objects()
    .boxed();

    let cluster_controller = run_controller::<ZookeeperCluster, _, _, _, _>(
        &runtime,
        cluster.spec,
        ClusterContext {
            cluster_domain: options.cluster_domain.clone(),
        },
        |controller| controller,
        cluster::reconcile,
    );
    let znode_controller = run_controller::<ZookeeperZnode, _, _, _, _>(
        &runtime,
        znode.spec,
        ZnodeContext {
            clusters,
            address: options.ensemble_address.clone(),
            timeout: options.zookeeper_timeout,
        },
        |controller| {
            let znodes = controller.store();
            controller.watches_stream(cluster_changes, move |cluster: ZookeeperCluster| {
                let cluster_namespace = cluster.namespace().unwrap_or_default();
                znodes
                    .state()
                    .iter()
                    .filter(|znode| {
                        let own_namespace = znode.namespace().unwrap_or_default();
                        znode.spec.cluster_ref.name == cluster.name_any()
                            && znode.spec.cluster_ref.namespace_or(&own_namespace)
                                == cluster_namespace
                    })
                    .map(|znode| ObjectRef::from_obj(znode.as_ref()))
                    .collect::<Vec<_>>()
            })
        },
        znode::reconcile,
    );
    tokio::join!(cluster_controller, znode_controller);
}
