//! Every membership change the operator makes, played with real ZooKeeper 3.9.5 servers
//! that the pod runner runs exactly as rendered.
//!
//! Each scenario starts an ensemble as a new cluster starts (all servers at once), writes
//! znodes, changes the spec, and then lets the operator's own planner
//! ([`zookeeper_operator::membership::plan`]) drive the pods the way the StatefulSets
//! and the operator's pod restarts would, asking the servers which one leads with the
//! operator's own lookup ([`find_leader`]): a pod is started or deleted when the planner
//! changes a group's membership (the StatefulSet's replicas), and a running pod gets the
//! new template (and so the new `zoo.cfg`) only when the planner restarts it
//! (`OnDelete`). Every object comes from the build step for that step's membership,
//! unchanged: the ConfigMaps, the Services, and each pod as the StatefulSet controller
//! makes it from its set. A pod is Ready when its rendered readiness probe says so, and
//! its data lives on a claim that outlives it.
//!
//! Whenever a membership step completes, every znode written so far must still be
//! readable, the ensemble must have a leader (or a standalone server), and a new znode is
//! written. A scenario that fails names itself, as in "1 → 3 lost data".

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::StatefulSet;
use rstest::rstest;
use serde_json::{Value, json};
use strata_pod_runner::runner::PodRunner;
use strata_pod_runner::statefulset;
use zookeeper_operator::build::build_cluster;
use zookeeper_operator::controller::leader::find_leader;
use zookeeper_operator::crd::ZookeeperCluster;
use zookeeper_operator::membership::{self, GroupPlan, ObservedGroup, PodState, ProgressReason};
use zookeeper_operator::validate::{DEFAULT_CLUSTER_DOMAIN, ValidatedCluster};
use zookeeper_operator::znode_client::ZnodeClient;

use crate::support::pods::{CLIENT_PORT, NAMESPACE, pod_runner, server_mode};

/// ZooKeeper's metrics port, as rendered: where the leader lookup asks.
const METRICS_PORT: u16 = 7000;

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// How long one scenario may take before it counts as hung.
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(480);

/// The modes of a server that serves clients.
const SERVING: [&str; 4] = ["leader", "follower", "observer", "standalone"];

/// `(role group, myidOffset, replicas)`.
type Groups = &'static [(&'static str, u32, u16)];

/// The cluster with `groups`; a group whose name starts with `observer` has
/// `peerType: observer`.
fn cluster(groups: Groups) -> Result<ZookeeperCluster, serde_json::Error> {
    let role_groups: serde_json::Map<String, Value> = groups
        .iter()
        .map(|(name, offset, replicas)| {
            let peer_type = if name.starts_with("observer") {
                "observer"
            } else {
                "participant"
            };
            (
                (*name).to_owned(),
                json!({"replicas": replicas, "config": {"myidOffset": offset, "peerType": peer_type}}),
            )
        })
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "zookeeper.strata.dev/v1alpha1",
        "kind": "ZookeeperCluster",
        "metadata": {"name": "zk", "namespace": NAMESPACE, "uid": "scaling"},
        // Plaintext: the scenarios read each server's mode with `srvr` through a
        // forward to its client port (the TLS default is proven in `certificates`).
        "spec": {
            "clusterConfig": {"tls": {"enabled": false}},
            "servers": {"roleGroups": role_groups},
        },
    }))
}

/// A running pod.
#[derive(Debug)]
struct ServerPod {
    name: String,
    /// The pod template it was started from: the pod is current while its set's
    /// template is the same.
    started_with: String,
    /// The host's end of a forward to its client port.
    client: SocketAddr,
    /// The host's end of a forward to its metrics port, where the leader lookup asks.
    metrics: SocketAddr,
}

/// The rendered role groups of the current step, and every pod the runner runs.
struct Ensemble {
    scenario: String,
    membership: BTreeMap<String, GroupPlan>,
    sets: BTreeMap<String, StatefulSet>,
    pods: BTreeMap<(String, u32), ServerPod>,
    /// Every pod that ever ran, whose claim must outlive it.
    ever_ran: Vec<String>,
    written: Vec<String>,
    log: Vec<String>,
    runner: PodRunner,
}

fn template_of(set: &StatefulSet) -> String {
    serde_json::to_string(&set.spec.template).unwrap_or_default()
}

impl Ensemble {
    fn new(scenario: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(Self {
            scenario: scenario.to_owned(),
            membership: BTreeMap::new(),
            sets: BTreeMap::new(),
            pods: BTreeMap::new(),
            ever_ran: Vec::new(),
            written: Vec::new(),
            log: Vec::new(),
            runner: pod_runner()?,
        })
    }

    /// What the planner sees: the recorded membership and each pod's state.
    fn observe(&self) -> BTreeMap<String, ObservedGroup> {
        let mut observed: BTreeMap<String, ObservedGroup> = self
            .membership
            .iter()
            .map(|(name, plan)| {
                (
                    name.clone(),
                    ObservedGroup {
                        members: plan.members,
                        joining: plan.joining,
                        template_observed: true,
                        pods: BTreeMap::new(),
                    },
                )
            })
            .collect();
        for ((group, ordinal), pod) in &self.pods {
            let Some(entry) = observed.get_mut(group) else {
                continue;
            };
            let current = self
                .sets
                .get(group)
                .is_some_and(|set| template_of(set) == pod.started_with);
            let ready = self
                .runner
                .status(NAMESPACE, &pod.name)
                .is_some_and(|status| status.ready());
            entry.pods.insert(
                *ordinal,
                PodState {
                    name: pod.name.clone(),
                    running: true,
                    ready,
                    current,
                    terminating: false,
                },
            );
        }
        observed
    }

    /// Builds the step's membership and serves its ConfigMaps and Services, then does
    /// what the StatefulSets would: pods below each group's servers run, pods above are
    /// deleted (their claims stay), groups that left the membership stop entirely.
    async fn apply(
        &mut self,
        spec: &ZookeeperCluster,
        membership: &BTreeMap<String, GroupPlan>,
    ) -> TestResult {
        let validated = ValidatedCluster::for_membership(spec, DEFAULT_CLUSTER_DOMAIN, membership)?;
        let objects = build_cluster(&validated);
        self.runner.apply_service(objects.client_service.clone())?;
        self.sets.clear();
        for group in &objects.role_groups {
            self.runner.apply_config_map(group.config_map.clone())?;
            self.runner.apply_service(group.headless_service.clone())?;
            let name = group.stateful_set.metadata.name.clone().unwrap_or_default();
            let role_group = name
                .strip_prefix("zk-server-")
                .ok_or_else(|| format!("StatefulSet {name} is not of the role servers"))?;
            self.sets
                .insert(role_group.to_owned(), group.stateful_set.clone());
        }
        self.membership = membership.clone();
        let keys: Vec<(String, u32)> = self.pods.keys().cloned().collect();
        for (group, ordinal) in keys {
            let keep = membership
                .get(&group)
                .is_some_and(|plan| ordinal < u32::from(plan.members.servers));
            if !keep && let Some(pod) = self.pods.remove(&(group.clone(), ordinal)) {
                self.runner.delete(NAMESPACE, &pod.name).await?;
                self.log.push(format!("deleted {}", pod.name));
            }
        }
        for (group, plan) in membership {
            for ordinal in 0..u32::from(plan.members.servers) {
                if !self.pods.contains_key(&(group.clone(), ordinal)) {
                    self.start(group, ordinal).await?;
                }
            }
        }
        Ok(())
    }

    /// Runs a group's pod from its set's current template, as the StatefulSet
    /// controller creates it.
    async fn start(&mut self, group: &str, ordinal: u32) -> TestResult {
        let set = self
            .sets
            .get(group)
            .ok_or_else(|| format!("role group {group} is not rendered"))?;
        let pod = statefulset::pod(set, ordinal);
        let name = pod.metadata.name.clone().unwrap_or_default();
        let started_with = template_of(set);
        self.runner.run(pod)?;
        let client = self.runner.forward(NAMESPACE, &name, CLIENT_PORT).await?;
        let metrics = self.runner.forward(NAMESPACE, &name, METRICS_PORT).await?;
        self.log.push(format!("started {name}"));
        if !self.ever_ran.contains(&name) {
            self.ever_ran.push(name.clone());
        }
        self.pods.insert(
            (group.to_owned(), ordinal),
            ServerPod {
                name,
                started_with,
                client,
                metrics,
            },
        );
        Ok(())
    }

    /// Deletes the pod and runs it again from its set's current template, as the
    /// operator's restart of an `OnDelete` pod makes the controller do.
    async fn restart(&mut self, pod_name: &str) -> TestResult {
        let (group, ordinal) = self
            .pods
            .iter()
            .find(|(_, pod)| pod.name == pod_name)
            .map(|(key, _)| key.clone())
            .ok_or_else(|| format!("the planner restarts {pod_name}, which does not run"))?;
        self.log.push(format!("restarting {pod_name}"));
        self.pods.remove(&(group.clone(), ordinal));
        self.runner.delete(NAMESPACE, pod_name).await?;
        self.start(&group, ordinal).await
    }

    /// `(server id, address)` of every running server, for the operator's leader lookup.
    fn addresses_by_id(&self) -> Vec<(u32, String)> {
        self.pods
            .iter()
            .filter_map(|((group, ordinal), pod)| {
                let offset = self.membership.get(group)?.members.myid_offset;
                Some((offset + ordinal, pod.metrics.to_string()))
            })
            .collect()
    }

    fn connection_string(&self) -> String {
        self.pods
            .values()
            .filter(|pod| server_mode(pod.client).is_ok())
            .map(|pod| pod.client.to_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    fn modes(&self) -> Vec<String> {
        self.pods
            .values()
            .map(|pod| server_mode(pod.client).unwrap_or_else(|answer| answer))
            .collect()
    }

    /// Every znode written so far is readable, the ensemble has a leader, and one more
    /// znode is written for the next step.
    async fn check_and_write(&mut self, after: &str) -> TestResult {
        let modes = self
            .poll(
                &format!("no leader after {after}"),
                Duration::from_secs(60),
                |ensemble| {
                    let modes = ensemble.modes();
                    modes
                        .iter()
                        .any(|mode| mode == "leader" || mode == "standalone")
                        .then_some(modes)
                },
            )
            .await?;
        let timeout = Duration::from_secs(5);
        let client = ZnodeClient::connect(&self.connection_string(), timeout).await?;
        for path in &self.written {
            let mut found = client.exists(path).await?;
            let deadline = Instant::now() + Duration::from_secs(5);
            while !found && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(200)).await;
                found = client.exists(path).await?;
            }
            if !found {
                return Err(format!(
                    "{} lost data: {path} is missing after {after} (modes {modes:?}); steps: {:#?}",
                    self.scenario, self.log,
                )
                .into());
            }
        }
        let path = format!("/scaling/after-{}", self.written.len());
        client.ensure_path(&path).await?;
        self.written.push(path);
        Ok(())
    }

    /// Starts `groups` as a new cluster starts (every server at once) and writes the
    /// first znodes once every server serves.
    async fn start_and_write(&mut self, groups: Groups) -> TestResult {
        let initial = cluster(groups)?;
        let bootstrap = membership::plan(
            &ValidatedCluster::new(&initial, DEFAULT_CLUSTER_DOMAIN)?.membership(),
            &BTreeMap::new(),
            None,
            false,
        )?;
        self.apply(&initial, &bootstrap.membership).await?;
        let connection = self
            .poll(
                "the first ensemble never served",
                Duration::from_secs(180),
                |ensemble| {
                    let connection = ensemble.connection_string();
                    let serving = ensemble
                        .modes()
                        .iter()
                        .all(|mode| SERVING.contains(&mode.as_str()));
                    (serving && !connection.is_empty()).then_some(connection)
                },
            )
            .await?;
        let client = ZnodeClient::connect(&connection, Duration::from_secs(5)).await?;
        for index in 0..5 {
            let path = format!("/scaling/before-{index}");
            client.ensure_path(&path).await?;
            self.written.push(path);
        }
        Ok(())
    }

    /// Calls `ready` every 200 ms until it returns a value; after `timeout`, fails
    /// with `what` and the servers' modes.
    async fn poll<T>(
        &self,
        what: &str,
        timeout: Duration,
        mut ready: impl FnMut(&Self) -> Option<T>,
    ) -> Result<T, Box<dyn std::error::Error + Send + Sync>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(value) = ready(self) {
                return Ok(value);
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "{}: {what}; modes {:?}; steps: {:#?}",
                    self.scenario,
                    self.modes(),
                    self.log
                )
                .into());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Whether every pod that ever ran still has its data: `myid` on its claim.
    fn claims_kept(&self) -> bool {
        self.ever_ran.iter().all(|pod| {
            self.runner
                .claims()
                .join(NAMESPACE)
                .join(format!("data-{pod}"))
                .join("myid")
                .is_file()
        })
    }

    async fn shutdown(self) {
        self.runner.shutdown().await;
    }
}

#[rstest]
#[case::one_to_three("1 → 3", &[("default", 1, 1)], &[("default", 1, 3)])]
#[case::two_to_five("2 → 5", &[("default", 1, 2)], &[("default", 1, 5)])]
#[case::three_to_five("3 → 5", &[("default", 1, 3)], &[("default", 1, 5)])]
#[case::five_to_three("5 → 3", &[("default", 1, 5)], &[("default", 1, 3)])]
#[case::three_to_one("3 → 1", &[("default", 1, 3)], &[("default", 1, 1)])]
#[case::role_group_added("role group added", &[("a", 1, 3)], &[("a", 1, 3), ("b", 4, 2)])]
#[case::role_group_removed("role group removed", &[("a", 1, 3), ("b", 4, 2)], &[("a", 1, 3)])]
#[case::observers_added("observers added", &[("a", 1, 3)], &[("a", 1, 3), ("observers", 10, 2)])]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the ZooKeeper image directory (STRATA_ZOOKEEPER_IMAGE); run by cargo xtask test"]
async fn membership_changes_keep_every_znode(
    #[case] scenario: &str,
    #[case] from: Groups,
    #[case] to: Groups,
) -> TestResult {
    let started = Instant::now();
    let mut ensemble = Ensemble::new(scenario)?;
    ensemble.start_and_write(from).await?;

    let target = cluster(to)?;
    let desired = ValidatedCluster::new(&target, DEFAULT_CLUSTER_DOMAIN)?.membership();
    let mut last_reason: Option<ProgressReason> = None;
    let mut steps = 0;
    loop {
        if started.elapsed() > SCENARIO_TIMEOUT {
            return Err(format!(
                "{scenario} hung: the last step was {last_reason:?}; steps: {:#?}",
                ensemble.log,
            )
            .into());
        }
        let observed = ensemble.observe();
        let mut plan = membership::plan(&desired, &observed, None, false)?;
        if plan.restart.is_some() {
            let leader = find_leader(ensemble.addresses_by_id(), Duration::from_secs(2)).await;
            plan = membership::plan(&desired, &observed, leader, false)?;
        }
        let reason = plan.progress.as_ref().map(|progress| progress.reason);
        let step_starts = matches!(
            reason,
            None | Some(ProgressReason::AddingServer | ProgressReason::RemovingServer)
        );
        if step_starts && reason != last_reason || (reason.is_none() && last_reason.is_some()) {
            let after = format!("step {steps}");
            ensemble.check_and_write(&after).await?;
            steps += 1;
        }
        if let Some(progress) = &plan.progress
            && Some(progress.reason) != last_reason
        {
            ensemble.log.push(progress.message.clone());
        }
        if reason.is_none() && last_reason.is_some() {
            break;
        }
        last_reason = reason;
        ensemble.apply(&target, &plan.membership).await?;
        if let Some(pod) = &plan.restart {
            ensemble.restart(pod).await?;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    let observers = to
        .iter()
        .filter(|(name, _, _)| name.starts_with("observer"))
        .map(|(_, _, replicas)| usize::from(*replicas))
        .sum::<usize>();
    // The last step may be a restart: the cluster is Available once its pods are Ready
    // again, so every server must serve before the modes are counted.
    let modes = ensemble
        .poll(
            "a server does not serve after the last step",
            Duration::from_secs(120),
            |ensemble| {
                let modes = ensemble.modes();
                modes
                    .iter()
                    .all(|mode| SERVING.contains(&mode.as_str()))
                    .then_some(modes)
            },
        )
        .await?;
    assert_eq!(
        modes.iter().filter(|mode| *mode == "observer").count(),
        observers,
        "{scenario}: observers at the end, modes {modes:?}"
    );
    let servers: u16 = to.iter().map(|(_, _, replicas)| replicas).sum();
    let running = ensemble.pods.len();
    assert_eq!(
        running,
        usize::from(servers),
        "{scenario}: servers running at the end"
    );
    assert!(ensemble.claims_kept(), "{scenario}: a claim went away");
    eprintln!(
        "{scenario}: {steps} checked steps in {:?}; {} actions",
        started.elapsed(),
        ensemble.log.len()
    );
    ensemble.shutdown().await;
    Ok(())
}

/// The check catches what the planner prevents: growing 1 → 3 the way a plain StatefulSet
/// does (both new servers at once with the new membership, then the old server restarted
/// onto it) lets the two empty servers elect a leader of a newer epoch, which the old
/// server then follows and syncs from, losing every znode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the ZooKeeper image directory (STRATA_ZOOKEEPER_IMAGE); run by cargo xtask test"]
async fn an_unstaged_one_to_three_is_caught_losing_data() -> TestResult {
    const FROM: Groups = &[("default", 1, 1)];
    const TO: Groups = &[("default", 1, 3)];
    let mut ensemble = Ensemble::new("unstaged 1 → 3")?;
    ensemble.start_and_write(FROM).await?;
    let target = cluster(TO)?;
    let all_at_once = membership::plan(
        &ValidatedCluster::new(&target, DEFAULT_CLUSTER_DOMAIN)?.membership(),
        &BTreeMap::new(),
        None,
        false,
    )?;
    ensemble.apply(&target, &all_at_once.membership).await?;
    ensemble
        .poll(
            "the new servers never elected a leader",
            Duration::from_secs(180),
            |ensemble| {
                ensemble
                    .modes()
                    .iter()
                    .any(|mode| mode == "leader")
                    .then_some(())
            },
        )
        .await?;
    ensemble.restart("zk-server-default-0").await?;
    let outcome = ensemble.check_and_write("the unstaged change").await;
    let message = outcome
        .err()
        .map(|error| error.to_string())
        .unwrap_or_default();
    assert!(
        message.contains("unstaged 1 → 3 lost data"),
        "the unstaged change kept the data or failed otherwise: {message:?}"
    );
    ensemble.shutdown().await;
    Ok(())
}
