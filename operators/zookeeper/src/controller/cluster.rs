//! The ZookeeperCluster controller: the five pipeline steps, in order.

use std::sync::Arc;

use kube::ResourceExt;
use kube::runtime::controller::Action;
use strata_operator::controller::Context;
use strata_operator::error::ReconcileError;

use crate::build::build;
use crate::crd::ZookeeperCluster;
use crate::validate::ValidatedCluster;

/// What the cluster controller needs beyond the shared context.
#[derive(Clone, Debug)]
pub struct ClusterContext {
    /// The cluster's DNS domain, for pod FQDNs in `zoo.cfg` and the
    /// discovery connection string.
    pub cluster_domain: String,
}

/// Reconciles one ZookeeperCluster.
///
/// 1. Dereference: nothing; a ZooKeeper cluster references no other object.
/// 2. Validate: the spec becomes a merged, checked model, or an InvalidSpec error.
/// 3. Build: pure functions turn the model into desired objects.
/// 4. Apply (nothing while paused, workloads at zero while stopped) and prune.
/// 5. Report: conditions from the watched StatefulSets and pods, written on change.
pub async fn reconcile(
    cluster: Arc<ZookeeperCluster>,
    context: Arc<Context<ClusterContext>>,
) -> Result<Action, ReconcileError> {
    let operation = cluster.spec.cluster_operation.state(cluster.annotations());
    let applied = async {
        let validated = ValidatedCluster::new(&cluster, &context.extra.cluster_domain)?;
        let prepared = build(&validated);
        context
            .apply_prepared(cluster.as_ref(), &operation, prepared)
            .await
    }
    .await;
    context.report(cluster.as_ref(), &operation, applied).await
}
