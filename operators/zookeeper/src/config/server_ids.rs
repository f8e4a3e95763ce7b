//! Server ids (`myid`) for every replica of every role group, and the validation that keeps
//! them unique.
//!
//! Each role group is a StatefulSet whose pod `<statefulset>-<ordinal>` becomes ZooKeeper
//! server `myidOffset + ordinal`. Role groups therefore occupy the id range
//! `[myidOffset, myidOffset + replicas)`, and two groups whose ranges overlap would make two
//! pods claim the same identity in the quorum, which ZooKeeper cannot detect by itself.

use std::fmt;

/// The highest server id ZooKeeper accepts: the id is packed into the top byte of every
/// session id, so ids above 255 would produce colliding sessions.
pub const MAX_SERVER_ID: u32 = 255;

/// The highest server id when `extendedTypesEnabled=true` (TTL nodes): ZooKeeper reserves the
/// top id value for the extended session id layout and refuses to start with 255.
pub const MAX_SERVER_ID_WITH_EXTENDED_TYPES: u32 = 254;

/// How a role group's pods are addressed in cluster DNS, so that every server line names a
/// stable host that survives pod restarts (unlike pod IPs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodDns {
    /// Name of the role group's StatefulSet; pods are named `<statefulset>-<ordinal>`.
    pub statefulset: String,
    /// The headless Service the StatefulSet names in `serviceName`.
    pub service: String,
    /// Namespace of the pods.
    pub namespace: String,
    /// Cluster DNS domain, usually `cluster.local`.
    pub cluster_domain: String,
}

impl PodDns {
    /// The pod's name for a given ordinal, which is also its `HOSTNAME` inside the pod
    /// (the myid init script derives the ordinal from it).
    pub fn pod_name(&self, ordinal: u32) -> String {
        format!("{}-{ordinal}", self.statefulset)
    }

    /// The fully qualified name Kubernetes publishes for a StatefulSet pod through its
    /// headless Service: `<pod>.<service>.<namespace>.svc.<cluster domain>`.
    pub fn pod_fqdn(&self, ordinal: u32) -> String {
        format!(
            "{}.{}.{}.svc.{}",
            self.pod_name(ordinal),
            self.service,
            self.namespace,
            self.cluster_domain
        )
    }
}

/// One role group as far as server ids are concerned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleGroupServers {
    /// Role group name, used in error messages.
    pub role_group: String,
    /// Desired replicas of the group's StatefulSet.
    pub replicas: u32,
    /// Server id of the group's pod with ordinal 0.
    pub myid_offset: u32,
    /// Whether the group's servers are observers (non-voting).
    pub observer: bool,
    /// How the group's pods are reached.
    pub pod_dns: PodDns,
}

impl RoleGroupServers {
    /// The first id after the group's range (exclusive end), computed without overflow.
    fn id_end(&self) -> u64 {
        u64::from(self.myid_offset) + u64::from(self.replicas)
    }
}

/// A validated ZooKeeper server id, known to be within `1..=MAX_SERVER_ID`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServerId(u32);

impl ServerId {
    /// The numeric id as written to `myid` and into `server.N`.
    pub fn get(self) -> u32 {
        self.0
    }
}

impl fmt::Display for ServerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// One replica of one role group with its validated id and address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Server {
    /// The server's `myid`.
    pub id: ServerId,
    /// The role group the pod belongs to.
    pub role_group: String,
    /// The pod's StatefulSet ordinal.
    pub ordinal: u32,
    /// The pod's DNS name, used in the `server.N` line.
    pub fqdn: String,
    /// Whether the server is an observer (non-voting).
    pub observer: bool,
}

/// Why a set of role groups cannot form one ensemble.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServerIdError {
    /// ZooKeeper ids start at 1; id 0 is not a valid `myid`.
    #[error("role group {role_group:?} has myidOffset 0, but ZooKeeper server ids start at 1")]
    OffsetZero {
        /// The offending role group.
        role_group: String,
    },
    /// The group's range reaches past the id limit.
    #[error(
        "role group {role_group:?} would use server ids up to {highest} (myidOffset {myid_offset} \
         plus {replicas} replicas), above ZooKeeper's limit of {limit}"
    )]
    AboveLimit {
        /// The offending role group.
        role_group: String,
        /// Its configured offset.
        myid_offset: u32,
        /// Its configured replicas.
        replicas: u32,
        /// The highest id the group would use.
        highest: u64,
        /// The limit in force.
        limit: u32,
    },
    /// Two groups would hand out the same ids.
    #[error(
        "role groups {first:?} and {second:?} would both use server ids {}; give them \
         myidOffsets whose ranges [myidOffset, myidOffset + replicas) do not overlap",
        join_ids(ids)
    )]
    Overlap {
        /// The alphabetically first of the two groups.
        first: String,
        /// The alphabetically second of the two groups.
        second: String,
        /// The shared ids, ascending.
        ids: Vec<u32>,
    },
}

fn join_ids(ids: &[u32]) -> String {
    ids.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every server of the ensemble with unique, valid ids, sorted by id.
///
/// Constructing one is the validation: holding an `Ensemble` proves the `server.N` lines and
/// the `myid` files derived from it cannot collide.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ensemble {
    servers: Vec<Server>,
}

impl Ensemble {
    /// Validates the role groups' id ranges against `limit` (see [`MAX_SERVER_ID`]) and lists
    /// their servers. Errors are reported for the alphabetically first offending group or pair,
    /// so the same spec always yields the same message.
    pub fn new(groups: &[RoleGroupServers], limit: u32) -> Result<Self, ServerIdError> {
        let mut sorted: Vec<&RoleGroupServers> = groups.iter().collect();
        sorted.sort_by(|a, b| a.role_group.cmp(&b.role_group));

        for group in &sorted {
            check_range(group, limit)?;
        }
        for (index, first) in sorted.iter().enumerate() {
            for second in &sorted[index + 1..] {
                check_overlap(first, second)?;
            }
        }

        let mut servers: Vec<Server> = sorted
            .iter()
            .flat_map(|group| {
                (0..group.replicas).map(move |ordinal| Server {
                    id: ServerId(group.myid_offset + ordinal),
                    role_group: group.role_group.clone(),
                    ordinal,
                    fqdn: group.pod_dns.pod_fqdn(ordinal),
                    observer: group.observer,
                })
            })
            .collect();
        servers.sort_by_key(|server| server.id);
        Ok(Self { servers })
    }

    /// The servers in ascending id order.
    pub fn servers(&self) -> &[Server] {
        &self.servers
    }
}

fn check_range(group: &RoleGroupServers, limit: u32) -> Result<(), ServerIdError> {
    if group.myid_offset == 0 {
        return Err(ServerIdError::OffsetZero {
            role_group: group.role_group.clone(),
        });
    }
    let highest = group.id_end().saturating_sub(1);
    if group.replicas > 0 && highest > u64::from(limit) {
        return Err(ServerIdError::AboveLimit {
            role_group: group.role_group.clone(),
            myid_offset: group.myid_offset,
            replicas: group.replicas,
            highest,
            limit,
        });
    }
    Ok(())
}

fn check_overlap(first: &RoleGroupServers, second: &RoleGroupServers) -> Result<(), ServerIdError> {
    let start = first.myid_offset.max(second.myid_offset);
    let end = first.id_end().min(second.id_end());
    if u64::from(start) >= end {
        return Ok(());
    }
    // Both ranges passed `check_range`, so every shared id is at most the limit (a u32).
    let ids = (u64::from(start)..end)
        .filter_map(|id| u32::try_from(id).ok())
        .collect();
    Err(ServerIdError::Overlap {
        first: first.role_group.clone(),
        second: second.role_group.clone(),
        ids,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use pretty_assertions::assert_eq;
    use rstest::rstest;

    use super::*;

    pub(crate) fn group(name: &str, replicas: u32, myid_offset: u32) -> RoleGroupServers {
        RoleGroupServers {
            role_group: name.to_owned(),
            replicas,
            myid_offset,
            observer: false,
            pod_dns: PodDns {
                statefulset: format!("zk-server-{name}"),
                service: format!("zk-server-{name}"),
                namespace: "ns".to_owned(),
                cluster_domain: "cluster.local".to_owned(),
            },
        }
    }

    fn ids(ensemble: &Ensemble) -> Vec<u32> {
        ensemble.servers().iter().map(|s| s.id.get()).collect()
    }

    #[rstest]
    #[case::single_group_of_three(vec![group("default", 3, 1)], vec![1, 2, 3])]
    #[case::adjacent_groups(vec![group("a", 2, 1), group("b", 3, 3)], vec![1, 2, 3, 4, 5])]
    #[case::gap_between_groups(vec![group("b", 1, 10), group("a", 2, 1)], vec![1, 2, 10])]
    #[case::group_listed_later_has_lower_ids(vec![group("a", 2, 5), group("b", 2, 1)], vec![1, 2, 5, 6])]
    #[case::scaled_to_zero_overlaps_nothing(vec![group("a", 3, 1), group("b", 0, 2)], vec![1, 2, 3])]
    #[case::up_to_the_limit(vec![group("a", 5, 251)], vec![251, 252, 253, 254, 255])]
    #[case::no_groups(vec![], vec![])]
    fn valid_groups_yield_sorted_ids(
        #[case] groups: Vec<RoleGroupServers>,
        #[case] expected: Vec<u32>,
    ) -> Result<(), ServerIdError> {
        let ensemble = Ensemble::new(&groups, MAX_SERVER_ID)?;
        assert_eq!(ids(&ensemble), expected);
        Ok(())
    }

    #[rstest]
    #[case::offset_zero(
        vec![group("default", 3, 0)],
        MAX_SERVER_ID,
        "role group \"default\" has myidOffset 0, but ZooKeeper server ids start at 1"
    )]
    #[case::offset_zero_even_when_scaled_to_zero(
        vec![group("idle", 0, 0)],
        MAX_SERVER_ID,
        "role group \"idle\" has myidOffset 0, but ZooKeeper server ids start at 1"
    )]
    #[case::one_past_the_limit(
        vec![group("big", 6, 251)],
        MAX_SERVER_ID,
        "role group \"big\" would use server ids up to 256 (myidOffset 251 plus 6 replicas), \
         above ZooKeeper's limit of 255"
    )]
    #[case::limit_254_with_extended_types(
        vec![group("ttl", 1, 255)],
        MAX_SERVER_ID_WITH_EXTENDED_TYPES,
        "role group \"ttl\" would use server ids up to 255 (myidOffset 255 plus 1 replicas), \
         above ZooKeeper's limit of 254"
    )]
    #[case::huge_offset_does_not_overflow(
        vec![group("huge", u32::MAX, u32::MAX)],
        MAX_SERVER_ID,
        "role group \"huge\" would use server ids up to 8589934589 (myidOffset 4294967295 plus \
         4294967295 replicas), above ZooKeeper's limit of 255"
    )]
    #[case::same_offset(
        vec![group("b", 3, 1), group("a", 3, 1)],
        MAX_SERVER_ID,
        "role groups \"a\" and \"b\" would both use server ids 1, 2, 3; give them myidOffsets \
         whose ranges [myidOffset, myidOffset + replicas) do not overlap"
    )]
    #[case::partial_overlap(
        vec![group("primary", 3, 1), group("secondary", 2, 3)],
        MAX_SERVER_ID,
        "role groups \"primary\" and \"secondary\" would both use server ids 3; give them \
         myidOffsets whose ranges [myidOffset, myidOffset + replicas) do not overlap"
    )]
    #[case::range_inside_another(
        vec![group("outer", 10, 1), group("inner", 2, 4)],
        MAX_SERVER_ID,
        "role groups \"inner\" and \"outer\" would both use server ids 4, 5; give them \
         myidOffsets whose ranges [myidOffset, myidOffset + replicas) do not overlap"
    )]
    #[case::first_pair_alphabetically_is_reported(
        vec![group("c", 2, 1), group("b", 2, 1), group("a", 2, 1)],
        MAX_SERVER_ID,
        "role groups \"a\" and \"b\" would both use server ids 1, 2; give them myidOffsets \
         whose ranges [myidOffset, myidOffset + replicas) do not overlap"
    )]
    fn invalid_groups_are_rejected_with_a_clear_message(
        #[case] groups: Vec<RoleGroupServers>,
        #[case] limit: u32,
        #[case] message: &str,
    ) {
        let result = Ensemble::new(&groups, limit).map_err(|e| e.to_string());
        assert_eq!(result, Err(message.to_owned()));
    }

    #[test]
    fn servers_carry_role_group_ordinal_and_pod_fqdn() -> Result<(), ServerIdError> {
        let ensemble = Ensemble::new(&[group("default", 2, 7)], MAX_SERVER_ID)?;
        let last = ensemble.servers().last().cloned();
        assert_eq!(
            last,
            Some(Server {
                id: ServerId(8),
                role_group: "default".to_owned(),
                ordinal: 1,
                fqdn: "zk-server-default-1.zk-server-default.ns.svc.cluster.local".to_owned(),
                observer: false,
            })
        );
        Ok(())
    }
}
