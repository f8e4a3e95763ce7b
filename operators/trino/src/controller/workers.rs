//! The workers' roll, which the operator drives (their StatefulSets use `OnDelete`).
//!
//! Each step is [`stateless_restarts`]: a catalog change restarts every worker at
//! once, without a drain, while the StatefulSet controller restarts the coordinator
//! (the queries are lost with it, and the whole cluster comes back on the new
//! catalogs together); any other change drains one worker at a time, each once every
//! worker is Ready. The coordinator keeps the StatefulSet controller's own roll.

use kube::{Resource, ResourceExt};
use strata_operator::controller::Context;
use strata_operator::pipeline::Prepared;
use strata_operator::roll::stateless::stateless_restarts;
use strata_operator::roll::{rolls_by_itself, stateful_sets_with_pods};
use strata_status::ProgressStep;

use super::cluster::ClusterContext;
use crate::crd::TrinoCluster;

/// Adds the next step of the workers' roll to `prepared`, from the watch caches.
pub fn roll_workers(
    prepared: &mut Prepared,
    cluster: &TrinoCluster,
    context: &Context<ClusterContext>,
) {
    let Some(owner) = cluster.controller_owner_ref(&()) else {
        return;
    };
    let namespace = cluster.namespace().unwrap_or_default();
    let worker_sets = stateful_sets_with_pods(&context.caches, &owner, &namespace)
        .into_iter()
        .filter(|set| !rolls_by_itself(&set.stateful_set));
    let mut together = Vec::new();
    let mut drained = Vec::new();
    let mut settled = true;
    for set in worker_sets {
        let restarts = stateless_restarts(&set);
        together.extend(restarts.together);
        drained.extend(restarts.drained);
        settled &= restarts.settled;
    }
    // One worker drains at a time across every worker role group.
    if !settled {
        drained.clear();
    }
    if !together.is_empty() {
        let names: Vec<&str> = together.iter().map(|pod| pod.name.as_str()).collect();
        prepared.progress = Some(ProgressStep {
            reason: strata_status::reason!("RestartingWorkersTogether"),
            message: format!(
                "Restarting workers {} at once, without a drain: their catalogs changed, \
                 which restarts the coordinator and ends every running query.",
                names.join(", ")
            ),
        });
        prepared.restarts_together = together;
    } else if let Some(next) = drained.into_iter().next() {
        prepared.progress = Some(ProgressStep {
            reason: strata_status::reason!("DrainingWorker"),
            message: format!(
                "Restarting worker {} to run the latest template, after its running \
                 tasks finish.",
                next.name
            ),
        });
        prepared.restarts = vec![next];
    }
}
