//! Role groups that left the spec while their StatefulSet still runs pods.
//!
//! Pruning is how the operator removes what the spec no longer names. For two HDFS roles
//! that loses more than pods, so the removal (or a rename, which is a removal and an
//! addition) is refused while the group runs any:
//! - **datanodes** would leave without a decommission, and a block whose every replica
//!   is on them would be lost; lowering the group's replicas to 0 first decommissions
//!   them, then the group can go;
//! - **namenodes** would be stopped, the active one possibly among them, while the
//!   other daemons are configured for the namenode IDs they had.
//!
//! Journalnode groups are guarded with the rest of the quorum rules (`crate::journal`).

use strata_operator::error::ReconcileError;
use strata_operator::roll::StatefulSetPods;

use super::datanodes::runs_role;
use crate::crd::HdfsRole;
use crate::validate::ValidatedCluster;

/// Refuses, with the first guarded role's reason, to prune a namenode or datanode role
/// group whose StatefulSet still runs pods.
pub fn refuse_removed_groups(
    validated: &ValidatedCluster,
    running: &[StatefulSetPods],
) -> Result<(), ReconcileError> {
    for guarded in Guarded::ALL {
        let removed = removed_groups(validated, running, guarded.role());
        if !removed.is_empty() {
            return Err(guarded.refusal(&removed.join(", ")));
        }
    }
    Ok(())
}

/// The roles whose groups this module guards.
#[derive(Clone, Copy)]
enum Guarded {
    NameNodes,
    DataNodes,
}

impl Guarded {
    const ALL: [Self; 2] = [Self::NameNodes, Self::DataNodes];

    fn role(self) -> HdfsRole {
        match self {
            Self::NameNodes => HdfsRole::NameNode,
            Self::DataNodes => HdfsRole::DataNode,
        }
    }

    fn refusal(self, removed: &str) -> ReconcileError {
        match self {
            Self::NameNodes => ReconcileError::invalid_spec(
                "NameNodeGroupRemoved",
                format!(
                    "the namenode role group(s) of {removed} left the spec while they still \
                     run namenodes; pruning them would stop running namenodes, possibly the \
                     active one, while the journalnodes, datanodes and clients are configured \
                     for their namenode IDs. Put the group(s) back"
                ),
            ),
            Self::DataNodes => ReconcileError::invalid_spec(
                "DataNodeGroupRemoved",
                format!(
                    "the datanode role group(s) of {removed} left the spec while they still \
                     run datanodes; removing them now would delete their blocks without a \
                     decommission. Put the group(s) back with replicas: 0, wait until \
                     Progressing is no longer DecommissioningDataNodes, then remove them"
                ),
            ),
        }
    }
}

/// The StatefulSets of `role` with replicas that no group of the spec names.
fn removed_groups(
    validated: &ValidatedCluster,
    running: &[StatefulSetPods],
    role: HdfsRole,
) -> Vec<String> {
    let kept = |name: &str| {
        validated.role(role).is_some_and(|role| {
            role.groups
                .iter()
                .any(|group| group.name.object_name() == name)
        })
    };
    running
        .iter()
        .filter(|set| runs_role(set, role))
        .filter(|set| set.stateful_set.spec.replicas.unwrap_or(1) > 0 && !kept(&set.name()))
        .map(StatefulSetPods::name)
        .collect()
}
