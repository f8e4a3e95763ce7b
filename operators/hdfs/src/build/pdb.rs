//! One PodDisruptionBudget per role (ADR030 option 1).

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use strata_model::pdb::defaults;

use crate::crd::HdfsRole;
use crate::validate::{ValidatedCluster, ValidatedRole};

/// `maxUnavailable` when the user sets none: one namenode (the other stays active), one
/// journalnode (the edit log keeps its majority), and for datanodes
/// `max(min(dfsReplication - 2, datanodes - 2), 1)`.
pub fn default_max_unavailable(role: HdfsRole, dfs_replication: u16, replicas: u16) -> u16 {
    match role {
        HdfsRole::NameNode => defaults::hdfs_namenodes(),
        HdfsRole::JournalNode => defaults::hdfs_journalnodes(),
        HdfsRole::DataNode => defaults::hdfs_datanodes(dfs_replication, replicas),
    }
}

/// `<hdfs>-<role>` spanning every role group of the role; `None` when disabled, so the
/// apply step prunes an existing one.
pub fn role_pdb(cluster: &ValidatedCluster, role: &ValidatedRole) -> Option<PodDisruptionBudget> {
    role.pdb(
        &cluster.identity.namespace,
        default_max_unavailable(role.role, cluster.dfs_replication, role.replicas()),
    )
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::namenodes_one_at_a_time(HdfsRole::NameNode, 3, 2, 1)]
    #[case::journalnodes_keep_their_majority(HdfsRole::JournalNode, 3, 5, 1)]
    #[case::datanodes_default_replication_small_cluster(HdfsRole::DataNode, 3, 3, 1)]
    #[case::datanodes_default_replication_large_cluster(HdfsRole::DataNode, 3, 20, 1)]
    #[case::datanodes_replication_five_of_ten(HdfsRole::DataNode, 5, 10, 3)]
    #[case::datanodes_bounded_by_cluster_size(HdfsRole::DataNode, 5, 4, 2)]
    #[case::datanodes_replication_one_still_drains(HdfsRole::DataNode, 1, 10, 1)]
    fn defaults(
        #[case] role: HdfsRole,
        #[case] dfs_replication: u16,
        #[case] replicas: u16,
        #[case] expected: u16,
    ) {
        assert_eq!(
            default_max_unavailable(role, dfs_replication, replicas),
            expected
        );
    }
}
