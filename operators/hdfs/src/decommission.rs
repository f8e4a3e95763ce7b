//! Datanode scale-down without losing a block: decommission first, shrink after.
//!
//! Lowering a datanode StatefulSet's replicas deletes the pods with the highest
//! ordinals. Such a datanode may hold the only replica of some blocks (a file written
//! with replication 1, or a block whose other replicas were lost), so the operator first
//! has the namenodes decommission it:
//!
//! 1. its host name (the pod FQDN) goes into the exclude list, the `datanodes` key of
//!    the namenode state ConfigMap that the namenodes read as `dfs.hosts.exclude`, and
//!    the namenodes copy every block it holds to the datanodes that stay;
//! 2. the StatefulSet keeps its replicas until a namenode reports every leaving datanode
//!    `Decommissioned`; only then does it shrink;
//! 3. the host stays excluded until its pod is gone, so a namenode that re-reads the
//!    list meanwhile does not take the datanode back into service (and then keep its
//!    replicas while it shuts down); after that it leaves the list.
//!
//! [`plan`] is pure and keeps no state of its own: every reconcile derives the step from
//! the spec, the StatefulSets and pods, the exclude list it wrote last time, and what a
//! namenode reports. Stopping the cluster (every StatefulSet at zero) is the apply
//! layer's business, not a scale-down.
//!
//! Decisions, safety first:
//! - **Only a live `Decommissioned` datanode may go.** Hadoop marks a datanode that is
//!   dead when it enters the exclude list `Decommissioned` at once, without copying
//!   anything (`HeartbeatManager.startDecommission`), and a namenode that has not heard
//!   from a datanode since it started does not list it at all. Neither proves that its
//!   blocks have other replicas, so both wait, with a message that names the pod; a
//!   datanode that runs again decommissions while alive.
//! - **Excluding is always safe**: it only makes the namenodes copy blocks and stop
//!   placing new ones there. So leaving hosts are excluded even while no namenode
//!   answers; only the shrink waits for one.
//! - **A scale-up or an unchanged group applies at once** and cancels a decommission in
//!   flight: a host below the spec's replicas leaves the list, and the namenodes take it
//!   back into service.
//! - **A scale-down below `dfsReplication` datanodes is refused**: the blocks could not
//!   keep their replicas on the datanodes that stay, so decommissioning would not end.
//!
//! Known gap: a datanode that was dead when excluded, and later runs again, is reported
//! `Decommissioned` and live, and may go before the namenodes have copied the blocks
//! only it held. Closing it needs the namenode's block health (`FSNamesystem`
//! `LowRedundancyBlocks` and `PendingReconstructionBlocks` at zero) as a further input.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use strata_model::names::RoleGroupRef;
use strata_operator::error::{ErrorKind, StepError};
use strata_status::{ProgressStep, Reason};

/// The Progressing reason while datanodes are decommissioned or their pods shut down.
pub const DECOMMISSIONING_DATANODES: Reason = strata_status::reason!("DecommissioningDataNodes");

/// A datanode's admin state as a namenode reports it (`DatanodeInfo.AdminStates`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdminState {
    /// `In Service`: stores and serves blocks.
    InService,
    /// `Decommission In Progress`: the namenodes copy its blocks elsewhere.
    DecommissionInProgress,
    /// `Decommissioned`: no block needs it any more, if it was alive when it got there.
    Decommissioned,
    /// `Entering Maintenance`.
    EnteringMaintenance,
    /// `In Maintenance`.
    InMaintenance,
    /// A state this operator does not know, kept verbatim for messages.
    Other(String),
}

impl AdminState {
    /// The state from the `adminState` text of the namenode's JMX node lists.
    pub fn parse(value: &str) -> Self {
        match value {
            "In Service" => Self::InService,
            "Decommission In Progress" => Self::DecommissionInProgress,
            "Decommissioned" => Self::Decommissioned,
            "Entering Maintenance" => Self::EnteringMaintenance,
            "In Maintenance" => Self::InMaintenance,
            other => Self::Other(other.to_owned()),
        }
    }

    /// The text Hadoop uses.
    pub fn as_str(&self) -> &str {
        match self {
            Self::InService => "In Service",
            Self::DecommissionInProgress => "Decommission In Progress",
            Self::Decommissioned => "Decommissioned",
            Self::EnteringMaintenance => "Entering Maintenance",
            Self::InMaintenance => "In Maintenance",
            Self::Other(other) => other,
        }
    }
}

impl fmt::Display for AdminState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a namenode reports of one datanode host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataNodeReport {
    /// Its admin state.
    pub admin_state: AdminState,
    /// Whether it is in `LiveNodes` (true) or only in `DeadNodes`.
    pub live: bool,
}

impl DataNodeReport {
    /// Whether its pod may go: decommissioned while alive (see the module docs).
    pub fn may_leave(&self) -> bool {
        self.live && self.admin_state == AdminState::Decommissioned
    }

    /// Two reports of one host (two ports, a stale dead entry next to a live one, two
    /// namenodes). Any state other than `Decommissioned` wins, so a host counts as
    /// decommissioned only if every report says so; it is live if any report says so,
    /// because a stale dead entry stays listed until the namenode restarts.
    #[must_use]
    pub fn merge(self, other: Self) -> Self {
        let live = self.live || other.live;
        let admin_state = if self.admin_state == AdminState::Decommissioned {
            other.admin_state
        } else {
            self.admin_state
        };
        Self { admin_state, live }
    }
}

/// One datanode role group as the planner sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataNodeGroup {
    /// The group's names: StatefulSet, headless Service, pods.
    pub name: RoleGroupRef,
    /// Replicas as the spec asks.
    pub replicas: u16,
    /// The StatefulSet's `spec.replicas`; `None` before it exists.
    pub current_replicas: Option<u16>,
    /// Ordinals of the pods that still exist, terminating ones included. A host stays
    /// excluded until its pod is gone; left empty, it leaves as soon as the StatefulSet
    /// has shrunk.
    pub pods: BTreeSet<u16>,
}

impl DataNodeGroup {
    /// The host name the namenodes know a pod by: its FQDN behind the headless Service,
    /// which has the StatefulSet's name.
    pub fn host(&self, ordinal: u16, namespace: &str, cluster_domain: &str) -> String {
        self.name
            .pod_fqdn(ordinal, namespace, self.name.object_name(), cluster_domain)
    }
}

/// Everything a decommission step is derived from.
#[derive(Clone, Copy, Debug)]
pub struct DecommissionInput<'a> {
    /// Every datanode role group of the spec.
    pub groups: &'a [DataNodeGroup],
    /// The cluster's namespace, for host names.
    pub namespace: &'a str,
    /// The cluster DNS domain, for host names.
    pub cluster_domain: &'a str,
    /// The exclude list as last written to the namenode state ConfigMap.
    pub excluded: &'a [String],
    /// Each host's report (the host part of the node list keys), or `None` when no
    /// namenode answered.
    pub namenode: Option<&'a BTreeMap<String, DataNodeReport>>,
    /// `dfs.replication`.
    pub dfs_replication: u16,
}

/// What to apply now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecommissionPlan {
    /// `spec.replicas` of each datanode StatefulSet, by name.
    pub replicas: BTreeMap<String, u16>,
    /// The exclude list (`NameNodeState::excluded_datanodes`), sorted.
    pub excluded: Vec<String>,
    /// The Progressing step while a decommission runs or its pods shut down.
    pub progress: Option<ProgressStep>,
}

/// Why a datanode scale-down is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, strum::IntoStaticStr)]
pub enum DecommissionError {
    /// Fewer datanodes than `dfsReplication` would remain.
    #[error(
        "dataNodes would shrink to {datanodes} datanode(s) in total ({shrinking}), fewer \
         than dfsReplication ({dfs_replication}): the blocks could not keep their \
         replicas on the datanodes that stay, so decommissioning would never finish; \
         keep at least {dfs_replication} datanodes. Nothing was applied"
    )]
    ScaleDownBelowReplication {
        /// Datanodes of every group together, as the spec asks.
        datanodes: u32,
        /// `dfs.replication`.
        dfs_replication: u16,
        /// The shrinking role groups, `<group> from <current> to <replicas>`.
        shrinking: String,
    },
}

impl DecommissionError {
    /// The condition reason: the variant's name.
    pub fn reason(&self) -> &'static str {
        self.into()
    }
}

impl StepError for DecommissionError {
    fn reason(&self) -> &'static str {
        DecommissionError::reason(self)
    }

    fn kind(&self) -> ErrorKind {
        ErrorKind::NeedsUser
    }
}

/// The step towards every datanode group at its spec's replicas, no block lost.
pub fn plan(input: &DecommissionInput<'_>) -> Result<DecommissionPlan, DecommissionError> {
    check_replication(input)?;
    let recorded: BTreeSet<&str> = input.excluded.iter().map(String::as_str).collect();
    let mut replicas = BTreeMap::new();
    let mut excluded = BTreeSet::new();
    let mut notes = Vec::new();
    for group in input.groups {
        let step = group_step(group, input, &recorded);
        replicas.insert(group.name.object_name().to_owned(), step.replicas);
        excluded.extend(step.excluded);
        notes.extend(step.note);
    }
    Ok(DecommissionPlan {
        replicas,
        excluded: excluded.into_iter().collect(),
        progress: (!notes.is_empty()).then(|| ProgressStep {
            reason: DECOMMISSIONING_DATANODES,
            message: notes.join("; "),
        }),
    })
}

/// Refuses a scale-down that leaves fewer datanodes than `dfs.replication`. A spec that
/// never had more (a new cluster) is only warned about, in validation.
fn check_replication(input: &DecommissionInput<'_>) -> Result<(), DecommissionError> {
    let shrinking: Vec<String> = input
        .groups
        .iter()
        .filter_map(|group| {
            let current = group.current_replicas.filter(|c| *c > group.replicas)?;
            Some(format!(
                "{} from {current} to {}",
                group.name.role_group(),
                group.replicas
            ))
        })
        .collect();
    let datanodes: u32 = input
        .groups
        .iter()
        .map(|group| u32::from(group.replicas))
        .sum();
    if shrinking.is_empty() || datanodes >= u32::from(input.dfs_replication) {
        return Ok(());
    }
    Err(DecommissionError::ScaleDownBelowReplication {
        datanodes,
        dfs_replication: input.dfs_replication,
        shrinking: shrinking.join(", "),
    })
}

/// One group's part of the plan.
struct GroupStep {
    replicas: u16,
    excluded: Vec<String>,
    note: Option<String>,
}

fn group_step(
    group: &DataNodeGroup,
    input: &DecommissionInput<'_>,
    recorded: &BTreeSet<&str>,
) -> GroupStep {
    let host = |ordinal: u16| group.host(ordinal, input.namespace, input.cluster_domain);
    let name = group.name.object_name();
    let (target, current) = (group.replicas, group.current_replicas.unwrap_or(0));
    // Pods above both sizes whose decommission finished: they shut down, still excluded.
    let lingering: Vec<u16> = group
        .pods
        .iter()
        .copied()
        .filter(|ordinal| *ordinal >= target.max(current))
        .filter(|ordinal| recorded.contains(host(*ordinal).as_str()))
        .collect();
    let leaving: Vec<u16> = (target..current).collect();
    let mut excluded: Vec<String> = leaving.iter().chain(&lingering).map(|o| host(*o)).collect();
    excluded.sort();
    let pods = |ordinals: &[u16]| -> String {
        let names: Vec<String> = ordinals.iter().map(|o| group.name.pod_name(*o)).collect();
        names.join(", ")
    };
    if leaving.is_empty() {
        let note = (!lingering.is_empty()).then(|| {
            format!(
                "{name}: waiting for the decommissioned pod(s) {} to shut down before they \
                 leave the exclude list",
                pods(&lingering)
            )
        });
        return GroupStep {
            replicas: target,
            excluded,
            note,
        };
    }
    let shrink = format!("{name} shrinks from {current} to {target} replicas");
    let Some(nodes) = input.namenode else {
        return GroupStep {
            replicas: current,
            excluded,
            note: Some(format!(
                "{name}: {} excluded; waiting for a namenode to report their admin state \
                 before {shrink}",
                pods(&leaving)
            )),
        };
    };
    // Each leaving pod not yet decommissioned while alive, and whether it is stuck (dead
    // or unlisted) rather than on its way.
    let pending: Vec<(String, bool)> = leaving
        .iter()
        .filter_map(|ordinal| {
            let pod = group.name.pod_name(*ordinal);
            match report_of(nodes, &pod, &host(*ordinal)) {
                Some(report) if report.may_leave() => None,
                Some(report) if report.live => {
                    Some((format!("{pod} {}", report.admin_state), false))
                }
                Some(report) => Some((format!("{pod} {} but dead", report.admin_state), true)),
                None => Some((format!("{pod} not listed by the namenode"), true)),
            }
        })
        .collect();
    let (total, done) = (leaving.len(), leaving.len() - pending.len());
    if pending.is_empty() {
        return GroupStep {
            replicas: target,
            excluded,
            note: Some(format!(
                "{name}: {} decommissioned ({done} of {total}); {shrink}",
                pods(&leaving)
            )),
        };
    }
    let states: Vec<&str> = pending.iter().map(|(state, _)| state.as_str()).collect();
    let hint = if pending.iter().any(|(_, stuck)| *stuck) {
        "; a dead or unlisted datanode may hold the only replica of a block, so the \
         scale-down waits until its pod runs again"
    } else {
        ""
    };
    GroupStep {
        replicas: current,
        excluded,
        note: Some(format!(
            "{name}: decommissioning {} before {shrink}: {done} of {total} decommissioned \
             ({}){hint}",
            pods(&leaving),
            states.join(", ")
        )),
    }
}

/// The namenode's report of `pod`, matched by host name: its FQDN, its bare name, or any
/// name under it (`<pod>.`); several matches merge (see [`DataNodeReport::merge`]).
pub fn report_of(
    nodes: &BTreeMap<String, DataNodeReport>,
    pod: &str,
    fqdn: &str,
) -> Option<DataNodeReport> {
    nodes
        .iter()
        .filter(|(host, _)| names_pod(host, pod, fqdn))
        .map(|(_, report)| report.clone())
        .reduce(DataNodeReport::merge)
}

/// Whether a reported host name is `pod`'s; DNS names compare without case.
pub fn names_pod(host: &str, pod: &str, fqdn: &str) -> bool {
    let host = host.to_ascii_lowercase();
    let pod = pod.to_ascii_lowercase();
    host == fqdn.to_ascii_lowercase() || host == pod || host.starts_with(&format!("{pod}."))
}

#[cfg(test)]
mod tests;
