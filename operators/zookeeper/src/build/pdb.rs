//! The PodDisruptionBudget of the `server` role (ADR030 option 1).

use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use crate::validate::ValidatedCluster;

/// `<cluster>-server` spanning every role group, with `maxUnavailable` 1 unless the user
/// sets another value, so rolling node drains never take down more than one voter of the
/// quorum. `None` when the user disabled it; the apply step then prunes an existing one.
pub fn server_pdb(cluster: &ValidatedCluster) -> Option<PodDisruptionBudget> {
    cluster.servers.pdb(
        &cluster.identity.namespace,
        strata_model::pdb::defaults::zookeeper_servers(),
    )
}
