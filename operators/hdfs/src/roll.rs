//! The roll order: which pod the operator restarts next after a template change.
//!
//! HDFS restarts safely in one order only: the journalnodes (the edit log keeps its
//! majority while one restarts), then the namenodes, standby first (so the cluster
//! fails over once at most), then the datanodes. Each role finishes, every pod current
//! and Ready, before the next one starts, and one pod restarts at a time. A pod that is
//! down on an older template restarts at once: it serves nothing, and the new template
//! may be the fix.

use std::collections::BTreeMap;

use strata_operator::roll::PodRollState;
use strata_status::Reason;

use crate::crd::HdfsRole;

/// The pods of one role group, read from the watch caches.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupPods {
    /// The StatefulSet's name.
    pub name: String,
    /// The group's role.
    pub role: HdfsRole,
    /// Whether the StatefulSet controller has seen the latest template, so `current`
    /// means something.
    pub template_observed: bool,
    /// The StatefulSet's `spec.replicas`: an ordinal below it without a pod is a pod
    /// being recreated, which the roll waits for like a pod that is not Ready.
    pub replicas: u32,
    /// Its pods by ordinal.
    pub pods: BTreeMap<u32, PodRollState>,
}

impl GroupPods {
    /// The first ordinal below `replicas` that has no pod.
    fn missing(&self) -> Option<u32> {
        (0..self.replicas).find(|ordinal| !self.pods.contains_key(ordinal))
    }
}

/// The next step of a roll.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RollStep {
    /// The pod to delete now, if any.
    pub restart: Option<String>,
    /// What the Progressing condition says while the roll runs.
    pub reason: Reason,
    /// Which pod restarts, or what the roll waits for.
    pub message: String,
}

/// The Progressing reason of a roll of `role`.
pub fn rolling_reason(role: HdfsRole) -> Reason {
    match role {
        HdfsRole::JournalNode => strata_status::reason!("RollingJournalNodes"),
        HdfsRole::NameNode => strata_status::reason!("RollingNameNodes"),
        HdfsRole::DataNode => strata_status::reason!("RollingDataNodes"),
    }
}

/// The next step towards every pod running its latest template, or `None` when every
/// pod does (or the StatefulSet controller has not caught up yet). `active_namenode`
/// is the id (pod name) of the active namenode, when known; it restarts last.
pub fn next_step(
    groups: &[GroupPods],
    roll_order: [HdfsRole; 3],
    active_namenode: Option<&str>,
) -> Option<RollStep> {
    if groups.iter().any(|group| !group.template_observed) {
        return None;
    }
    let outdated_later = |index: usize| {
        roll_order[index + 1..]
            .iter()
            .any(|role| pods_of(groups, *role).any(|pod| !pod.current && !pod.terminating))
    };
    for (index, role) in roll_order.into_iter().enumerate() {
        let pods: Vec<&PodRollState> = pods_of(groups, role).collect();
        let outdated: Vec<&PodRollState> = pods
            .iter()
            .copied()
            .filter(|pod| !pod.current && !pod.terminating)
            .collect();
        let busy = pods
            .iter()
            .find(|pod| pod.terminating || (pod.current && !pod.ready))
            .map(|pod| pod.name.clone())
            .or_else(|| missing_pod(groups, role));
        if outdated.is_empty() {
            match busy {
                Some(pod) if outdated_later(index) => return Some(waiting(role, &pod)),
                _ => continue,
            }
        }
        if let Some(pod) = busy {
            return Some(waiting(role, &pod));
        }
        // A pod that is down first (the active last even then: restarting it first
        // would wait for a standby that is down too), then the others, the active last.
        let next = outdated
            .iter()
            .find(|pod| !pod.ready && Some(pod.name.as_str()) != active_namenode)
            .or_else(|| {
                outdated
                    .iter()
                    .find(|pod| Some(pod.name.as_str()) != active_namenode)
            })
            .or_else(|| outdated.first())?;
        let remaining = outdated.len();
        return Some(RollStep {
            restart: Some(next.name.clone()),
            reason: rolling_reason(role),
            message: format!(
                "restarting {role} {} onto the latest template ({remaining} of {} {role}s \
                 still to restart; then the roles after it)",
                next.name,
                pods.len()
            ),
        });
    }
    None
}

fn pods_of(groups: &[GroupPods], role: HdfsRole) -> impl Iterator<Item = &PodRollState> {
    groups
        .iter()
        .filter(move |group| group.role == role)
        .flat_map(|group| group.pods.values())
}

/// `<statefulset>-<ordinal>` of the first missing pod of `role`, named after an
/// existing pod of its group (the group's StatefulSet name is the pod names' prefix).
fn missing_pod(groups: &[GroupPods], role: HdfsRole) -> Option<String> {
    groups
        .iter()
        .filter(|group| group.role == role)
        .find_map(|group| {
            let ordinal = group.missing()?;
            Some(format!("{} (ordinal {ordinal})", group.name))
        })
}

fn waiting(role: HdfsRole, pod: &str) -> RollStep {
    RollStep {
        restart: None,
        reason: rolling_reason(role),
        message: format!("waiting for {role} {pod} to be Ready before the roll goes on"),
    }
}

#[cfg(test)]
mod tests;
