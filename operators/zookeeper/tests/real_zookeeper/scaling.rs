//! Every membership change the operator makes, played with real ZooKeeper servers.
//!
//! Each scenario starts an ensemble as a new cluster starts (all servers at once), writes
//! znodes, changes the spec, and then lets the operator's own planner
//! ([`zookeeper_operator::membership::plan`]) drive the servers the way the StatefulSets
//! and the operator's pod restarts would, asking the servers which one leads with the
//! operator's own lookup ([`find_leader`]): a server is added or removed when the planner
//! changes a group's membership (the StatefulSet's replicas), and a running server gets
//! the new `zoo.cfg` only when the planner restarts its pod (`OnDelete`). Every `zoo.cfg`
//! and `myid` comes from the objects the build step makes for that step's membership,
//! changed for loopback only as `support::loopback` describes. Data directories persist
//! like the pods' volumes.
//!
//! Whenever a membership step completes, every znode written so far must still be
//! readable, the ensemble must have a leader (or a standalone server), and a new znode is
//! written. A scenario that fails names itself, as in "1 → 3 lost data".

use std::collections::BTreeMap;
use std::fs;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rstest::rstest;
use serde_json::{Value, json};
use tempfile::TempDir;
use zookeeper_operator::build::build_cluster;
use zookeeper_operator::controller::leader::find_leader;
use zookeeper_operator::crd::ZookeeperCluster;
use zookeeper_operator::membership::{self, GroupPlan, ObservedGroup, PodState, ProgressReason};
use zookeeper_operator::validate::{DEFAULT_CLUSTER_DOMAIN, ValidatedCluster};
use zookeeper_operator::znode_client::ZnodeClient;

use crate::support::loopback::{check_myid, loopback_zoo_cfg, run_myid_command};
use crate::support::rendered::{RenderedRoleGroup, property};
use crate::support::server::ZkServer;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// How long one scenario may take before it counts as hung.
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(300);
/// The client port every server listens on, on its own loopback address.
const CLIENT_PORT: u16 = 2181;

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
        "metadata": {"name": "zk", "namespace": "default", "uid": "scaling"},
        "spec": {"servers": {"roleGroups": role_groups}},
    }))
}

fn stateful_set_name(group: &str) -> String {
    format!("zk-server-{group}")
}

/// One pod: its volume outlives its process.
#[derive(Debug)]
struct PodProcess {
    name: String,
    server: Option<ZkServer>,
    /// The `zoo.cfg` the running process was started with.
    started_with: String,
    data_dir: PathBuf,
    address: SocketAddr,
}

/// The rendered role groups of the current step, and every pod the test runs.
struct Ensemble {
    scenario: String,
    membership: BTreeMap<String, GroupPlan>,
    rendered: BTreeMap<String, RenderedRoleGroup>,
    pods: BTreeMap<(String, u32), PodProcess>,
    hosts_file: PathBuf,
    addresses: BTreeMap<String, Ipv4Addr>,
    written: Vec<String>,
    log: Vec<String>,
    // Last: pods stop before their directories go.
    dir: TempDir,
}

impl Ensemble {
    /// Loopback addresses `127.1.<case>.<n>` for every pod either spec can have, in one
    /// hosts file written before any server starts.
    fn new(
        scenario: &str,
        case: u8,
        specs: [Groups; 2],
    ) -> Result<Self, Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let mut addresses = BTreeMap::new();
        let mut hosts = String::new();
        let mut next = 1u8;
        for spec in specs {
            for (group, _, replicas) in spec {
                for ordinal in 0..*replicas {
                    let pod = format!("{}-{ordinal}", stateful_set_name(group));
                    if addresses.contains_key(&pod) {
                        continue;
                    }
                    let ip = Ipv4Addr::new(127, 1, case, next);
                    next += 1;
                    let service = stateful_set_name(group);
                    hosts.push_str(&format!(
                        "{ip} {pod}.{service}.default.svc.{DEFAULT_CLUSTER_DOMAIN}\n"
                    ));
                    addresses.insert(pod, ip);
                }
            }
        }
        let hosts_file = dir.path().join("hosts");
        fs::write(&hosts_file, hosts)?;
        Ok(Self {
            scenario: scenario.to_owned(),
            membership: BTreeMap::new(),
            rendered: BTreeMap::new(),
            pods: BTreeMap::new(),
            hosts_file,
            addresses,
            written: Vec::new(),
            log: Vec::new(),
            dir,
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
            let Some(server) = &pod.server else { continue };
            let Some(entry) = observed.get_mut(group) else {
                continue;
            };
            let current = self
                .rendered
                .get(group)
                .is_some_and(|rendered| rendered.zoo_cfg == pod.started_with);
            entry.pods.insert(
                *ordinal,
                PodState {
                    name: pod.name.clone(),
                    running: true,
                    ready: server.mode().is_ok(),
                    current,
                    terminating: false,
                },
            );
        }
        observed
    }

    /// Renders the step's membership, then does what the StatefulSets would: pods below
    /// each group's servers run, pods above stop (their volumes stay), groups that left
    /// the membership stop entirely.
    fn apply(
        &mut self,
        spec: &ZookeeperCluster,
        membership: &BTreeMap<String, GroupPlan>,
    ) -> TestResult {
        let validated = ValidatedCluster::for_membership(spec, DEFAULT_CLUSTER_DOMAIN, membership)?;
        let objects = build_cluster(&validated);
        let mut documents = Vec::new();
        for group in &objects.role_groups {
            documents.push(serde_json::to_value(&group.stateful_set)?);
            documents.push(serde_json::to_value(&group.config_map)?);
        }
        self.rendered.clear();
        for group in membership.keys() {
            let rendered = RenderedRoleGroup::named(
                &documents,
                &stateful_set_name(group),
                DEFAULT_CLUSTER_DOMAIN,
            )?;
            self.rendered.insert(group.clone(), rendered);
        }
        self.membership = membership.clone();
        let keys: Vec<(String, u32)> = self.pods.keys().cloned().collect();
        for (group, ordinal) in keys {
            let keep = membership
                .get(&group)
                .is_some_and(|plan| ordinal < u32::from(plan.members.servers));
            if !keep
                && let Some(pod) = self.pods.get_mut(&(group.clone(), ordinal))
                && pod.server.take().is_some()
            {
                self.log.push(format!("stopped {}", pod.name));
            }
        }
        for (group, plan) in membership {
            for ordinal in 0..u32::from(plan.members.servers) {
                let running = self
                    .pods
                    .get(&(group.clone(), ordinal))
                    .is_some_and(|pod| pod.server.is_some());
                if !running {
                    self.start(group, ordinal)?;
                }
            }
        }
        Ok(())
    }

    /// Starts (or restarts) a pod with its group's current config, running the rendered
    /// myid init command first, as the kubelet would.
    fn start(&mut self, group: &str, ordinal: u32) -> TestResult {
        let rendered = self
            .rendered
            .get(group)
            .ok_or_else(|| format!("role group {group} is not rendered"))?;
        let identity = rendered
            .pods
            .get(usize::try_from(ordinal)?)
            .ok_or_else(|| format!("role group {group} has no pod {ordinal}"))?
            .clone();
        let ip = *self
            .addresses
            .get(&identity.name)
            .ok_or_else(|| format!("no address for {}", identity.name))?;
        let pod_dir = self.dir.path().join(&identity.name);
        let config_file = pod_dir.join("conf").join("zoo.cfg");
        let data_dir = pod_dir.join("data");
        fs::create_dir_all(config_file.parent().unwrap_or(&pod_dir))?;
        fs::create_dir_all(&data_dir)?;
        fs::write(
            &config_file,
            loopback_zoo_cfg(&rendered.zoo_cfg, &data_dir)?,
        )?;
        let rendered_data_dir =
            property(&rendered.zoo_cfg, "dataDir").ok_or("zoo.cfg has no dataDir")?;
        run_myid_command(
            &rendered.myid_command,
            rendered_data_dir,
            &data_dir,
            &identity.name,
        )?;
        check_myid(&rendered.zoo_cfg, &data_dir, &identity)?;
        let started_with = rendered.zoo_cfg.clone();
        let address = SocketAddr::V4(SocketAddrV4::new(ip, CLIENT_PORT));
        if let Some(pod) = self.pods.get_mut(&(group.to_owned(), ordinal)) {
            pod.server = None;
        }
        let server = ZkServer::start(
            &identity.name,
            &config_file,
            address,
            Some(&self.hosts_file),
        )?;
        self.log.push(format!("started {}", identity.name));
        self.pods.insert(
            (group.to_owned(), ordinal),
            PodProcess {
                name: identity.name,
                server: Some(server),
                started_with,
                data_dir,
                address,
            },
        );
        Ok(())
    }

    fn restart(&mut self, pod_name: &str) -> TestResult {
        let key = self
            .pods
            .iter()
            .find(|(_, pod)| pod.name == pod_name)
            .map(|(key, _)| key.clone())
            .ok_or_else(|| format!("the planner restarts {pod_name}, which does not run"))?;
        self.log.push(format!("restarting {pod_name}"));
        self.start(&key.0, key.1)
    }

    /// `(server id, address)` of every running server, for the operator's leader lookup.
    fn addresses_by_id(&self) -> Vec<(u32, String)> {
        self.pods
            .iter()
            .filter(|(_, pod)| pod.server.is_some())
            .filter_map(|((group, ordinal), pod)| {
                let offset = self.membership.get(group)?.members.myid_offset;
                Some((offset + ordinal, pod.address.to_string()))
            })
            .collect()
    }

    fn connection_string(&self) -> String {
        self.pods
            .values()
            .filter(|pod| {
                pod.server
                    .as_ref()
                    .is_some_and(|server| server.mode().is_ok())
            })
            .map(|pod| pod.address.to_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    fn modes(&self) -> Vec<String> {
        self.pods
            .values()
            .filter_map(|pod| pod.server.as_ref())
            .map(|server| server.mode().unwrap_or_else(|answer| answer))
            .collect()
    }

    /// Every znode written so far is readable, the ensemble has a leader, and one more
    /// znode is written for the next step.
    async fn check_and_write(&mut self, after: &str) -> TestResult {
        let modes = self
            .poll(
                &format!("no leader after {after}"),
                Duration::from_secs(30),
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
                    "{} lost data: {path} is missing after {after} (modes {modes:?}); steps: {:#?}; {}",
                    self.scenario,
                    self.log,
                    self.files()
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
        self.apply(&initial, &bootstrap.membership)?;
        let connection = self
            .poll(
                "the first ensemble never served",
                Duration::from_secs(60),
                |ensemble| {
                    let connection = ensemble.connection_string();
                    let serving = ensemble.modes().iter().all(|mode| {
                        ["leader", "follower", "observer", "standalone"].contains(&mode.as_str())
                    });
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
    /// with `what`, the servers' modes and where their files are.
    async fn poll<T>(
        &self,
        what: &str,
        timeout: Duration,
        mut ready: impl FnMut(&Self) -> Option<T>,
    ) -> Result<T, Box<dyn std::error::Error>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(value) = ready(self) {
                return Ok(value);
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "{}: {what}; modes {:?}; {}",
                    self.scenario,
                    self.modes(),
                    self.files()
                )
                .into());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    fn files(&self) -> String {
        format!("files in {}", self.dir.path().display())
    }
}

fn data_dirs_exist(ensemble: &Ensemble) -> bool {
    ensemble
        .pods
        .values()
        .all(|pod| Path::new(&pod.data_dir).is_dir())
}

#[rstest]
#[case::one_to_three("1 → 3", 1, &[("default", 1, 1)], &[("default", 1, 3)])]
#[case::two_to_five("2 → 5", 2, &[("default", 1, 2)], &[("default", 1, 5)])]
#[case::three_to_five("3 → 5", 3, &[("default", 1, 3)], &[("default", 1, 5)])]
#[case::five_to_three("5 → 3", 4, &[("default", 1, 5)], &[("default", 1, 3)])]
#[case::three_to_one("3 → 1", 5, &[("default", 1, 3)], &[("default", 1, 1)])]
#[case::role_group_added("role group added", 6, &[("a", 1, 3)], &[("a", 1, 3), ("b", 4, 2)])]
#[case::role_group_removed("role group removed", 7, &[("a", 1, 3), ("b", 4, 2)], &[("a", 1, 3)])]
#[case::observers_added("observers added", 9, &[("a", 1, 3)], &[("a", 1, 3), ("observers", 10, 2)])]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Java and ZooKeeper (STRATA_JAVA, STRATA_ZOOKEEPER_CLASSPATH); run by cargo xtask test"]
async fn membership_changes_keep_every_znode(
    #[case] scenario: &str,
    #[case] case: u8,
    #[case] from: Groups,
    #[case] to: Groups,
) -> TestResult {
    let started = Instant::now();
    let mut ensemble = Ensemble::new(scenario, case, [from, to])?;
    ensemble.start_and_write(from).await?;

    let target = cluster(to)?;
    let desired = ValidatedCluster::new(&target, DEFAULT_CLUSTER_DOMAIN)?.membership();
    let mut last_reason: Option<ProgressReason> = None;
    let mut steps = 0;
    loop {
        if started.elapsed() > SCENARIO_TIMEOUT {
            return Err(format!(
                "{scenario} hung: the last step was {last_reason:?}; steps: {:#?}; {}",
                ensemble.log,
                ensemble.files()
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
        ensemble.apply(&target, &plan.membership)?;
        if let Some(pod) = &plan.restart {
            ensemble.restart(pod)?;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    let observers = to
        .iter()
        .filter(|(name, _, _)| name.starts_with("observer"))
        .map(|(_, _, replicas)| usize::from(*replicas))
        .sum::<usize>();
    let modes = ensemble.modes();
    assert_eq!(
        modes.iter().filter(|mode| *mode == "observer").count(),
        observers,
        "{scenario}: observers at the end, modes {modes:?}"
    );
    let servers: u16 = to.iter().map(|(_, _, replicas)| replicas).sum();
    let running = ensemble
        .pods
        .values()
        .filter(|pod| pod.server.is_some())
        .count();
    assert_eq!(
        running,
        usize::from(servers),
        "{scenario}: servers running at the end"
    );
    assert!(
        data_dirs_exist(&ensemble),
        "{scenario}: a data directory went away"
    );
    eprintln!(
        "{scenario}: {steps} checked steps in {:?}; {} actions",
        started.elapsed(),
        ensemble.log.len()
    );
    Ok(())
}

/// The check catches what the planner prevents: growing 1 → 3 the way a plain StatefulSet
/// does (both new servers at once with the new membership, then the old server restarted
/// onto it) lets the two empty servers elect a leader of a newer epoch, which the old
/// server then follows and syncs from, losing every znode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Java and ZooKeeper (STRATA_JAVA, STRATA_ZOOKEEPER_CLASSPATH); run by cargo xtask test"]
async fn an_unstaged_one_to_three_is_caught_losing_data() -> TestResult {
    const FROM: Groups = &[("default", 1, 1)];
    const TO: Groups = &[("default", 1, 3)];
    let mut ensemble = Ensemble::new("unstaged 1 → 3", 8, [FROM, TO])?;
    ensemble.start_and_write(FROM).await?;
    let target = cluster(TO)?;
    let all_at_once = membership::plan(
        &ValidatedCluster::new(&target, DEFAULT_CLUSTER_DOMAIN)?.membership(),
        &BTreeMap::new(),
        None,
        false,
    )?;
    ensemble.apply(&target, &all_at_once.membership)?;
    ensemble
        .poll(
            "the new servers never elected a leader",
            Duration::from_secs(60),
            |ensemble| {
                ensemble
                    .modes()
                    .iter()
                    .any(|mode| mode == "leader")
                    .then_some(())
            },
        )
        .await?;
    ensemble.restart("zk-server-default-0")?;
    let outcome = ensemble.check_and_write("the unstaged change").await;
    let message = outcome
        .err()
        .map(|error| error.to_string())
        .unwrap_or_default();
    assert!(
        message.contains("unstaged 1 → 3 lost data"),
        "the unstaged change kept the data or failed otherwise: {message:?}"
    );
    Ok(())
}
