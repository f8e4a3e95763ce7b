//! What a valid spec may still get wrong: layouts HDFS runs with, but not safely.

use strata_status::{Reason, SpecWarning};

use crate::crd::HdfsRole;
use crate::validate::ValidatedRole;

/// A setting that is allowed but unwise. The reason is the condition reason; the
/// message says what it costs and what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Warning {
    /// One namenode: no failover, every namenode restart is an outage.
    NoHighAvailability {
        /// Namenodes in the spec.
        namenodes: u16,
    },
    /// An even number, or fewer than three, journalnodes: the edit log tolerates no
    /// more failures than with one journalnode less.
    WeakJournalQuorum {
        /// Journalnodes in the spec.
        journalnodes: u16,
    },
    /// Fewer datanodes than `dfs.replication`: every block stays under-replicated.
    ReplicationAboveDataNodes {
        /// `dfs.replication`.
        dfs_replication: u16,
        /// Datanodes in the spec.
        datanodes: u16,
    },
}

impl Warning {
    /// The Warning condition's reason, checked at compile time.
    pub fn reason(&self) -> Reason {
        match self {
            Self::NoHighAvailability { .. } => strata_status::reason!("NoHighAvailability"),
            Self::WeakJournalQuorum { .. } => strata_status::reason!("WeakJournalQuorum"),
            Self::ReplicationAboveDataNodes { .. } => {
                strata_status::reason!("ReplicationAboveDataNodes")
            }
        }
    }

    /// The warning as the status step takes it.
    pub fn to_spec_warning(&self) -> SpecWarning {
        SpecWarning {
            reason: self.reason(),
            message: self.message(),
        }
    }

    /// What the warning costs and how to lift it.
    pub fn message(&self) -> String {
        match self {
            Self::NoHighAvailability { namenodes } => format!(
                "nameNodes has {namenodes} replica(s): without a standby namenode every \
                 namenode restart makes HDFS unavailable; run 2"
            ),
            Self::WeakJournalQuorum { journalnodes } => format!(
                "journalNodes has {journalnodes} replica(s): the edit log needs a majority, \
                 so it survives no more failures than with one journalnode less; run an odd \
                 number of at least 3"
            ),
            Self::ReplicationAboveDataNodes {
                dfs_replication,
                datanodes,
            } => format!(
                "dfsReplication is {dfs_replication} but dataNodes has {datanodes} \
                 replica(s): every block stays under-replicated; add datanodes or lower \
                 dfsReplication"
            ),
        }
    }
}

/// The warnings of a validated layout, in a stable order.
pub(super) fn check(roles: &[ValidatedRole], dfs_replication: u16) -> Vec<Warning> {
    let count = |role: HdfsRole| -> u16 {
        roles
            .iter()
            .filter(|validated| validated.role == role)
            .map(ValidatedRole::replicas)
            .sum()
    };
    let (namenodes, journalnodes, datanodes) = (
        count(HdfsRole::NameNode),
        count(HdfsRole::JournalNode),
        count(HdfsRole::DataNode),
    );
    let mut warnings = Vec::new();
    if namenodes < 2 {
        warnings.push(Warning::NoHighAvailability { namenodes });
    }
    if journalnodes < 3 || journalnodes % 2 == 0 {
        warnings.push(Warning::WeakJournalQuorum { journalnodes });
    }
    if dfs_replication > datanodes {
        warnings.push(Warning::ReplicationAboveDataNodes {
            dfs_replication,
            datanodes,
        });
    }
    warnings
}
