//! Membership changes: how the ensemble grows, shrinks and rolls without ever letting
//! servers without the data form a quorum of their own.
//!
//! ZooKeeper reads its membership (the `server.N` lines) once, at start. A StatefulSet
//! that adds two empty servers to a running one-server ensemble gives those two a majority
//! of the new three-server membership: they elect an empty leader, and the old server
//! later syncs from it and loses everything. The planner therefore changes the ensemble
//! in steps that each keep every possible quorum overlapping the servers with the data:
//!
//! 1. **One server per step.** A step adds or removes exactly one server, so at most two
//!    memberships exist at any time (the old one, still in the running servers' config,
//!    and the new one). With `n` old servers, any majority of the new membership keeps
//!    at least one server of every old majority, and a majority under each membership
//!    cannot both exist at once, so there is never a second leader and never a quorum
//!    without a server that acknowledged every committed write.
//! 2. **The step completes before the next one starts**: every member runs the new
//!    config (its pod was restarted from the new template) and is ready again.
//! 3. **The operator restarts the pods, one at a time.** StatefulSets use the
//!    `OnDelete` update strategy, and the planner deletes the next pod whose template is
//!    out of date only while the others keep a quorum, and the leader last: servers that
//!    took a larger membership can follow only a leader the old members follow too.
//!
//! Additions come before removals, so replacing a role group keeps the ensemble at its
//! larger size in between. The membership each StatefulSet's servers belong to is
//! recorded on the StatefulSet itself ([`SERVERS_ANNOTATION`], [`MYID_OFFSET_ANNOTATION`],
//! [`JOINING_ANNOTATION`]), so a restarted operator continues where it stopped.

mod health;
mod identity;
mod observe;

use std::collections::BTreeMap;

use self::health::Health;
use self::identity::check_identities;
pub use self::identity::{IdList, PlanError};
pub use self::observe::observe_role_groups;
pub use strata_operator::roll::PodRollState as PodState;

/// On a role group's StatefulSet: how many of its servers are members of the ensemble
/// the operator last applied. It differs from `spec.replicas` while stopped (0 pods).
pub const SERVERS_ANNOTATION: &str = "zookeeper.strata.dev/ensemble-servers";
/// On a role group's StatefulSet: the `myidOffset` its servers were created with.
pub const MYID_OFFSET_ANNOTATION: &str = "zookeeper.strata.dev/myid-offset";
/// On a role group's StatefulSet: the server added by the step in progress, which is
/// exempt from the readiness check until the others have restarted.
pub const JOINING_ANNOTATION: &str = "zookeeper.strata.dev/joining-server";
/// On a role group's StatefulSet: `observer` when its servers do not vote.
pub const PEER_TYPE_ANNOTATION: &str = "zookeeper.strata.dev/peer-type";

/// A role group's share of the ensemble: servers `myid_offset .. myid_offset + servers`,
/// on pods with ordinals `0 .. servers`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupMembers {
    /// Server id of ordinal 0.
    pub myid_offset: u32,
    /// Number of servers of the group in the ensemble.
    pub servers: u16,
    /// Whether the servers are observers, which do not vote.
    pub observer: bool,
}

impl GroupMembers {
    /// The ids of the group's servers, ascending.
    pub fn ids(self) -> impl Iterator<Item = u32> {
        (0..u32::from(self.servers)).map(move |ordinal| self.myid_offset + ordinal)
    }
}

/// One role group as the operator found it: its StatefulSet's records and its pods.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedGroup {
    /// The recorded membership.
    pub members: GroupMembers,
    /// The server added by the step in progress, if it is in this group.
    pub joining: Option<u32>,
    /// Whether the StatefulSet controller has seen the latest template, so that the
    /// pods' revisions can be compared with it.
    pub template_observed: bool,
    /// The pods by ordinal, including pods above the membership that are still going.
    pub pods: BTreeMap<u32, PodState>,
}

/// The ensemble the spec asks for, one entry per role group, by name.
pub type DesiredMembership = BTreeMap<String, GroupMembers>;

/// What this reconcile applies: the membership to render into every `zoo.cfg` (role
/// groups with no servers left are absent, so their objects are pruned), the pod to
/// restart, and what is going on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Per role group, by name.
    pub membership: BTreeMap<String, GroupPlan>,
    /// The pod to delete after applying, so that it restarts from the new template.
    pub restart: Option<String>,
    /// Why the cluster is progressing, while a membership change or roll runs.
    pub progress: Option<Progress>,
}

/// One role group's part of a [`Plan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupPlan {
    /// The servers to render and run.
    pub members: GroupMembers,
    /// The server added by the step in progress, recorded for the next reconcile.
    pub joining: Option<u32>,
}

/// A step of a membership change or roll, for the Progressing condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progress {
    /// CamelCase reason.
    pub reason: ProgressReason,
    /// What happens, naming servers and pods.
    pub message: String,
}

/// The reasons of [`Progress`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::IntoStaticStr, strum::Display)]
pub enum ProgressReason {
    /// A server was added to the membership; the others restart to take it.
    AddingServer,
    /// A server left the membership; its pod is removed and the others restart.
    RemovingServer,
    /// One pod is being restarted to run the latest template.
    RestartingServer,
    /// The next step waits until every member runs and is ready.
    WaitingForQuorum,
}

impl ProgressReason {
    /// The Progressing condition's reason, checked at compile time.
    pub fn reason(self) -> strata_status::Reason {
        match self {
            Self::AddingServer => strata_status::reason!("AddingServer"),
            Self::RemovingServer => strata_status::reason!("RemovingServer"),
            Self::RestartingServer => strata_status::reason!("RestartingServer"),
            Self::WaitingForQuorum => strata_status::reason!("WaitingForQuorum"),
        }
    }
}

/// The next step from `observed` towards `desired`.
///
/// A cluster with no StatefulSets yet starts at its full size: every server is empty,
/// so there is no data to protect. A stopped cluster keeps its membership.
///
/// `leader` is the server that leads, when known: it restarts after every other
/// server. Servers that took a larger membership can only follow a leader that the
/// servers on the old membership follow too; restarting that leader first leaves them
/// unable to form a quorum with either side.
pub fn plan(
    desired: &DesiredMembership,
    observed: &BTreeMap<String, ObservedGroup>,
    leader: Option<u32>,
    stopped: bool,
) -> Result<Plan, PlanError> {
    check_identities(desired, observed)?;
    let running: BTreeMap<String, GroupPlan> = observed
        .iter()
        .filter(|(_, group)| group.members.servers > 0)
        .map(|(name, group)| {
            (
                name.clone(),
                GroupPlan {
                    members: group.members,
                    joining: group.joining,
                },
            )
        })
        .collect();
    if running.is_empty() {
        return Ok(Plan {
            membership: settled(desired),
            restart: None,
            progress: None,
        });
    }
    let unchanged = |progress| Plan {
        membership: running.clone(),
        restart: None,
        progress,
    };
    if stopped {
        return Ok(unchanged(None));
    }
    let changing = running != settled(desired);
    let health = Health::of(observed, leader);
    if health.unobserved.is_empty()
        && let Some(down) = health.stale_down.first()
    {
        return Ok(Plan {
            membership: running.clone(),
            restart: Some(down.name.clone()),
            progress: Some(Progress {
                reason: ProgressReason::RestartingServer,
                message: format!(
                    "Restarting server {} (pod {}), which is down on an older configuration, \
                     so that it runs the latest one.",
                    down.id, down.name
                ),
            }),
        });
    }
    if let Some(waiting) = health.waiting_for_pods() {
        let progress = (changing || !health.stale.is_empty()).then_some(Progress {
            reason: ProgressReason::WaitingForQuorum,
            message: waiting,
        });
        return Ok(unchanged(progress));
    }
    if let Some(next) = health.stale.last() {
        if let Some(waiting) = health.waiting_for_restart_of(next) {
            return Ok(unchanged(Some(Progress {
                reason: ProgressReason::WaitingForQuorum,
                message: waiting,
            })));
        }
        return Ok(Plan {
            membership: running.clone(),
            restart: Some(next.name.clone()),
            progress: Some(Progress {
                reason: ProgressReason::RestartingServer,
                message: format!(
                    "Restarting server {} (pod {}) so that it runs the latest configuration; \
                     {} more to go after it.",
                    next.id,
                    next.name,
                    health.stale.len() - 1
                ),
            }),
        });
    }
    if let Some(waiting) = health
        .waiting_for_readiness()
        .or_else(|| health.waiting_for_joining())
    {
        let progress = changing.then_some(Progress {
            reason: ProgressReason::WaitingForQuorum,
            message: waiting,
        });
        return Ok(unchanged(progress));
    }
    Ok(next_step(desired, running))
}

/// Every desired group at its full size, none joining: the membership of a cluster
/// with no change in progress.
pub fn settled(desired: &DesiredMembership) -> BTreeMap<String, GroupPlan> {
    desired
        .iter()
        .filter(|(_, members)| members.servers > 0)
        .map(|(name, members)| {
            (
                name.clone(),
                GroupPlan {
                    members: *members,
                    joining: None,
                },
            )
        })
        .collect()
}

/// With every member ready and current: add the next missing server, else remove the
/// next surplus one, else nothing.
fn next_step(desired: &DesiredMembership, running: BTreeMap<String, GroupPlan>) -> Plan {
    let mut membership: BTreeMap<String, GroupPlan> = running
        .into_iter()
        .map(|(name, group)| {
            (
                name,
                GroupPlan {
                    members: group.members,
                    joining: None,
                },
            )
        })
        .collect();
    let grow = desired.iter().find_map(|(name, wanted)| {
        let servers = membership
            .get(name)
            .map_or(0, |group| group.members.servers);
        (wanted.servers > servers).then(|| (name.clone(), wanted.myid_offset, servers))
    });
    if let Some((name, myid_offset, servers)) = grow {
        let id = myid_offset + u32::from(servers);
        membership.insert(
            name.clone(),
            GroupPlan {
                members: GroupMembers {
                    myid_offset,
                    servers: servers + 1,
                    observer: desired.get(&name).is_some_and(|wanted| wanted.observer),
                },
                joining: Some(id),
            },
        );
        return Plan {
            membership,
            restart: None,
            progress: Some(Progress {
                reason: ProgressReason::AddingServer,
                message: format!(
                    "Adding server {id} (role group {name:?}, ordinal {servers}) to the ensemble; \
                     the other servers restart one at a time to take the new membership."
                ),
            }),
        };
    }
    let shrink = membership.iter().find_map(|(name, group)| {
        let wanted = desired.get(name).map_or(0, |wanted| wanted.servers);
        (group.members.servers > wanted).then(|| (name.clone(), group.members))
    });
    if let Some((name, members)) = shrink {
        let ordinal = members.servers - 1;
        let id = members.myid_offset + u32::from(ordinal);
        if ordinal == 0 {
            membership.remove(&name);
        } else if let Some(group) = membership.get_mut(&name) {
            group.members.servers = ordinal;
        }
        return Plan {
            membership,
            restart: None,
            progress: Some(Progress {
                reason: ProgressReason::RemovingServer,
                message: format!(
                    "Removing server {id} (role group {name:?}, ordinal {ordinal}) from the \
                     ensemble; its volume is kept, and the other servers restart one at a time \
                     to take the new membership."
                ),
            }),
        };
    }
    Plan {
        membership,
        restart: None,
        progress: None,
    }
}

#[cfg(test)]
mod tests;
