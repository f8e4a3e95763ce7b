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

mod observe;

use std::collections::BTreeMap;
use std::fmt;

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

/// Why the planner refuses to go on; nothing is applied until the spec changes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// A role group would start empty servers with ids that servers of another group,
    /// with data, still hold: typically a renamed role group.
    #[error(
        "role group {role_group:?} would use server ids {ids} that the servers of role group \
         {holder:?} still hold; renaming a role group is not supported, because its new, empty \
         servers would claim the identities of servers with data. Keep the old name, or give \
         the new group a myidOffset whose ids are free, so the old group's servers leave the \
         ensemble one at a time"
    )]
    IdsInUse {
        /// The group in the spec.
        role_group: String,
        /// The group whose servers hold the ids.
        holder: String,
        /// The ids both claim.
        ids: IdList,
    },
    /// A group's servers would switch between voting and observing. Doing that
    /// server by server could leave two disjoint majorities under the old and the new
    /// voter sets.
    #[error(
        "role group {role_group:?} runs servers as {running}, but the spec asks for {requested}; \
         a running group cannot change its peerType. Add a new role group with the new \
         peerType and free ids, and remove this one, so servers join and leave one at a time"
    )]
    PeerTypeChanged {
        /// The group.
        role_group: String,
        /// What its servers are.
        running: &'static str,
        /// What the spec asks for.
        requested: &'static str,
    },
    /// A group's servers would change their ids, which their data directories record.
    #[error(
        "role group {role_group:?} runs servers with myidOffset {running}, but the spec asks \
         for {requested}; a server's id is written into its data and cannot change. Set \
         myidOffset back to {running}"
    )]
    MyidOffsetChanged {
        /// The group.
        role_group: String,
        /// The offset its servers run with.
        running: u32,
        /// The offset the spec asks for.
        requested: u32,
    },
}

impl PlanError {
    /// The Degraded reason.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::IdsInUse { .. } => "ServerIdsInUse",
            Self::MyidOffsetChanged { .. } => "MyidOffsetChanged",
            Self::PeerTypeChanged { .. } => "PeerTypeChanged",
        }
    }
}

/// Server ids for messages: `2, 3`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdList(pub Vec<u32>);

impl fmt::Display for IdList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<String> = self.0.iter().map(u32::to_string).collect();
        f.write_str(&ids.join(", "))
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

/// Refuses specs that would give servers with data a new identity or hand their ids to
/// new, empty servers.
fn check_identities(
    desired: &DesiredMembership,
    observed: &BTreeMap<String, ObservedGroup>,
) -> Result<(), PlanError> {
    for (name, wanted) in desired {
        for (holder, group) in observed {
            if group.members.servers == 0 {
                continue;
            }
            if holder == name {
                if group.members.myid_offset != wanted.myid_offset {
                    return Err(PlanError::MyidOffsetChanged {
                        role_group: name.clone(),
                        running: group.members.myid_offset,
                        requested: wanted.myid_offset,
                    });
                }
                if group.members.observer != wanted.observer {
                    let peer_type = |observer| if observer { "observer" } else { "participant" };
                    return Err(PlanError::PeerTypeChanged {
                        role_group: name.clone(),
                        running: peer_type(group.members.observer),
                        requested: peer_type(wanted.observer),
                    });
                }
                continue;
            }
            let ids: Vec<u32> = wanted
                .ids()
                .filter(|id| group.members.ids().any(|held| held == *id))
                .collect();
            if !ids.is_empty() {
                return Err(PlanError::IdsInUse {
                    role_group: name.clone(),
                    holder: holder.clone(),
                    ids: IdList(ids),
                });
            }
        }
    }
    Ok(())
}

/// A member pod whose template is out of date.
#[derive(Clone, Debug)]
struct StalePod {
    id: u32,
    name: String,
}

/// The members' pods, sorted into what the next step waits for.
#[derive(Debug, Default)]
struct Health {
    /// StatefulSets whose controller has not seen the latest template.
    unobserved: Vec<String>,
    /// Members that are down (not running, not terminating) on an older template.
    stale_down: Vec<StalePod>,
    /// Members whose pod is missing, terminating or not running.
    absent: Vec<String>,
    /// Pods above the membership that are still going.
    leaving: Vec<String>,
    /// Members (other than a joining server) that are not ready.
    unready: Vec<String>,
    /// Members from an older template that are not ready. Once others took the new
    /// membership, such a server may never find a quorum under its old one.
    stale_unready: Vec<String>,
    /// Pod names of the ready members.
    ready: Vec<String>,
    /// Servers in the membership.
    members: usize,
    /// A joining server that is not ready yet; the step is complete only once it is.
    joining_unready: Vec<String>,
    /// Members from an older template, the leader first, then by ascending server id;
    /// the next restart is the last one.
    stale: Vec<StalePod>,
}

impl Health {
    fn of(observed: &BTreeMap<String, ObservedGroup>, leader: Option<u32>) -> Self {
        let mut health = Self::default();
        for (name, group) in observed {
            if !group.template_observed {
                health.unobserved.push(name.clone());
            }
            let members = u32::from(group.members.servers);
            health.members += usize::from(group.members.servers);
            for (ordinal, pod) in &group.pods {
                if *ordinal >= members {
                    health.leaving.push(pod.name.clone());
                }
            }
            for ordinal in 0..members {
                let id = group.members.myid_offset + ordinal;
                let Some(pod) = group.pods.get(&ordinal) else {
                    health.absent.push(format!("server {id} (no pod yet)"));
                    continue;
                };
                if !pod.terminating && !pod.running && !pod.current {
                    // Down on an older template: restarting it costs nothing, and it
                    // is the only way out when that template is what broke it.
                    health.stale_down.push(StalePod {
                        id,
                        name: pod.name.clone(),
                    });
                    continue;
                }
                if pod.terminating || !pod.running {
                    health
                        .absent
                        .push(format!("server {id} (pod {})", pod.name));
                    continue;
                }
                if pod.ready {
                    health.ready.push(pod.name.clone());
                } else {
                    let server = format!("server {id} (pod {})", pod.name);
                    if group.joining == Some(id) {
                        health.joining_unready.push(server);
                    } else if pod.current {
                        health.unready.push(server);
                    } else {
                        health.stale_unready.push(server);
                    }
                }
                if !pod.current {
                    health.stale.push(StalePod {
                        id,
                        name: pod.name.clone(),
                    });
                }
            }
        }
        // The restart takes the last: the highest id, the leader after every other.
        health
            .stale
            .sort_by_key(|pod| (Some(pod.id) != leader, pod.id));
        health
    }

    fn waiting_for_pods(&self) -> Option<String> {
        if !self.unobserved.is_empty() {
            return Some(format!(
                "Waiting for the StatefulSet controller to observe the new template of {}.",
                self.unobserved.join(", ")
            ));
        }
        if !self.leaving.is_empty() {
            return Some(format!(
                "Waiting for pod {} to leave before the remaining servers restart.",
                self.leaving.join(", ")
            ));
        }
        (!self.absent.is_empty()).then(|| {
            format!(
                "Waiting for {} to run before the next step.",
                self.absent.join(", ")
            )
        })
    }

    /// Members that are not ready, the stale ones included.
    fn waiting_for_readiness(&self) -> Option<String> {
        let unready: Vec<&str> = self
            .unready
            .iter()
            .chain(&self.stale_unready)
            .map(String::as_str)
            .collect();
        (!unready.is_empty()).then(|| {
            format!(
                "Waiting for {} to be ready (in a quorum) before the next step.",
                unready.join(", ")
            )
        })
    }

    /// Whether `next` may restart now, so that every restart leaves a quorum where
    /// the membership tolerates one server down:
    ///
    /// - every member already on the latest template is ready (the previous restart
    ///   came back), and
    /// - the ready members other than `next` are a majority of the membership, or all
    ///   the others when the membership has only one or two servers.
    ///
    /// A server that joins a one-server ensemble counts as ready: the old server runs
    /// standalone, so the new one cannot be ready before the old one restarts onto the
    /// two-server membership. A member still on the old template may be unready: once
    /// others restarted onto a larger membership, it can lose its quorum for good, and
    /// only its own restart brings it back.
    fn waiting_for_restart_of(&self, next: &StalePod) -> Option<String> {
        if !self.unready.is_empty() {
            return self.waiting_for_readiness();
        }
        let mut others_ready = self.ready.iter().filter(|pod| **pod != next.name).count();
        if self.members == 2 {
            others_ready += self.joining_unready.len();
        }
        let needed = (self.members / 2 + 1).min(self.members.saturating_sub(1));
        (others_ready < needed).then(|| {
            let unready: Vec<&str> = self
                .stale_unready
                .iter()
                .chain(&self.joining_unready)
                .map(String::as_str)
                .collect();
            format!(
                "Waiting for {} to be ready (in a quorum) before restarting server {}: \
                 {others_ready} other servers are ready, {needed} are needed.",
                unready.join(", "),
                next.id
            )
        })
    }

    fn waiting_for_joining(&self) -> Option<String> {
        (!self.joining_unready.is_empty()).then(|| {
            format!(
                "Waiting for the added {} to join the quorum.",
                self.joining_unready.join(", ")
            )
        })
    }
}

#[cfg(test)]
mod tests;
