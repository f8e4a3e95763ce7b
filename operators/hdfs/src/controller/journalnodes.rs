//! What the reconcile reads about the journalnodes before a change to the quorum: the
//! set the operator applied last, and the set the spec asks for ([`crate::journal`]).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::ConfigMap;
use strata_operator::cache::ChildCaches;
use strata_operator::roll::StatefulSetPods;

use super::datanodes::runs_role;
use crate::build::config_map::{JOURNAL_NODES_KEY, namenode_state_name};
use crate::crd::HdfsRole;
use crate::journal::JournalNodes;
use crate::validate::ValidatedCluster;

/// The journalnode hosts the namenodes were last given: the namenode state
/// ConfigMap's `journalnodes` key, which a stopped cluster keeps. A cluster whose
/// ConfigMap predates the key falls back to its running journalnode StatefulSets.
pub fn previous(
    caches: &ChildCaches,
    validated: &ValidatedCluster,
    running: &[StatefulSetPods],
    cluster_domain: &str,
) -> BTreeSet<String> {
    let recorded = caches
        .get_typed::<ConfigMap>(
            &validated.identity.namespace,
            &namenode_state_name(validated),
        )
        .and_then(|config_map| config_map.data)
        .and_then(|data| data.get(JOURNAL_NODES_KEY).cloned());
    if let Some(recorded) = recorded {
        return recorded
            .lines()
            .filter(|host| !host.is_empty())
            .map(str::to_owned)
            .collect();
    }
    running
        .iter()
        .filter(|set| runs_role(set, HdfsRole::JournalNode))
        .flat_map(|set| {
            let name = set.name();
            let replicas = set.stateful_set.spec.replicas.unwrap_or(1).max(0);
            let namespace = &validated.identity.namespace;
            (0..replicas).map(move |ordinal| {
                format!("{name}-{ordinal}.{name}.{namespace}.svc.{cluster_domain}")
            })
        })
        .collect()
}

/// The journalnodes the spec asks for: the quorum's hosts and every journalnode
/// role group's StatefulSet.
pub fn next(validated: &ValidatedCluster) -> JournalNodes {
    JournalNodes {
        hosts: validated.topology.journalnodes.iter().cloned().collect(),
        groups: validated
            .role(HdfsRole::JournalNode)
            .map(|role| {
                role.groups
                    .iter()
                    .map(|group| group.name.object_name().to_owned())
                    .collect()
            })
            .unwrap_or_default(),
    }
}
