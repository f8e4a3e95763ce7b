//! The HdfsCluster controller and how it is wired.

pub mod cluster;
pub mod datanodes;
mod exposure;
pub mod journalnodes;
pub mod namenode_http;
pub mod namenodes;
pub mod removed_groups;

use k8s_openapi::api::core::v1::ConfigMap;
use strata_operator::cache::ChildKind;
use strata_operator::controller::{ControllerSpec, OperatorRuntime, run_controller};
use strata_operator::definition::ControllerDef;
use strata_operator::rbac::OperatorRegistration;

use self::cluster::ClusterContext;
use self::namenodes::NameNodeHttp;
use crate::crd::HdfsCluster;

/// Kinds the controller creates: watched, applied, pruned, and granted in the chart.
pub fn child_kinds() -> Vec<ChildKind> {
    let mut kinds = ChildKind::role_group_cluster_kinds();
    kinds.push(ChildKind::of::<k8s_openapi::api::core::v1::Secret>());
    // The namenodes' web UI Ingresses (`clusterConfig.nameNodeIngress`).
    kinds.push(ChildKind::of::<k8s_openapi::api::networking::v1::Ingress>());
    kinds
}

/// The cluster controller: HdfsClusters with their children and pods, reading the
/// ZNode discovery ConfigMap each cluster names, and the key names of the ZNode's
/// client certificate Secret.
pub fn cluster_controller() -> ControllerDef<HdfsCluster> {
    ControllerDef::new(ControllerSpec {
        name: "hdfscluster",
        child_kinds: child_kinds(),
        watch_pods: true,
        restarts_pods: true,
    })
    .reading::<ConfigMap>(cluster::zookeeper_reference)
    .reading_secret_keys(cluster::zookeeper_client_reference)
}

/// The controller as the Helm chart's RBAC rules see it.
pub fn registration() -> OperatorRegistration {
    OperatorRegistration {
        controllers: vec![cluster_controller().registration()],
    }
}

/// Runs the controller until the runtime shuts down, reaching namenodes at their pod
/// DNS names.
pub async fn run(runtime: OperatorRuntime) {
    let context = ClusterContext {
        cluster_domain: runtime.cluster_domain.clone(),
        namenodes: NameNodeHttp::default(),
        namenode_check: cluster::NAMENODE_CHECK,
    };
    run_with(runtime, context).await;
}

/// Runs the controller with `context`; tests point the namenode probe at loopback.
pub async fn run_with(runtime: OperatorRuntime, context: ClusterContext) {
    run_controller(&runtime, &cluster_controller(), context, cluster::reconcile).await;
}
