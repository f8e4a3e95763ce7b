//! The members' pods, sorted into what the next step waits for, and the rule that
//! says whether the next restart may happen.

use std::collections::BTreeMap;

use super::ObservedGroup;

/// A member pod whose template is out of date.
#[derive(Clone, Debug)]
pub(super) struct StalePod {
    pub(super) id: u32,
    pub(super) name: String,
}

/// The members' pods, sorted into what the next step waits for.
#[derive(Debug, Default)]
pub(super) struct Health {
    /// StatefulSets whose controller has not seen the latest template.
    pub(super) unobserved: Vec<String>,
    /// Members that are down (not running, not terminating) on an older template.
    pub(super) stale_down: Vec<StalePod>,
    /// Members whose pod is missing, terminating or not running.
    pub(super) absent: Vec<String>,
    /// Pods above the membership that are still going.
    pub(super) leaving: Vec<String>,
    /// Members (other than a joining server) that are not ready.
    pub(super) unready: Vec<String>,
    /// Members from an older template that are not ready. Once others took the new
    /// membership, such a server may never find a quorum under its old one.
    pub(super) stale_unready: Vec<String>,
    /// Pod names of the ready members.
    pub(super) ready: Vec<String>,
    /// Servers in the membership.
    pub(super) members: usize,
    /// A joining server that is not ready yet; the step is complete only once it is.
    pub(super) joining_unready: Vec<String>,
    /// Members from an older template, the leader first, then by ascending server id;
    /// the next restart is the last one.
    pub(super) stale: Vec<StalePod>,
}

impl Health {
    pub(super) fn of(observed: &BTreeMap<String, ObservedGroup>, leader: Option<u32>) -> Self {
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

    pub(super) fn waiting_for_pods(&self) -> Option<String> {
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
    pub(super) fn waiting_for_readiness(&self) -> Option<String> {
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
    pub(super) fn waiting_for_restart_of(&self, next: &StalePod) -> Option<String> {
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

    pub(super) fn waiting_for_joining(&self) -> Option<String> {
        (!self.joining_unready.is_empty()).then(|| {
            format!(
                "Waiting for the added {} to join the quorum.",
                self.joining_unready.join(", ")
            )
        })
    }
}
