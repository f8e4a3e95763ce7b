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
//!    `Decommissioned` while alive, **and** the active namenode reports every block of
//!    the namespace fully replicated (`LowRedundancyBlocks`,
//!    `PendingReconstructionBlocks` and `MissingBlocks` at 0); only then does it shrink;
//! 3. the host stays excluded until its pod is gone **and** the namenodes, the active
//!    one among them, no longer count it alive (they list it dead, or not at all);
//!    after that it leaves the list.
//!
//! [`plan`] is pure and keeps no state of its own: every reconcile derives the step from
//! the spec, the StatefulSets and pods, the exclude list it wrote last time, and what the
//! namenodes report. Stopping the cluster (every StatefulSet at zero) is the apply
//! layer's business, not a scale-down.
//!
//! Decisions, safety first:
//! - **Only a live `Decommissioned` datanode may go, and only once no block lacks a
//!   replica.** Hadoop marks a datanode that is dead when it enters the exclude list
//!   `Decommissioned` at once, without copying anything
//!   (`HeartbeatManager.startDecommission`), and does not decommission it again when it
//!   returns (`DatanodeAdminManager.startDecommission` returns for a node that is
//!   `Decommissioned` already). So "live and `Decommissioned`" does not prove that its
//!   blocks have other replicas: a block whose only replica is on it is missing while it
//!   is dead, and low on redundancy from its first block report until the namenode has
//!   copied it. The block counts of the active namenode (JMX `FSNamesystem`; a standby
//!   computes none) cover that case and any other block without enough replicas, so the
//!   shrink waits for all three at 0, with a message that names them. A namenode that has
//!   not heard from a datanode since it started does not list it at all; that waits too.
//! - **A departed host stays excluded while the namenode counts it alive.** The
//!   namenode declares a datanode dead only about 10.5 minutes after its last heartbeat.
//!   Taking a host off the list before that makes `refreshNodes` return it to service
//!   (`stopDecommission`), and the extra-redundancy pass that follows counts its
//!   replicas again and may delete the only real copy of a block, keeping the phantom.
//!   A dead node skips that pass, so the host leaves the list once the namenode lists it
//!   dead or not at all; while no namenode answers, it stays.
//! - **Excluding is always safe**: it only makes the namenodes copy blocks and stop
//!   placing new ones there. So leaving hosts are excluded even while no namenode
//!   answers; only the shrink waits for one.
//! - **A scale-up or an unchanged group applies at once** and cancels a decommission in
//!   flight: a host below the spec's replicas leaves the list, and the namenodes take it
//!   back into service.
//! - **A scale-down below `dfsReplication` datanodes is refused**: the blocks could not
//!   keep their replicas on the datanodes that stay, so decommissioning would not end.

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
    /// namenodes).
    /// - **A live report wins over a dead one.** A dead entry for the host is a former
    ///   identity of it (a datanode whose volume was replaced registers with a new
    ///   UUID), which the namenode lists, `In Service`, until it restarts. Its blocks
    ///   left the block map when it died, so it holds nothing a decommission could
    ///   wait for, and letting it count would hold the shrink for ever. The block
    ///   counts of the active namenode still guard every block.
    /// - **Between two live (or two dead) reports, any state other than
    ///   `Decommissioned` wins**, so a host counts as decommissioned only if every
    ///   report says so.
    #[must_use]
    pub fn merge(self, other: Self) -> Self {
        match (self.live, other.live) {
            (true, false) => self,
            (false, true) => other,
            _ if self.admin_state == AdminState::Decommissioned => other,
            _ => self,
        }
    }
}

/// The block counts of the active namenode (JMX `Hadoop:service=NameNode,
/// name=FSNamesystem`): what says whether every block has its replicas.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockHealth {
    /// `LowRedundancyBlocks`: blocks with fewer live replicas than they need.
    pub low_redundancy: u64,
    /// `PendingReconstructionBlocks`: blocks being copied right now.
    pub pending_reconstruction: u64,
    /// `MissingBlocks`: blocks with no live replica at all.
    pub missing: u64,
    /// `PostponedMisreplicatedBlocks`: blocks whose replicas a namenode that just
    /// became active has not counted yet (it waits for every datanode's block report
    /// after a failover), so the other counts are not complete either.
    pub postponed_misreplicated: u64,
}

impl BlockHealth {
    /// Whether every block has the replicas it needs and none is being copied.
    pub fn is_complete(&self) -> bool {
        self.low_redundancy == 0
            && self.pending_reconstruction == 0
            && self.missing == 0
            && self.postponed_misreplicated == 0
    }
}

impl fmt::Display for BlockHealth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "LowRedundancyBlocks {}, PendingReconstructionBlocks {}, MissingBlocks {}",
            self.low_redundancy, self.pending_reconstruction, self.missing
        )?;
        if self.postponed_misreplicated > 0 {
            write!(
                f,
                ", PostponedMisreplicatedBlocks {}",
                self.postponed_misreplicated
            )?;
        }
        Ok(())
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
    /// The active namenode's block counts, or `None` when no active namenode answered
    /// (which also keeps departed hosts excluded).
    pub block_health: Option<BlockHealth>,
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
    // Hosts above both sizes that were excluded: decommissioned, and on their way out.
    let departing: Vec<u16> = recorded
        .iter()
        .filter_map(|recorded| ordinal_of(group, input, recorded))
        .filter(|ordinal| *ordinal >= target.max(current))
        .collect();
    // Their pods still shut down.
    let shutting_down: Vec<u16> = departing
        .iter()
        .copied()
        .filter(|ordinal| group.pods.contains(ordinal))
        .collect();
    // Their pods are gone, but the namenode still counts them alive, or the active
    // namenode did not answer: a standby that restarted may not list a host the
    // active still counts alive.
    let counted_alive: Vec<u16> = departing
        .iter()
        .copied()
        .filter(|ordinal| !group.pods.contains(ordinal))
        .filter(|ordinal| match (input.namenode, input.block_health) {
            (Some(nodes), Some(_)) => {
                report_of(nodes, &group.name.pod_name(*ordinal), &host(*ordinal))
                    .is_some_and(|report| report.live)
            }
            _ => true,
        })
        .collect();
    let leaving: Vec<u16> = (target..current).collect();
    let mut excluded: Vec<String> = leaving
        .iter()
        .chain(&shutting_down)
        .chain(&counted_alive)
        .map(|o| host(*o))
        .collect();
    excluded.sort();
    let pods = |ordinals: &[u16]| -> String {
        let names: Vec<String> = ordinals.iter().map(|o| group.name.pod_name(*o)).collect();
        names.join(", ")
    };
    if leaving.is_empty() {
        let mut notes = Vec::new();
        if !shutting_down.is_empty() {
            notes.push(format!(
                "waiting for the decommissioned pod(s) {} to shut down before they leave \
                 the exclude list",
                pods(&shutting_down)
            ));
        }
        if !counted_alive.is_empty() {
            notes.push(format!(
                "{} stay excluded until the namenode declares them dead (about 10.5 \
                 minutes after their last heartbeat), so their replicas are never counted \
                 again",
                pods(&counted_alive)
            ));
        }
        return GroupStep {
            replicas: target,
            excluded,
            note: (!notes.is_empty()).then(|| format!("{name}: {}", notes.join("; "))),
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
        let decommissioned = format!(
            "{name}: {} decommissioned ({done} of {total})",
            pods(&leaving)
        );
        let (replicas, note) = match input.block_health {
            Some(health) if health.is_complete() => (target, format!("{decommissioned}; {shrink}")),
            Some(health) => (
                current,
                format!(
                    "{decommissioned}, but the active namenode reports {health}; a datanode \
                     that was dead when it was excluded is marked Decommissioned without \
                     its blocks being copied, so {shrink} only once every block has its \
                     replicas"
                ),
            ),
            None => (
                current,
                format!(
                    "{decommissioned}; waiting for the active namenode to report its block \
                     counts before {shrink}"
                ),
            ),
        };
        return GroupStep {
            replicas,
            excluded,
            note: Some(note),
        };
    }
    let states: Vec<&str> = pending.iter().map(|(state, _)| state.as_str()).collect();
    let hint = if pending.iter().any(|(_, stuck)| *stuck) {
        "; a dead or unlisted datanode may hold the only replica of a block, so the \
         scale-down waits until its pod runs again and its blocks are copied"
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

/// The ordinal of the group's pod whose host name is `host`, as the operator wrote it
/// into the exclude list; `None` for hosts of other groups or unknown hosts.
fn ordinal_of(group: &DataNodeGroup, input: &DecommissionInput<'_>, host: &str) -> Option<u16> {
    let pod = host.split('.').next()?;
    let ordinal: u16 = pod
        .strip_prefix(group.name.object_name())?
        .strip_prefix('-')?
        .parse()
        .ok()?;
    (group.host(ordinal, input.namespace, input.cluster_domain) == host).then_some(ordinal)
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
