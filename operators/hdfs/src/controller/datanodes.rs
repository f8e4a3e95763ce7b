//! What the reconcile reads about the datanodes before a scale-down: the groups as the
//! decommission planner sees them and the exclude list applied last.

use k8s_openapi::api::core::v1::ConfigMap;
use strata_model::labels::COMPONENT_LABEL;
use strata_operator::cache::ChildCaches;
use strata_operator::roll::StatefulSetPods;

use crate::build::config_map::{EXCLUDED_DATANODES_KEY, namenode_state_name};
use crate::crd::HdfsRole;
use crate::decommission::DataNodeGroup;
use crate::validate::ValidatedCluster;

/// Whether `set` runs `role`'s daemons, by its component label.
pub fn runs_role(set: &StatefulSetPods, role: HdfsRole) -> bool {
    set.stateful_set
        .metadata
        .labels
        .as_ref()
        .and_then(|labels| labels.get(COMPONENT_LABEL))
        .is_some_and(|component| component == role.daemon())
}

/// The datanode role groups as the decommission planner sees them: the spec's
/// replicas, the StatefulSet's, and which pods still exist.
pub fn datanode_groups(
    validated: &ValidatedCluster,
    running: &[StatefulSetPods],
) -> Vec<DataNodeGroup> {
    validated
        .role(HdfsRole::DataNode)
        .map(|role| {
            role.groups
                .iter()
                .map(|group| {
                    let set = running
                        .iter()
                        .find(|set| set.name() == group.name.object_name());
                    DataNodeGroup {
                        name: group.name.clone(),
                        replicas: group.replicas,
                        current_replicas: set.and_then(|set| {
                            set.stateful_set
                                .spec
                                .replicas
                                .and_then(|replicas| u16::try_from(replicas).ok())
                        }),
                        pods: set
                            .map(|set| {
                                set.pods_by_ordinal()
                                    .into_keys()
                                    .filter_map(|ordinal| u16::try_from(ordinal).ok())
                                    .collect()
                            })
                            .unwrap_or_default(),
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The exclude list the operator applied last, from the cached namenode state ConfigMap.
pub fn recorded_exclusions(caches: &ChildCaches, validated: &ValidatedCluster) -> Vec<String> {
    caches
        .get_typed::<ConfigMap>(
            &validated.identity.namespace,
            &namenode_state_name(validated),
        )
        .and_then(|config_map| config_map.data)
        .and_then(|data| data.get(EXCLUDED_DATANODES_KEY).cloned())
        .map(|hosts| {
            hosts
                .lines()
                .map(str::to_owned)
                .filter(|host| !host.is_empty())
                .collect()
        })
        .unwrap_or_default()
}
