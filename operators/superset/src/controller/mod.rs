//! The SupersetCluster controller and how it is wired.

pub mod cluster;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use strata_operator::cache::ChildKind;
use strata_operator::controller::{ControllerSpec, OperatorRuntime, run_controller};
use strata_operator::definition::ControllerDef;
use strata_operator::rbac::OperatorRegistration;

use self::cluster::ClusterContext;
use crate::crd::SupersetCluster;

/// Kinds the controller creates.
pub fn child_kinds() -> Vec<ChildKind> {
    let mut kinds = ChildKind::role_group_cluster_kinds();
    kinds.push(ChildKind::of::<Secret>());
    // The web UI's Ingress (`clusterConfig.ingress`).
    kinds.push(ChildKind::of::<k8s_openapi::api::networking::v1::Ingress>());
    // The web UI's HTTPRoute (`clusterConfig.httpRoute`), where the cluster serves the
    // Gateway API.
    kinds.push(ChildKind::of::<strata_model::http_route::HttpRoute>());
    kinds
}

/// The cluster controller: SupersetClusters with their children and pods, reading the
/// key names (never the values) of the Secrets each cluster names, and the ConfigMap
/// of the metadata database's CA.
pub fn cluster_controller() -> ControllerDef<SupersetCluster> {
    ControllerDef::new(ControllerSpec {
        name: "supersetcluster",
        child_kinds: child_kinds(),
        watch_pods: true,
        restarts_pods: false,
    })
    .reading_secret_keys(cluster::secret_references)
    .reading::<ConfigMap>(cluster::config_map_references)
}

/// The controller as the Helm chart's RBAC rules see it.
pub fn registration() -> OperatorRegistration {
    OperatorRegistration {
        controllers: vec![cluster_controller().registration()],
    }
}

/// Runs the controller until the runtime shuts down.
pub async fn run(runtime: OperatorRuntime) {
    let context = ClusterContext {
        cluster_domain: runtime.cluster_domain.clone(),
    };
    run_with(runtime, context).await;
}

/// Runs the controller with `context`, as tests and the benchmark do.
pub async fn run_with(runtime: OperatorRuntime, context: ClusterContext) {
    run_controller(&runtime, &cluster_controller(), context, cluster::reconcile).await;
}
