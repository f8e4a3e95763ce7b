//! The operator's two controllers and how they are wired together.

pub mod certificates;
pub mod client_tls;
pub mod cluster;
pub mod leader;
pub mod znode;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use strata_operator::cache::ChildKind;
use strata_operator::controller::{ControllerSpec, OperatorRuntime, run_controller};
use strata_operator::definition::ControllerDef;
use strata_operator::rbac::OperatorRegistration;

use self::cluster::ClusterContext;
use self::leader::{PodDnsName, ServerAddress};
use self::znode::{ClientServiceAddress, EnsembleAddress, ZnodeContext};
use crate::crd::{ZookeeperCluster, ZookeeperZnode};

/// Kinds the cluster controller creates, the TLS Secrets among them. The same list
/// drives the watches, the pruning and the Helm chart's RBAC rules.
pub fn cluster_child_kinds() -> Vec<ChildKind> {
    let mut kinds = ChildKind::role_group_cluster_kinds();
    kinds.push(ChildKind::of::<Secret>());
    kinds
}

/// Kinds the ZNode controller creates.
pub fn znode_child_kinds() -> Vec<ChildKind> {
    vec![ChildKind::of::<ConfigMap>(), ChildKind::of::<Secret>()]
}

/// The cluster controller: ZookeeperClusters with their children and pods, watching the
/// key names of the TLS Secret each cluster names; the certificate step alone reads
/// Secrets' values.
pub fn cluster_controller() -> ControllerDef<ZookeeperCluster> {
    ControllerDef::new(ControllerSpec {
        name: "zookeepercluster",
        child_kinds: cluster_child_kinds(),
        watch_pods: true,
        restarts_pods: true,
    })
    .reading_secret_keys(cluster::secret_references)
}

/// The ZNode controller: it reads the cluster each ZNode names, and keeps a
/// finalizer until the znode path is removed.
pub fn znode_controller() -> ControllerDef<ZookeeperZnode> {
    ControllerDef::new(ControllerSpec {
        name: "zookeeperznode",
        child_kinds: znode_child_kinds(),
        watch_pods: false,
        restarts_pods: false,
    })
    .reading::<ZookeeperCluster>(znode::cluster_reference)
    .with_finalizer(znode::FINALIZER)
}

/// Both controllers as the Helm chart's RBAC rules see them: derived from the
/// same definitions [`run`] starts, so the two cannot drift apart.
pub fn registration() -> OperatorRegistration {
    OperatorRegistration {
        controllers: vec![
            cluster_controller().registration(),
            znode_controller().registration(),
        ],
    }
}

/// How often an Available ZNode checks its ensemble: one `exists` request over a
/// short session per ZNode and minute, so an outage shows on the ZNode within about a
/// minute even when the cluster's own status does not change (a network partition
/// between operator and ensemble, a server that is up but refuses sessions). Nothing is
/// written to Kubernetes unless the outcome changes.
pub const ZNODE_CHECK_PERIOD: Duration = Duration::from_secs(60);

/// Settings of a running operator that tests replace.
#[derive(Clone)]
pub struct RunOptions {
    /// The cluster's DNS domain.
    pub cluster_domain: String,
    /// How the ZNode controller reaches ensembles.
    pub ensemble_address: Arc<dyn EnsembleAddress>,
    /// Bound on every ZooKeeper operation.
    pub zookeeper_timeout: Duration,
    /// How often an Available ZNode checks that its path is still reachable.
    pub znode_check_period: Duration,
    /// How the cluster controller's leader lookup reaches each server.
    pub server_address: Arc<dyn ServerAddress>,
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
    /// Options for a real cluster: the runtime's cluster domain, ensembles
    /// through their client Services.
    pub fn for_runtime(runtime: &OperatorRuntime) -> Self {
        let cluster_domain = runtime.cluster_domain.clone();
        Self {
            ensemble_address: Arc::new(ClientServiceAddress {
                cluster_domain: cluster_domain.clone(),
            }),
            cluster_domain,
            zookeeper_timeout: Duration::from_secs(10),
            znode_check_period: ZNODE_CHECK_PERIOD,
            server_address: Arc::new(PodDnsName),
        }
    }
}

/// Runs both controllers until the runtime shuts down.
pub async fn run(runtime: OperatorRuntime, options: RunOptions) {
    let (clusters, znodes) = (cluster_controller(), znode_controller());
    let cluster_controller = run_controller(
        &runtime,
        &clusters,
        ClusterContext {
            cluster_domain: options.cluster_domain.clone(),
            server_address: options.server_address.clone(),
        },
        cluster::reconcile,
    );
    let znode_controller = run_controller(
        &runtime,
        &znodes,
        ZnodeContext {
            address: options.ensemble_address.clone(),
            timeout: options.zookeeper_timeout,
            check_period: options.znode_check_period,
        },
        znode::reconcile,
    );
    tokio::join!(cluster_controller, znode_controller);
}
