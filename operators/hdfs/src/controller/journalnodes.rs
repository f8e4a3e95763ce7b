//! What the reconcile reads about the journalnodes before a change to the quorum: the
//! set the namenodes are known to write to, the set the spec asks for, and whether
//! every namenode runs on the latter yet ([`crate::journal`]).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::ConfigMap;
use strata_operator::cache::ChildCaches;
use strata_operator::roll::StatefulSetPods;

use strata_model::build::CONFIG_HASH_ANNOTATION;

use super::datanodes::runs_role;
use crate::build::config_map::{JOURNAL_NODES_KEY, namenode_state_name};
use crate::build::role_group_objects;
use crate::crd::HdfsRole;
use crate::journal::JournalNodes;
use crate::validate::ValidatedCluster;

/// The journalnode hosts the namenodes are known to write to: the namenode state
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

/// The journalnodes to record: the spec's once every namenode runs on them (or for a
/// new cluster), the previous ones until then. So a second change during the roll, or
/// while the cluster is stopped, is checked against the quorum the namenodes really
/// wrote to: 3 → 2 and then 2 → 1 before the roll is 3 → 1, and refused.
pub fn to_record(
    previous: &BTreeSet<String>,
    next: &JournalNodes,
    namenodes_on_next: bool,
) -> Vec<String> {
    let recorded = if previous.is_empty() || namenodes_on_next {
        &next.hosts
    } else {
        previous
    };
    recorded.iter().cloned().collect()
}

/// Whether every namenode runs on the configuration this reconcile builds: each
/// namenode StatefulSet's template carries the desired config hash (the one of the
/// `hdfs-site.xml` with the spec's quorum), the StatefulSet controller has seen it,
/// and every pod runs it and is Ready. A stopped cluster's namenodes run nothing.
pub fn namenodes_run_on_spec(validated: &ValidatedCluster, running: &[StatefulSetPods]) -> bool {
    let Some(role) = validated.role(HdfsRole::NameNode) else {
        return false;
    };
    role.groups.iter().all(|group| {
        let desired = role_group_objects(validated, role, group).stateful_set;
        let config_hash = |template: &k8s_openapi::api::core::v1::PodTemplateSpec| {
            template
                .metadata
                .as_ref()
                .and_then(|metadata| metadata.annotations.as_ref())
                .and_then(|annotations| annotations.get(CONFIG_HASH_ANNOTATION))
                .cloned()
        };
        let Some(set) = running
            .iter()
            .find(|set| set.name() == group.name.object_name())
        else {
            return false;
        };
        let replicas = set.stateful_set.spec.replicas.unwrap_or(1);
        let pods = set.pods_by_ordinal();
        set.template_observed()
            && config_hash(&set.stateful_set.spec.template) == config_hash(&desired.spec.template)
            && replicas > 0
            && pods.len() == usize::try_from(replicas).unwrap_or(usize::MAX)
            && pods.values().all(|pod| pod.current && pod.ready)
    })
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn set(hosts: &[&str]) -> BTreeSet<String> {
        hosts.iter().map(|host| (*host).to_owned()).collect()
    }

    #[rstest]
    #[case::a_new_cluster_records_the_spec(&[], &["jn-0", "jn-1", "jn-2"], false, &["jn-0", "jn-1", "jn-2"])]
    #[case::a_change_the_namenodes_do_not_run_yet(&["jn-0", "jn-1", "jn-2"], &["jn-0", "jn-1"], false, &["jn-0", "jn-1", "jn-2"])]
    #[case::a_change_every_namenode_runs(&["jn-0", "jn-1", "jn-2"], &["jn-0", "jn-1"], true, &["jn-0", "jn-1"])]
    fn a_journal_set_is_recorded_once_the_namenodes_run_on_it(
        #[case] previous: &[&str],
        #[case] next: &[&str],
        #[case] namenodes_on_next: bool,
        #[case] recorded: &[&str],
    ) {
        let next = JournalNodes {
            hosts: set(next),
            groups: BTreeSet::new(),
        };
        assert_eq!(
            to_record(&set(previous), &next, namenodes_on_next),
            recorded
                .iter()
                .map(|host| (*host).to_owned())
                .collect::<Vec<_>>()
        );
    }
}
