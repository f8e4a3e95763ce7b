//! Reads the recorded membership and the pods of each role group's StatefulSet.

use std::collections::BTreeMap;

use strata_model::labels::ROLE_GROUP_LABEL;
use strata_operator::roll::StatefulSetPods;

use super::{
    DesiredMembership, GroupMembers, JOINING_ANNOTATION, MYID_OFFSET_ANNOTATION, ObservedGroup,
    PEER_TYPE_ANNOTATION, SERVERS_ANNOTATION,
};

/// The role groups the operator runs, by role-group label.
///
/// A StatefulSet without the membership annotations was written by an operator version
/// that did not record them: its servers are taken to be its `spec.replicas`, with the
/// offset the spec asks for (else 1), which is what that version ran.
pub fn observe_role_groups(
    stateful_sets: &[StatefulSetPods],
    desired: &DesiredMembership,
) -> BTreeMap<String, ObservedGroup> {
    stateful_sets
        .iter()
        .filter_map(|observed| {
            let role_group = observed
                .stateful_set
                .metadata
                .labels
                .as_ref()?
                .get(ROLE_GROUP_LABEL)?
                .clone();
            let number = |key| {
                observed
                    .annotation(key)
                    .and_then(|value| value.parse().ok())
            };
            let replicas = observed
                .stateful_set
                .spec
                .replicas
                .and_then(|replicas| u16::try_from(replicas).ok())
                .unwrap_or(1);
            let members = GroupMembers {
                myid_offset: number(MYID_OFFSET_ANNOTATION)
                    .or_else(|| desired.get(&role_group).map(|group| group.myid_offset))
                    .unwrap_or(1),
                servers: number(SERVERS_ANNOTATION)
                    .and_then(|servers: u32| u16::try_from(servers).ok())
                    .unwrap_or(replicas),
                observer: observed.annotation(PEER_TYPE_ANNOTATION) == Some("observer"),
            };
            Some((
                role_group,
                ObservedGroup {
                    members,
                    joining: number(JOINING_ANNOTATION),
                    template_observed: observed.template_observed(),
                    pods: observed.pods_by_ordinal(),
                },
            ))
        })
        .collect()
}
