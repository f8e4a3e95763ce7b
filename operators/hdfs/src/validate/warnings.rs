//! What a valid spec may still get wrong: layouts HDFS runs with, but not safely.

use strata_model::exposure::ServiceExposure;
use strata_status::{Reason, SpecWarning};

use crate::crd::HdfsRole;
use crate::crd::exposure::NameNodeIngress;
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
        /// What opens it: `nameNodeHttpService is a NodePort`, say.
        through: String,
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
            Self::NameNodeHttpOpen { through } => format!(
                "{through}: the namenodes' HTTP port also serves WebHDFS, where anyone acts \
                 as any HDFS user, the superuser included, and may delete every file (and \
                 /logs, /conf and /jmx); for a Service set loadBalancerSourceRanges to the \
                 networks you trust or use an internal load balancer, and for an Ingress \
                 put an authenticating proxy in its annotations \
                 (nginx.ingress.kubernetes.io/auth-url, say)"
            ),
        }
    }
}

/// The warnings of a validated layout and exposure, in a stable order.
pub(super) fn check(
    roles: &[ValidatedRole],
    dfs_replication: u16,
    namenode_http: &ServiceExposure,
    namenode_ingress: Option<&NameNodeIngress>,
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
    if let Some(open_to) = namenode_http.open_to() {
        warnings.push(Warning::NameNodeHttpOpen {
            through: format!(
                "nameNodeHttpService is a {} open to {open_to}",
                namenode_http.type_
            ),
        });
    }
    if let Some(ingress) = namenode_ingress.filter(|ingress| !authenticates(ingress)) {
        warnings.push(Warning::NameNodeHttpOpen {
            through: format!(
                "nameNodeIngress publishes every namenode's HTTP port at *.{} through the \
                 Ingress controller, with no authenticating annotation",
                ingress.domain
            ),
        });
    }
    warnings
}

/// Whether an Ingress's annotations put an authenticating proxy in front: an
/// annotation whose name (after the prefix) starts with `auth`, as ingress-nginx's
/// `auth-url` and `auth-type`, HAProxy's `auth-type` and Traefik's `auth` do. The
/// operator cannot check a proxy it does not know; any such annotation lifts the
/// warning.
fn authenticates(ingress: &NameNodeIngress) -> bool {
    ingress.annotations.keys().any(|key| {
        let name = key.rsplit('/').next().unwrap_or(key);
        name.starts_with("auth") || name.contains(".auth")
    })
}
