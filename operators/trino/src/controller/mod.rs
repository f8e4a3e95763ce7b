//! The operator's two controllers and how they are wired together.
//!
//! - The cluster controller reconciles `TrinoCluster`s and reads the `TrinoCatalog`s
//!   their label selectors pick.
//! - The catalog controller reconciles `TrinoCatalog`s: it checks the Secrets and
//!   ConfigMaps each one names (key names only for Secrets) and records which clusters
//!   select it. Its status is how the cluster controller learns that a catalog's
//!   references resolve: a Secret that appears changes the catalog's status, which
//!   requeues the clusters that select it.

pub mod catalog;
pub mod cluster;
pub mod security;
pub mod workers;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use strata_operator::cache::ChildKind;
use strata_operator::controller::{ControllerSpec, OperatorRuntime, run_controller};
use strata_operator::definition::ControllerDef;
use strata_operator::rbac::OperatorRegistration;

use self::cluster::ClusterContext;
use crate::crd::{TrinoCatalog, TrinoCluster};

/// Kinds the cluster controller creates.
pub fn child_kinds() -> Vec<ChildKind> {
    let mut kinds = ChildKind::role_group_cluster_kinds();
    kinds.push(ChildKind::of::<Secret>());
    // The web UI's Ingress (`clusterConfig.ingress`).
    kinds.push(ChildKind::of::<k8s_openapi::api::networking::v1::Ingress>());
    // The web UI's HTTPRoute and its BackendTLSPolicy (`clusterConfig.httpRoute`),
    // where the cluster serves the Gateway API.
    kinds.push(ChildKind::of::<strata_model::http_route::HttpRoute>());
    kinds.push(ChildKind::of::<strata_model::http_route::BackendTlsPolicy>());
    kinds
}

/// The cluster controller: TrinoClusters with their children and pods, the catalogs
/// each selects, the Secrets it names (key names only) and its rules ConfigMap.
pub fn cluster_controller() -> ControllerDef<TrinoCluster> {
    ControllerDef::new(ControllerSpec {
        name: "trinocluster",
        child_kinds: child_kinds(),
        watch_pods: true,
        restarts_pods: false,
    })
    .reading_changes_of::<TrinoCatalog>(cluster::catalog_selection, cluster::catalog_significance)
    .reading_secret_keys(cluster::secret_references)
    .reading::<ConfigMap>(cluster::config_map_references)
}

/// The catalog controller: it creates nothing, and reads the Secrets (key names only)
/// and ConfigMaps each catalog names and the clusters in its namespace.
pub fn catalog_controller() -> ControllerDef<TrinoCatalog> {
    ControllerDef::new(ControllerSpec {
        name: "trinocatalog",
        child_kinds: Vec::new(),
        watch_pods: false,
        restarts_pods: false,
    })
    .reading_secret_keys(catalog::secret_references)
    .reading::<ConfigMap>(catalog::config_map_references)
    .reading_changes_of::<TrinoCluster>(
        catalog::clusters_in_namespace,
        catalog::selector_significance,
    )
}

/// Both controllers as the Helm chart's RBAC rules see them.
pub fn registration() -> OperatorRegistration {
    OperatorRegistration {
        controllers: vec![
            cluster_controller().registration(),
            catalog_controller().registration(),
        ],
    }
}

/// Runs both controllers until the runtime shuts down.
pub async fn run(runtime: OperatorRuntime) {
    let context = ClusterContext::new(runtime.cluster_domain.clone());
    run_with(runtime, context).await;
}

/// Runs both controllers with `context`, as tests and the benchmark do.
pub async fn run_with(runtime: OperatorRuntime, context: ClusterContext) {
    let (clusters, catalogs) = (cluster_controller(), catalog_controller());
    tokio::join!(
        run_controller(&runtime, &clusters, context, cluster::reconcile),
        run_controller(&runtime, &catalogs, (), catalog::reconcile),
    );
}
