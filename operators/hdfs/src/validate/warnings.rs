//! What a valid spec may still get wrong: layouts HDFS runs with, but not safely.

use strata_model::exposure::{ServiceExposure, ServiceType};
use strata_status::{Reason, SpecWarning};

use crate::crd::HdfsRole;
use crate::validate::ValidatedRole;

/// A setting that is allowed but unwise. The reason is the condition reason; the
/// message says what it costs and what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Warning {
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
    /// The namenodes' HTTP port open to every network that reaches a node (a node
    /// port) or the load balancer (no source ranges). It serves WebHDFS, which Hadoop
    /// 3.4 cannot turn off, and with simple authentication anyone there acts as any
    /// user, the superuser included.
    NameNodeHttpOpen {
        /// `NodePort` or `LoadBalancer`.
        service_type: String,
    },
}

impl Warning {
    /// The Warning condition's reason, checked at compile time.
    pub fn reason(&self) -> Reason {
        match self {
            Self::WeakJournalQuorum { .. } => strata_status::reason!("WeakJournalQuorum"),
            Self::ReplicationAboveDataNodes { .. } => {
                strata_status::reason!("ReplicationAboveDataNodes")
            }
            Self::NameNodeHttpOpen { .. } => strata_status::reason!("NameNodeHttpOpen"),
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
            Self::NameNodeHttpOpen { service_type } => format!(
                "nameNodeHttpService is a {service_type} open to every network that reaches \
                 it: the namenodes' HTTP port also serves WebHDFS, where anyone acts as any \
                 HDFS user, the superuser included, and may delete every file; set \
                 loadBalancerSourceRanges to the networks you trust, or use an internal \
                 load balancer"
            ),
        }
    }
}

/// The warnings of a validated layout and exposure, in a stable order.
pub(super) fn check(
    roles: &[ValidatedRole],
    dfs_replication: u16,
    namenode_http: &ServiceExposure,
) -> Vec<Warning> {
    let count = |role: HdfsRole| -> u16 {
        roles
            .iter()
            .filter(|validated| validated.role == role)
            .map(ValidatedRole::replicas)
            .sum()
    };
    let (journalnodes, datanodes) = (count(HdfsRole::JournalNode), count(HdfsRole::DataNode));
    let mut warnings = Vec::new();
    if journalnodes < 3 || journalnodes % 2 == 0 {
        warnings.push(Warning::WeakJournalQuorum { journalnodes });
    }
    if dfs_replication > datanodes {
        warnings.push(Warning::ReplicationAboveDataNodes {
            dfs_replication,
            datanodes,
        });
    }
    let open = match namenode_http.type_ {
        ServiceType::ClusterIP => false,
        ServiceType::NodePort => true,
        ServiceType::LoadBalancer => namenode_http.load_balancer_source_ranges.is_empty(),
    };
    if open {
        warnings.push(Warning::NameNodeHttpOpen {
            service_type: namenode_http.type_.to_string(),
        });
    }
    warnings
}
