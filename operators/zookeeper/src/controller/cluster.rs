//! The ZookeeperCluster controller: the five pipeline steps, in order.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Service;
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use strata_model::exposure::ExternalAddress;
use strata_operator::certificates::rotation::ROTATE_CA_ANNOTATION;
use strata_operator::controller::Context;
use strata_operator::error::ReconcileError;
use strata_operator::pipeline::Operated;
use strata_operator::pipeline::{Failed, Prepared};
use strata_operator::reference::Target;
use strata_operator::roll::stateless::PodRef;
use strata_operator::roll::{StatefulSetPods, stateful_sets_with_pods};
use strata_status::ProgressStep;

use super::certificates::certificate_step;
use super::leader::{ServerAddress, find_leader};
use crate::build::build;
use crate::build::container::TLS_VOLUME;
use crate::crd::ZookeeperCluster;
use crate::membership::{self, Plan, PlanError, observe_role_groups};
use crate::validate::{ValidatedCluster, exposure_warning, plaintext_warning};

/// What the cluster controller needs beyond the shared context.
#[derive(Clone, Debug)]
pub struct ClusterContext {
    /// The cluster's DNS domain, for pod FQDNs in `zoo.cfg` and the
    /// discovery connection string.
    pub cluster_domain: String,
    /// How the leader lookup reaches each server.
    pub server_address: Arc<dyn ServerAddress>,
}

/// The Secret a cluster names (`clusterConfig.tls.secretName`), so one that appears or
/// changes requeues the cluster. Only its key names are cached.
pub fn secret_references(cluster: &ZookeeperCluster) -> Vec<Target> {
    let tls = &cluster.spec.cluster_config.tls;
    let namespace = cluster.namespace().unwrap_or_default();
    tls.secret_name
        .iter()
        .filter(|_| tls.enabled != Some(false))
        .map(|name| Target::named(namespace.clone(), name.clone()))
        .collect()
}

/// Reconciles one ZookeeperCluster.
///
/// 1. Dereference: the role groups' StatefulSets and pods from the watch caches, read
///    into the membership the servers run and how healthy they are.
/// 2. Validate: the spec becomes a merged, checked model, or an InvalidSpec error; the
///    membership planner picks the next safe step towards it ([`crate::membership`]),
///    and the model is validated again for that step's membership.
/// 3. Build: pure functions turn the model into desired objects.
/// 4. Apply (nothing while paused, workloads at zero while stopped), prune, and restart
///    the one pod the step names.
/// 5. Report: conditions from the watched StatefulSets and pods and the step, written on
///    change.
pub async fn reconcile(
    cluster: Arc<ZookeeperCluster>,
    context: Arc<Context<ClusterContext>>,
) -> Result<Action, ReconcileError> {
    let operation = cluster.operation_state();
    let applied = async {
        let prepared = prepare(&cluster, &context, operation.is_stopped()).await?;
        context
            .apply_prepared(cluster.as_ref(), &operation, prepared)
            .await
    }
    .await;
    context.report(cluster.as_ref(), &operation, applied).await
}

/// How long the leader lookup waits for each server's answer.
const LEADER_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Steps 1 to 3: what this reconcile applies. When the step restarts a pod, the
/// servers are asked which one leads, and the step is planned again with that
/// answer, so the leader restarts last.
async fn prepare(
    cluster: &ZookeeperCluster,
    context: &Context<ClusterContext>,
    stopped: bool,
) -> Result<Prepared, Failed> {
    let domain = &context.extra.cluster_domain;
    let desired = ValidatedCluster::new(cluster, domain)?;
    let running = match cluster.controller_owner_ref(&()) {
        Some(owner) => stateful_sets_with_pods(
            &context.caches,
            &owner,
            &cluster.namespace().unwrap_or_default(),
        ),
        None => Vec::new(),
    };
    if !stopped {
        refuse_a_tls_switch(&running, desired.tls.is_some())?;
    }
    let wanted = desired.membership();
    let observed = observe_role_groups(&running, &wanted);
    let mut plan = membership::plan(&wanted, &observed, None, stopped).map_err(refused)?;
    // With no change in progress (almost every reconcile) the spec is the step.
    let mut step = if plan.membership == membership::settled(&wanted) {
        desired
    } else {
        ValidatedCluster::for_membership(cluster, domain, &plan.membership)?
    };
    if plan.restart.is_some() {
        let servers = step
            .ensemble_servers()
            .iter()
            .map(|server| {
                let address = context.extra.server_address.address(&server.fqdn);
                (server.id.get(), address)
            })
            .collect();
        if let Some(leader) = find_leader(servers, LEADER_PROBE_TIMEOUT).await {
            plan = membership::plan(&wanted, &observed, Some(leader), stopped).map_err(refused)?;
            step = ValidatedCluster::for_membership(cluster, domain, &plan.membership)?;
        }
    }
    // The certificates must be there before any pod waits for them; a renewed one
    // rolls the pods, which read it only when they start.
    let client_service = step.identity.name.client_service_name().to_owned();
    let stored = context
        .caches
        .get_typed::<Service>(&step.identity.namespace, &client_service);
    step.external_address = ExternalAddress::observe(&step.service, stored.as_ref());
    let waiting = step.external_address.waiting_step(&client_service);
    let rotate_ca = cluster.annotations().get(ROTATE_CA_ANNOTATION);
    let material = certificate_step(&mut step, rotate_ca.map(String::as_str), context).await?;
    let mut prepared = build(&step).rolling_on(&material.versions);
    material.into_prepared(&mut prepared);
    prepared.warnings.extend(plaintext_warning(&step));
    prepared.warnings.extend(exposure_warning(&step));
    let mut prepared = with_step(prepared, plan);
    prepared.progress = prepared.progress.take().or(waiting);
    Ok(prepared)
}

/// Servers with and without quorum TLS cannot talk to each other, so switching TLS one
/// pod at a time would stop the quorum at the first restart, with clients cut off as
/// the Services change ports. A running ensemble keeps its TLS setting until it is
/// stopped; a stopped one starts with every server on the new setting at once.
fn refuse_a_tls_switch(running: &[StatefulSetPods], tls: bool) -> Result<(), Failed> {
    let serving = running.iter().filter(|set| !set.pods.is_empty());
    let Some(set) = serving
        .into_iter()
        .find(|set| runs_tls(&set.stateful_set) != tls)
    else {
        return Ok(());
    };
    let (from, to) = if tls { ("off", "on") } else { ("on", "off") };
    Err(ReconcileError::invalid_spec(
        "TlsSwitchNeedsStop",
        format!(
            "clusterConfig.tls would turn TLS {to} while StatefulSet {} runs with it {from}: \
             servers with and without quorum TLS cannot form a quorum, so the switch cannot \
             roll one pod at a time. Stop the cluster (annotation \
             operator-command=Stopped), change clusterConfig.tls, then remove the \
             annotation: every server starts on the new setting",
            set.stateful_set
                .metadata
                .name
                .as_deref()
                .unwrap_or_default()
        ),
    )
    .into())
}

/// Whether a StatefulSet's pods run with TLS: they mount the TLS Secret.
pub fn runs_tls(set: &StatefulSet) -> bool {
    set.spec
        .template
        .spec
        .as_ref()
        .and_then(|pod| pod.volumes.as_ref())
        .is_some_and(|volumes| volumes.iter().any(|volume| volume.name == TLS_VOLUME))
}

fn with_step(mut prepared: Prepared, plan: Plan) -> Prepared {
    prepared.restarts = plan.restart.into_iter().map(PodRef::named).collect();
    prepared.progress = plan.progress.map(|progress| ProgressStep {
        reason: progress.reason.reason(),
        message: progress.message,
    });
    prepared
}

fn refused(error: PlanError) -> Failed {
    ReconcileError::invalid_spec(error.reason(), error.to_string()).into()
}
