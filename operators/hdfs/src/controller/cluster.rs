//! The HdfsCluster controller: the five pipeline steps, in order.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use strata_operator::roll::stateless::PodRef;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use strata_operator::controller::Context;
use strata_operator::error::ReconcileError;
use strata_operator::pipeline::Operated;
use strata_operator::pipeline::{Failed, Prepared};
use strata_operator::reference::{KeySource, KeysRead, Target};
use strata_operator::roll::{StatefulSetPods, stateful_sets_with_pods};
use strata_status::{ProgressStep, Reason, ServiceOutage};

use super::namenode_http::NameNodeInfo;
use super::namenodes::NameNodeHttp;
use super::{datanodes, exposure, journalnodes, removed_groups};
use crate::build::{NameNodeState, build};
use crate::config::zookeeper_tls::{
    KEYSTORE_FILE, ZookeeperConnection, connection_of, rotating_ca_bundle,
};
use crate::crd::{HdfsCluster, HdfsFormatStatus, HdfsRole, PodUser};
use crate::decommission::{self, DecommissionInput};
use crate::journal;
use crate::journal_sync::{self, JournalGate};
use crate::roll::{GroupPods, RollStep, next_step, rolling_reason};
use crate::takeover::{self, TakeoverGate};
use crate::validate::{ValidatedCluster, Warning, roll_order};
use strata_operator::certificates::fingerprint;

/// The Available and Degraded reason while every namenode is standby.
pub const NO_ACTIVE_NAMENODE: Reason = strata_status::reason!("NoActiveNameNode");

pub use crate::config::zookeeper_tls::ZOOKEEPER_KEY;

/// What the controller needs beyond the shared context.
#[derive(Clone, Debug)]
pub struct ClusterContext {
    /// The cluster's DNS domain, for pod FQDNs.
    pub cluster_domain: String,
    /// How the namenodes are asked which one is active, the cluster ID and the
    /// datanodes' admin states.
    pub namenodes: NameNodeHttp,
    /// How often the namenodes are asked again while something only they can tell
    /// is awaited: a decommission, or the cluster ID of a new namespace.
    pub namenode_check: Duration,
}

/// [`ClusterContext::namenode_check`] in a real cluster: a decommission moves on
/// within 15 s of the namenode finishing it, for one JMX request per namenode.
pub const NAMENODE_CHECK: Duration = Duration::from_secs(15);

/// The ZNode's client certificate Secret, named after the ZNode as its discovery
/// ConfigMap is (`<znode>-client-tls`): a renewal requeues the cluster. Only its key
/// names are cached.
pub fn zookeeper_client_reference(cluster: &HdfsCluster) -> Vec<Target> {
    vec![Target::named(
        cluster.namespace().unwrap_or_default(),
        format!(
            "{}-client-tls",
            cluster.spec.cluster_config.zookeeper_config_map_name
        ),
    )]
}

/// The ZNode discovery ConfigMap a cluster names: the controller's declared reference,
/// so a change to it requeues the cluster.
pub fn zookeeper_reference(cluster: &HdfsCluster) -> Vec<Target> {
    vec![Target::named(
        cluster.namespace().unwrap_or_default(),
        &cluster.spec.cluster_config.zookeeper_config_map_name,
    )]
}

/// Reconciles one HdfsCluster.
///
/// 1. Dereference: the ZNode discovery ConfigMap from the reference cache; the
///    StatefulSets and pods from the watch caches.
/// 2. Validate: the spec and the ZooKeeper connection become a checked model, or an
///    InvalidSpec error; nothing is applied until the ConfigMap exists.
/// 3. Build: pure functions turn the model into desired objects; the roll planner
///    names the one pod to restart, in the order journalnodes, namenodes (standby
///    first), datanodes.
/// 4. Apply (nothing while paused, workloads at zero while stopped), prune, restart.
/// 5. Report: conditions from the watched StatefulSets and pods, written on change.
pub async fn reconcile(
    cluster: Arc<HdfsCluster>,
    context: Arc<Context<ClusterContext>>,
) -> Result<Action, ReconcileError> {
    let operation = cluster.operation_state();
    let mut format = cluster
        .status
        .as_ref()
        .map(|status| status.product.clone())
        .unwrap_or_default();
    let applied = async {
        let prepared = prepare(&cluster, &context, &mut format).await?;
        context
            .apply_prepared(cluster.as_ref(), &operation, prepared)
            .await
    }
    .await;
    context
        .report_with(cluster.as_ref(), &operation, applied, format)
        .await
}

/// Steps 1 to 3. `format` is the status' format state; a cluster ID a namenode
/// reports for the first time is recorded in it.
async fn prepare(
    cluster: &HdfsCluster,
    context: &Context<ClusterContext>,
    format: &mut HdfsFormatStatus,
) -> Result<Prepared, Failed> {
    let (zookeeper, rotating_ca) = zookeeper_connection(cluster, context)?;
    let mut validated = ValidatedCluster::new(cluster, &context.extra.cluster_domain, &zookeeper)?;
    let namespace = cluster.namespace().unwrap_or_default();
    let waiting_for_address = exposure::observe_namenode_http_addresses(context, &mut validated);
    exposure::observe_namenode_ingresses(context, &mut validated);
    let running = match cluster.controller_owner_ref(&()) {
        Some(owner) => stateful_sets_with_pods(&context.caches, &owner, &namespace),
        None => Vec::new(),
    };

    format.pod_user = Some(validated.keep_pod_user(format.pod_user, running_pod_user(&running)));
    removed_groups::refuse_removed_groups(&validated, &running)?;
    let previous_journal = journalnodes::previous(
        &context.caches,
        &validated,
        &running,
        &context.extra.cluster_domain,
    );
    let next_journal = journalnodes::next(&validated);
    let journal_warning = journal::check_change(
        &previous_journal,
        &next_journal,
        format.cluster_id.is_some(),
    )
    .map_err(ReconcileError::from)?;
    let journal_nodes = journalnodes::to_record(
        &previous_journal,
        &next_journal,
        journalnodes::namenodes_run_on_spec(&validated, &running),
    );
    let datanodes = datanodes::datanode_groups(&validated, &running);
    let recorded = datanodes::recorded_exclusions(&context.caches, &validated);
    let excluded: Vec<String> = recorded.iter().map(|line| line.host.clone()).collect();
    let shrinking = datanodes.iter().any(|group| {
        group
            .current_replicas
            .is_some_and(|current| current > group.replicas)
    });
    let namenode = if format.cluster_id.is_none() || shrinking || !excluded.is_empty() {
        context
            .extra
            .namenodes
            .info(&validated.topology.namenodes)
            .await
    } else {
        None
    };
    if format.cluster_id.is_none() {
        format.cluster_id = namenode.as_ref().and_then(|info| info.cluster_id.clone());
    }
    let block_health = if shrinking || !excluded.is_empty() {
        context
            .extra
            .namenodes
            .block_health(&validated.topology.namenodes)
            .await
    } else {
        None
    };
    let decommission = decommission::plan(&DecommissionInput {
        groups: &datanodes,
        namespace: &namespace,
        cluster_domain: &context.extra.cluster_domain,
        excluded: &excluded,
        namenode: namenode.as_ref().map(|info| &info.nodes),
        block_health,
        dfs_replication: validated.dfs_replication,
    })
    .map_err(ReconcileError::from)?;
    validated.hold_replicas(HdfsRole::DataNode, &decommission.replicas);

    let ha = context
        .extra
        .namenodes
        .ha_states(&validated.topology.namenodes)
        .await;
    let active = ha.active.clone();
    let restart = plan_restart(
        context,
        &validated,
        &running,
        namenode.as_ref(),
        active.as_deref(),
    )
    .await;
    let pod_ips = datanodes::pod_ips(
        &datanodes,
        &running,
        &namespace,
        &context.extra.cluster_domain,
    );
    let state = NameNodeState {
        cluster_id: format.cluster_id.clone(),
        excluded_datanodes: datanodes::exclusion_lines(&decommission.excluded, &recorded, &pod_ips),
        journal_nodes,
        roll_edits: restart.roll_edits.clone(),
    };
    // The ZNode's client certificate is read at the ZKFCs' start: a renewed one
    // (the Secret's version) rolls the namenodes.
    let mut client_versions = match &validated.zookeeper.client_secret {
        Some(secret) => context
            .references
            .check_keys(
                &namespace,
                [KeysRead {
                    object: KeySource::Secret,
                    name: secret,
                    keys: vec![KEYSTORE_FILE],
                    field: "the ZNode's client certificate (ZOOKEEPER_CLIENT_SECRET of \
                            clusterConfig.zookeeperConfigMapName)",
                }],
            )
            .map_err(ReconcileError::from)?,
        None => BTreeMap::new(),
    };
    if let Some(bundle) = rotating_ca {
        client_versions.insert(
            format!("ConfigMap/{}/ca.crt", validated.zookeeper.config_map),
            fingerprint(&bundle),
        );
    }
    let mut prepared = build(&validated, &state).rolling_on(&client_versions);
    prepared.warnings = validated
        .warnings
        .iter()
        .map(Warning::to_spec_warning)
        .chain(journal_warning)
        .collect();

    if let Some(step) = restart.step {
        prepared.restarts = step.restart.into_iter().map(PodRef::named).collect();
        prepared.progress = Some(ProgressStep {
            reason: step.reason,
            message: step.message,
        });
    }
    if !restart.roll_edits.is_empty() || restart.recheck {
        prepared.recheck_after = Some(context.extra.namenode_check);
    }
    // A decommission in flight says so first: it is what holds the scale-down back.
    if decommission.progress.is_some() {
        prepared.progress = decommission.progress;
        prepared.recheck_after = Some(context.extra.namenode_check);
    }
    if format.cluster_id.is_none() {
        prepared.recheck_after = Some(context.extra.namenode_check);
    }
    if prepared.progress.is_none() {
        prepared.progress = waiting_for_address;
    }
    let standby_only = active.is_none() && ha.answering > 0;
    if standby_only {
        // Namenodes answer, none as the active one. No watch event says when the
        // ZKFCs elect one, so ask again. Namenodes that answer nothing prove nothing.
        prepared.outage = Some(no_active_namenode(&validated));
        prepared.recheck_after = Some(context.extra.namenode_check);
    }
    Ok(prepared)
}

/// The outage while namenodes answer `GET /isActive`, none with 200. The status shows
/// it only while every pod is Ready: during a start or a restart, the pods speak.
fn no_active_namenode(validated: &ValidatedCluster) -> ServiceOutage {
    let namenodes: Vec<&str> = validated
        .topology
        .namenodes
        .iter()
        .map(|namenode| namenode.id.as_str())
        .collect();
    ServiceOutage {
        reason: NO_ACTIVE_NAMENODE,
        message: format!(
            "No namenode is active ({} answered GET /isActive with 200), so HDFS refuses \
             every read and write. The ZKFC sidecars elect the active namenode through \
             ZooKeeper: check that ZooKeeper ({}) is reachable, and read the zkfc \
             containers' logs",
            if namenodes.is_empty() {
                "none".to_owned()
            } else {
                format!("none of {}", namenodes.join(", "))
            },
            validated.zookeeper.quorum,
        ),
    }
}

/// The roll's next step, and the new edit log segment asked for while a journalnode
/// does not take edits.
struct RestartPlan {
    step: Option<RollStep>,
    /// The `roll-edits` value of the namenode state; empty while every journalnode
    /// takes edits.
    roll_edits: String,
    /// Whether the roll waits for something no watch event announces.
    recheck: bool,
}

/// Step 3, the roll: the next pod to restart in roll order, the active namenode
/// (`active`) last, held back while the active namenode does not write to every
/// journalnode ([`crate::journal_sync`]), and the active itself (any namenode while none
/// is known to be active) while another namenode is in safe mode ([`crate::takeover`]).
/// Only a roll that is about to restart a
/// journalnode or a namenode asks the namenodes for their journals, and not again if
/// `known` already holds their answer.
async fn plan_restart(
    context: &Context<ClusterContext>,
    validated: &ValidatedCluster,
    running: &[StatefulSetPods],
    known: Option<&NameNodeInfo>,
    active: Option<&str>,
) -> RestartPlan {
    let groups = group_pods(validated, running);
    let namenodes = &validated.topology.namenodes;
    let mut step = next_step(&groups, roll_order(), None);
    let role_of = |step: &Option<RollStep>| {
        let pod = step.as_ref()?.restart.as_deref()?;
        let group = groups
            .iter()
            .find(|group| group.pods.values().any(|state| state.name == pod))?;
        Some((pod.to_owned(), group.role))
    };
    if let Some((_, HdfsRole::NameNode)) = role_of(&step) {
        step = next_step(&groups, roll_order(), active);
    }
    let unready = journal_sync::unready_journalnodes(&groups, &validated.topology.journalnodes);
    let Some((pod, role @ (HdfsRole::JournalNode | HdfsRole::NameNode))) = role_of(&step) else {
        return RestartPlan {
            step,
            roll_edits: journal_sync::roll_edits_request(&unready, None),
            recheck: false,
        };
    };
    let out_of_sync = match known {
        Some(info) => info.out_of_sync_journals.clone(),
        None => context
            .extra
            .namenodes
            .info(namenodes)
            .await
            .and_then(|info| info.out_of_sync_journals),
    };
    let roll_edits = journal_sync::roll_edits_request(&unready, out_of_sync.as_ref());
    let takes_over = role == HdfsRole::NameNode && active.is_none_or(|active| active == pod);
    let wait = match journal_sync::gate(&pod, out_of_sync.as_ref()) {
        JournalGate::Wait { message } => Some(message),
        JournalGate::Open if takes_over => {
            let safe_modes = context.extra.namenodes.safe_modes(namenodes).await;
            let datanodes_ready = groups
                .iter()
                .filter(|group| group.role == HdfsRole::DataNode)
                .flat_map(|group| group.pods.values())
                .any(|pod| pod.ready);
            match takeover::gate(&pod, &safe_modes, datanodes_ready) {
                TakeoverGate::Open => None,
                TakeoverGate::Wait { message } => {
                    tracing::info!(
                        pod,
                        ?safe_modes,
                        "the roll waits for the namenodes' safe mode"
                    );
                    Some(message)
                }
            }
        }
        JournalGate::Open => None,
    };
    match wait {
        None => RestartPlan {
            step,
            roll_edits,
            recheck: false,
        },
        // No watch event says when a namenode leaves safe mode, so ask again soon.
        Some(message) => RestartPlan {
            step: Some(RollStep {
                restart: None,
                reason: rolling_reason(role),
                message,
            }),
            roll_edits,
            recheck: true,
        },
    }
}

/// Step 1: `ha.zookeeper.quorum` and TLS from the ZNode discovery ConfigMap, and its
/// CA bundle while the ZooKeeper operator rotates its CA.
fn zookeeper_connection(
    cluster: &HdfsCluster,
    context: &Context<ClusterContext>,
) -> Result<(ZookeeperConnection, Option<String>), ReconcileError> {
    let namespace = cluster.namespace().unwrap_or_default();
    let name = &cluster.spec.cluster_config.zookeeper_config_map_name;
    let config_map = context
        .references
        .get::<ConfigMap>(&namespace, name)
        .map_err(ReconcileError::from)?
        .ok_or_else(|| {
            ReconcileError::transient(
                "ZookeeperConfigMapMissing",
                format!(
                    "the ZNode discovery ConfigMap {namespace}/{name} \
                     (clusterConfig.zookeeperConfigMapName) does not exist; nothing is \
                     applied until it does"
                ),
            )
        })?;
    let connection = connection_of(name, &config_map).map_err(|problem| {
        ReconcileError::invalid_spec(
            "ZookeeperConfigMapInvalid",
            format!(
                "the ConfigMap {namespace}/{name} (clusterConfig.zookeeperConfigMapName): \
                 {problem}"
            ),
        )
    })?;
    Ok((connection, rotating_ca_bundle(&config_map)))
}

/// The running StatefulSets matched to the validated role groups by name.
fn group_pods(validated: &ValidatedCluster, running: &[StatefulSetPods]) -> Vec<GroupPods> {
    let role_of = |name: &str| -> Option<HdfsRole> {
        validated.roles.iter().find_map(|role| {
            role.groups
                .iter()
                .any(|group| group.name.object_name() == name)
                .then_some(role.role)
        })
    };
    running
        .iter()
        .filter_map(|set| {
            Some(GroupPods {
                name: set.name(),
                role: role_of(&set.name())?,
                replicas: set
                    .stateful_set
                    .spec
                    .replicas
                    .and_then(|replicas| u32::try_from(replicas).ok())
                    .unwrap_or(1),
                template_observed: set.template_observed(),
                pods: set.pods_by_ordinal(),
            })
        })
        .collect()
}

/// The uid and gid the cluster's StatefulSets run their pods as, for a cluster an
/// operator without `status.podUser` created: the first that names both.
fn running_pod_user(running: &[StatefulSetPods]) -> Option<PodUser> {
    running.iter().find_map(|set| {
        let context = set
            .stateful_set
            .spec
            .template
            .spec
            .as_ref()?
            .security_context
            .as_ref()?;
        Some(PodUser {
            uid: context.run_as_user?,
            gid: context.run_as_group?,
        })
    })
}
