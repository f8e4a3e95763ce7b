//! Specs that would give servers with data a new identity, or hand their ids to new,
//! empty servers, are refused before anything is planned.

use std::collections::BTreeMap;
use std::fmt;

use super::{DesiredMembership, ObservedGroup};

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

/// Refuses specs that would give servers with data a new identity or hand their ids to
/// new, empty servers.
pub(super) fn check_identities(
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
