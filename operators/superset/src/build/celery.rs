//! Celery's pods: the workers and beat, each role group a StatefulSet with its ConfigMap
//! and headless Service, and each role a PodDisruptionBudget.
//!
//! Both run the web servers' image and `superset_config.py`, through
//! `strata_celery.py`, which waits for Redis and then becomes Celery itself. Neither
//! has the init container: the web servers migrate the metadata database, and a worker
//! that starts first only waits for tasks. Beat is a StatefulSet of one pod, so a roll
//! stops the old scheduler before the new one starts and no task is ever sent twice.

use k8s_openapi::api::core::v1::{ConfigMap, Container, PodSpec, Probe};
use strata_model::build::{
    PodUpdates, exec_probe, pod_security_context, preferred_spread, resource_requirements,
    restricted_security_context,
};
use strata_model::identity::ValidatedRole;
use strata_model::pdb::defaults;
use strata_model::role_group::{ValidatedRoleGroup, Workload};
use strata_operator::apply::DesiredObjects;

use super::config_map::config_files;
use super::container::{CONFIG_DIR, mounts, superset_env};
use super::statefulset::{SUPERSET_UID, volumes};
use crate::config::scripts::CELERY_SCRIPT_FILE;
use crate::validate::ValidatedCluster;

/// The worker container, the target of the workers' `envOverrides`.
pub const WORKER_CONTAINER: &str = "worker";
/// Beat's container.
pub const BEAT_CONTAINER: &str = "beat";
/// Superset's Celery application.
pub const CELERY_APP: &str = "--app=superset.tasks.celery_app:app";
/// Beat's schedule state, on the pod's scratch volume: a restarted beat sends what it
/// missed at its next tick instead.
pub const BEAT_SCHEDULE: &str = "/tmp/celerybeat-schedule";

/// Every object of the workers and beat, added to `desired` after the web servers'.
pub fn push_celery_objects(cluster: &ValidatedCluster, desired: &mut DesiredObjects) {
    if let Some(workers) = &cluster.workers {
        push_role(cluster, workers, desired, |group| worker(cluster, group));
        if let Some(pdb) = workers.pdb(
            &cluster.identity.namespace,
            defaults::superset_workers(workers.replicas()),
        ) {
            desired.push(pdb);
        }
    }
    if let Some(beat) = &cluster.beat {
        push_role(cluster, beat, desired, |_| beat_container(cluster));
        if let Some(pdb) = beat.pdb(&cluster.identity.namespace, defaults::superset_beat()) {
            desired.push(pdb);
        }
    }
}

/// What a worker's or beat's role group holds that its objects need.
trait CeleryGroup {
    /// The rendered `superset_config.py`.
    fn superset_config(&self) -> &str;
}

impl CeleryGroup for crate::validate::WorkerGroup {
    fn superset_config(&self) -> &str {
        &self.superset_config
    }
}

impl CeleryGroup for crate::validate::BeatGroup {
    fn superset_config(&self) -> &str {
        &self.superset_config
    }
}

fn push_role<P: CeleryGroup>(
    cluster: &ValidatedCluster,
    role: &ValidatedRole<(), ValidatedRoleGroup<P>>,
    desired: &mut DesiredObjects,
    container: impl Fn(&ValidatedRoleGroup<P>) -> Container,
) {
    let namespace = &cluster.identity.namespace;
    for group in &role.groups {
        let config_map = ConfigMap {
            metadata: group.object_meta(namespace),
            data: Some(config_files(cluster, group.product.superset_config())),
            ..ConfigMap::default()
        };
        let hash = super::config_map::files_hash(&config_map);
        desired.push(config_map);
        desired.push(group.headless_service(namespace, &[]));
        let mut container = container(group);
        let (plain, secrets) = superset_env(cluster);
        let mut env = strata_model::build::env_vars(plain, &group.env_overrides);
        env.extend(secrets);
        container.env = Some(env);
        container.image = Some(cluster.identity.image.image.clone());
        container.image_pull_policy = Some(cluster.identity.image.pull_policy.to_string());
        container.resources = Some(resource_requirements(&group.resources));
        container.security_context = Some(restricted_security_context());
        container.termination_message_policy = Some("FallbackToLogsOnError".to_owned());
        container.volume_mounts = Some(mounts(cluster));
        desired.push(group.stateful_set(
            &cluster.identity,
            Workload {
                parallel: true,
                pod_updates: PodUpdates::Rolling,
                config_hash: &hash,
                pod: PodSpec {
                    containers: vec![container],
                    volumes: Some(volumes(cluster, group.name.object_name())),
                    security_context: Some(pod_security_context(SUPERSET_UID)),
                    affinity: Some(preferred_spread(role.labels.selector())),
                    ..PodSpec::default()
                },
                claims: Vec::new(),
            },
        ));
    }
}

/// `python strata_celery.py run <broker database> celery --app=... <arguments>`.
fn celery_command(cluster: &ValidatedCluster, arguments: &[String]) -> Vec<String> {
    [
        "python".to_owned(),
        format!("{CONFIG_DIR}/{CELERY_SCRIPT_FILE}"),
        "run".to_owned(),
        broker_database(cluster).to_string(),
        "celery".to_owned(),
        CELERY_APP.to_owned(),
    ]
    .into_iter()
    .chain(arguments.iter().cloned())
    .collect()
}

fn broker_database(cluster: &ValidatedCluster) -> u8 {
    cluster
        .redis
        .as_ref()
        .map_or(0, |redis| redis.first_database)
}

/// The worker's probe: its own worker answers Celery's ping through the broker. The
/// ping loads Celery, not Superset, so it takes about a second.
fn ping_probe(cluster: &ValidatedCluster, period: i32, failures: i32) -> Probe {
    Probe {
        timeout_seconds: Some(20),
        ..exec_probe(
            &format!(
                "exec python {CONFIG_DIR}/{CELERY_SCRIPT_FILE} ping {}",
                broker_database(cluster)
            ),
            period,
            failures,
        )
    }
}

/// A Celery worker: prefork processes taking one task at a time each (`fair`), without
/// the gossip and start-up sync between workers, which only add broker traffic.
fn worker(
    cluster: &ValidatedCluster,
    group: &ValidatedRoleGroup<crate::validate::WorkerGroup>,
) -> Container {
    let arguments = [
        "worker".to_owned(),
        "--pool=prefork".to_owned(),
        format!("--concurrency={}", group.product.concurrency),
        "--optimization=fair".to_owned(),
        "--without-gossip".to_owned(),
        "--without-mingle".to_owned(),
        "--loglevel=INFO".to_owned(),
    ];
    Container {
        name: WORKER_CONTAINER.to_owned(),
        command: Some(celery_command(cluster, &arguments)),
        // Loading Superset and waiting for Redis: up to 10 minutes.
        startup_probe: Some(ping_probe(cluster, 10, 60)),
        readiness_probe: Some(ping_probe(cluster, 30, 3)),
        liveness_probe: Some(ping_probe(cluster, 60, 5)),
        ..Container::default()
    }
}

/// Celery beat, keeping its schedule on the scratch volume.
fn beat_container(cluster: &ValidatedCluster) -> Container {
    let arguments = [
        "beat".to_owned(),
        format!("--schedule={BEAT_SCHEDULE}"),
        "--loglevel=INFO".to_owned(),
    ];
    Container {
        name: BEAT_CONTAINER.to_owned(),
        command: Some(celery_command(cluster, &arguments)),
        ..Container::default()
    }
}
