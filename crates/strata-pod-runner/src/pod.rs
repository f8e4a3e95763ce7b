//! One pod, supervised as the kubelet supervises it: the init containers in order, each
//! to success (a sidecar, an init container with `restartPolicy: Always`, only to its
//! start), then every container at once. A container that exits is restarted as the
//! restart policy says, after the kubelet's back-off (doubling from `initial` up to
//! `max`); one whose liveness or startup probe fails is stopped and restarted. Readiness
//! follows the readiness probe's thresholds. Stopping runs each `preStop` hook, then
//! SIGTERM, then SIGKILL once the grace period is over.
//!
//! Dropping a [`RunningPod`] without [`RunningPod::stop`] kills its processes at once.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Container, Pod};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use crate::container::{Exit, Helper, termination_message};
use crate::env::environment;
use crate::image::Images;
use crate::probe::watch_health;
use crate::spec::PodFiles;
use crate::status::{ContainerStatus, PodStatus, State, Terminated};
use crate::volume::Sources;

use self::start::{base_environment, pre_stop, start};

mod start;

/// The kubelet's restart back-off.
#[derive(Clone, Copy, Debug)]
pub struct Backoff {
    /// The first wait (the kubelet's is 10 s).
    pub initial: Duration,
    /// The longest wait (the kubelet's is 5 min).
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            initial: Duration::from_secs(10),
            max: Duration::from_secs(300),
        }
    }
}

/// A container that ran this long without failing starts its back-off afresh.
const BACKOFF_RESET: Duration = Duration::from_secs(600);

/// Everything a pod needs to run, prepared by the runner.
#[derive(Clone, Debug)]
pub struct PodSetup {
    /// The pod as rendered, or as the API server holds it.
    pub pod: Pod,
    /// The image directories.
    pub images: Images,
    /// The namespace's ConfigMaps and Secrets, kept current by the runner.
    pub sources: Arc<RwLock<Sources>>,
    /// The helper program.
    pub helper: Helper,
    /// The pod's network namespace.
    pub netns: PathBuf,
    /// The pod's address.
    pub address: Ipv4Addr,
    /// The pod's own directory (logs, container scratch space).
    pub dir: PathBuf,
    /// The pod's hosts, hostname and resolver files.
    pub files: PodFiles,
    /// Each volume's host directory.
    pub volumes: BTreeMap<String, PathBuf>,
    /// The restart back-off.
    pub backoff: Backoff,
    /// The variables of the API server's Service that the kubelet gives every
    /// container.
    pub service_env: Vec<(String, String)>,
}

/// Which container of the pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Init(usize),
    Main(usize),
}

/// What a container gets between SIGTERM and SIGKILL however long its `preStop` hook
/// took: the kubelet's minimum grace period.
const MINIMUM_TERMINATION: Duration = Duration::from_secs(2);

#[derive(Debug)]
struct Shared {
    setup: PodSetup,
    status: watch::Sender<PodStatus>,
    /// The grace period of the deletion that stops the pod, when it names one
    /// (`metadata.deletionGracePeriodSeconds`); it wins over the pod spec's, as on a
    /// kubelet.
    deletion_grace: OnceLock<Duration>,
}

impl Shared {
    fn update(&self, slot: Slot, change: impl FnOnce(&mut ContainerStatus)) {
        self.status.send_modify(|status| {
            let container = match slot {
                Slot::Init(index) => status.init_containers.get_mut(index),
                Slot::Main(index) => status.containers.get_mut(index),
            };
            if let Some(container) = container {
                change(container);
            }
        });
    }

    fn grace(&self) -> Duration {
        if let Some(grace) = self.deletion_grace.get() {
            return *grace;
        }
        let seconds = self
            .setup
            .pod
            .spec
            .as_ref()
            .and_then(|spec| spec.termination_grace_period_seconds);
        Duration::from_secs(
            seconds
                .and_then(|seconds| u64::try_from(seconds).ok())
                .unwrap_or(30),
        )
    }

    /// The container's own policy (a sidecar's `Always`), else the pod's; an init
    /// container runs to success, so the pod's `Always` means `OnFailure` for it.
    fn restart_policy(&self, slot: Slot, container: &Container) -> String {
        if let Some(own) = &container.restart_policy {
            return own.clone();
        }
        let pod = self
            .setup
            .pod
            .spec
            .as_ref()
            .and_then(|spec| spec.restart_policy.clone())
            .unwrap_or_else(|| "Always".to_owned());
        match slot {
            Slot::Init(_) if pod == "Always" => "OnFailure".to_owned(),
            _ => pod,
        }
    }

    fn log(&self, container: &str, attempt: i32) -> PathBuf {
        self.setup
            .dir
            .join("logs")
            .join(container)
            .join(format!("{attempt}.log"))
    }
}

/// A pod being run.
#[derive(Debug)]
pub struct RunningPod {
    shared: Arc<Shared>,
    status: watch::Receiver<PodStatus>,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
    dir: PathBuf,
}

impl RunningPod {
    /// Starts the pod's supervision on the current tokio runtime.
    pub fn start(setup: PodSetup) -> Self {
        let spec = setup.pod.spec.clone().unwrap_or_default();
        let waiting = |containers: &[Container], reason: &str| {
            containers
                .iter()
                .map(|container| {
                    ContainerStatus::waiting(
                        &container.name,
                        container.image.as_deref().unwrap_or_default(),
                        reason,
                    )
                })
                .collect()
        };
        let initial = PodStatus {
            phase: "Pending".to_owned(),
            pod_ip: setup.address.to_string(),
            init_containers: waiting(
                spec.init_containers.as_deref().unwrap_or_default(),
                "PodInitializing",
            ),
            containers: waiting(&spec.containers, "PodInitializing"),
            started_at: Timestamp::now(),
            unrunnable: None,
        };
        let (status, receiver) = watch::channel(initial);
        let (stop, stopped) = watch::channel(false);
        let dir = setup.dir.clone();
        let shared = Arc::new(Shared {
            setup,
            status,
            deletion_grace: OnceLock::new(),
        });
        let task = tokio::spawn(run(
            shared.clone(),
            spec.init_containers.unwrap_or_default(),
            spec.containers,
            stopped,
        ));
        Self {
            shared,
            status: receiver,
            stop,
            task: Some(task),
            dir,
        }
    }

    /// The pod's status now.
    pub fn status(&self) -> PodStatus {
        self.status.borrow().clone()
    }

    /// The pod's status as it changes.
    pub fn subscribe(&self) -> watch::Receiver<PodStatus> {
        self.status.clone()
    }

    /// The log of a container's run (0 for the first, then one per restart).
    pub fn log(&self, container: &str, attempt: i32) -> PathBuf {
        self.dir
            .join("logs")
            .join(container)
            .join(format!("{attempt}.log"))
    }

    /// Kills every process of the pod at once, as a failing node does: nothing is
    /// restarted, and the containers are reported ended by SIGKILL.
    pub fn kill(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
        let now = Timestamp::now();
        self.shared.status.send_modify(|status| {
            status.phase = "Failed".to_owned();
            for container in status
                .init_containers
                .iter_mut()
                .chain(status.containers.iter_mut())
            {
                container.ready = false;
                container.pid = None;
                if let State::Running(since) = container.state {
                    container.state = State::Terminated(Terminated {
                        exit_code: 137,
                        reason: "Error".to_owned(),
                        message: None,
                        started_at: since,
                        finished_at: now,
                    });
                }
            }
        });
    }

    /// The environment `container` runs with now (for commands run inside it).
    pub fn environment(&self, container: &str) -> Option<Vec<(String, String)>> {
        let setup = &self.shared.setup;
        let spec = setup.pod.spec.as_ref()?;
        let rendered = spec
            .containers
            .iter()
            .chain(spec.init_containers.iter().flatten())
            .find(|candidate| candidate.name == container)?;
        let image = setup
            .images
            .get(rendered.image.as_deref().unwrap_or_default())
            .ok()?;
        let sources = setup.sources.read().ok()?;
        environment(
            &setup.pod,
            rendered,
            &base_environment(setup, image),
            &sources,
        )
        .ok()
    }

    /// Stops the pod as the kubelet deletes one: `preStop`, SIGTERM, SIGKILL after the
    /// grace period.
    pub async fn stop(mut self) {
        self.stop_within(None).await;
    }

    /// Stops the pod as [`RunningPod::stop`] does, within `grace` when the deletion
    /// names a grace period of its own (`kubectl delete --grace-period`), else the pod
    /// spec's.
    pub async fn stop_within(&mut self, grace: Option<Duration>) {
        if let Some(grace) = grace {
            let _ = self.shared.deletion_grace.set(grace);
        }
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for RunningPod {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Supervises the pod. Every container runs in a task of a [`JoinSet`] owned here, so
/// that aborting this task (a kill, or dropping the pod) drops the containers' tasks and
/// with them their processes.
async fn run(
    shared: Arc<Shared>,
    init_containers: Vec<Container>,
    containers: Vec<Container>,
    stop: watch::Receiver<bool>,
) {
    let mut sidecars = JoinSet::new();
    for (index, container) in init_containers.into_iter().enumerate() {
        let slot = Slot::Init(index);
        if container.restart_policy.as_deref() == Some("Always") {
            let mut status = shared.status.subscribe();
            sidecars.spawn(supervise(shared.clone(), slot, container, stop.clone()));
            let started = async move {
                let _ = status
                    .wait_for(|status| {
                        status
                            .init_containers
                            .get(index)
                            .is_some_and(|sidecar| sidecar.started)
                    })
                    .await;
            };
            let mut halt = stop.clone();
            tokio::select! {
                () = started => {}
                () = stopped(&mut halt) => return finish(sidecars).await,
            }
            continue;
        }
        if !supervise(shared.clone(), slot, container, stop.clone()).await {
            shared.status.send_modify(|status| {
                status.phase = if *stop.borrow() { "Pending" } else { "Failed" }.to_owned()
            });
            return finish(sidecars).await;
        }
    }
    shared
        .status
        .send_modify(|status| status.phase = "Running".to_owned());
    let mut mains = JoinSet::new();
    for (index, container) in containers.into_iter().enumerate() {
        mains.spawn(supervise(
            shared.clone(),
            Slot::Main(index),
            container,
            stop.clone(),
        ));
    }
    let mut succeeded = true;
    while let Some(main) = mains.join_next().await {
        succeeded &= main.unwrap_or(false);
    }
    if !*stop.borrow() {
        shared.status.send_modify(|status| {
            status.phase = if succeeded { "Succeeded" } else { "Failed" }.to_owned()
        });
    }
    finish(sidecars).await;
}

/// Adds the runner's own line to a container's log, as the kubelet records an Event.
fn note(log: &std::path::Path, line: &str) {
    use std::io::Write;
    if let Ok(mut file) = std::fs::OpenOptions::new().append(true).open(log) {
        let _ = writeln!(file, "strata-pod-runner: {line}");
    }
}

/// Returns once the pod is being stopped.
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stop| *stop).await;
}

async fn finish(mut sidecars: JoinSet<bool>) {
    while sidecars.join_next().await.is_some() {}
}

enum Outcome {
    Exited(Exit),
    Unhealthy(String),
    Stop,
}

/// Runs a container until it ends for good; `true` if its last run succeeded.
async fn supervise(
    shared: Arc<Shared>,
    slot: Slot,
    container: Container,
    mut stop: watch::Receiver<bool>,
) -> bool {
    let mut backoff = shared.setup.backoff.initial;
    let mut attempt = 0;
    loop {
        let started = Instant::now();
        let outcome = match start(&shared, &container, attempt) {
            Err((reason, message)) => {
                shared.update(slot, |status| {
                    status.state = State::Waiting {
                        reason,
                        message: Some(message),
                    }
                });
                None
            }
            Ok((mut running, target, log)) => {
                running.until_exec().await;
                let since = Timestamp::now();
                let probes_decide_start = container.startup_probe.is_some();
                shared.update(slot, |status| {
                    status.state = State::Running(since);
                    status.pid = Some(running.pid());
                    status.started = !probes_decide_start;
                    status.ready = false;
                });
                let outcome = tokio::select! {
                    exit = running.wait() => Outcome::Exited(exit),
                    reason = watch_health(&container, &target, |health| shared.update(slot, |status| health.apply(status))) => Outcome::Unhealthy(reason),
                    () = stopped(&mut stop) => Outcome::Stop,
                };
                shared.update(slot, |status| {
                    status.ready = false;
                    status.pid = None;
                });
                let (exit, stopping) = match outcome {
                    Outcome::Exited(exit) => (exit, false),
                    Outcome::Unhealthy(reason) => {
                        note(&log, &format!("{reason}; the container is restarted"));
                        (running.stop(shared.grace()).await, false)
                    }
                    Outcome::Stop => {
                        let deadline = Instant::now() + shared.grace();
                        pre_stop(&shared, &container, &target, shared.grace()).await;
                        let left = deadline.saturating_duration_since(Instant::now());
                        (running.stop(left.max(MINIMUM_TERMINATION)).await, true)
                    }
                };
                let fallback = container.termination_message_policy.as_deref()
                    == Some("FallbackToLogsOnError");
                let termination_log = shared
                    .setup
                    .dir
                    .join("containers")
                    .join(&container.name)
                    .join("termination-log");
                let terminated = Terminated {
                    exit_code: exit.code,
                    reason: if exit.code == 0 { "Completed" } else { "Error" }.to_owned(),
                    message: termination_message(&termination_log, &log, fallback, exit),
                    started_at: since,
                    finished_at: Timestamp::now(),
                };
                Some((terminated, stopping))
            }
        };
        if let Some((terminated, stopping)) = &outcome {
            let policy = shared.restart_policy(slot, &container);
            let again = !stopping
                && (policy == "Always" || (policy == "OnFailure" && terminated.exit_code != 0));
            let succeeded = terminated.exit_code == 0;
            if !again {
                let terminated = terminated.clone();
                shared.update(slot, |status| status.state = State::Terminated(terminated));
                return succeeded && !stopping;
            }
            let terminated = terminated.clone();
            shared.update(slot, |status| {
                status.last_state = Some(terminated);
                status.restart_count += 1;
                status.state = State::Waiting {
                    reason: "CrashLoopBackOff".to_owned(),
                    message: None,
                };
            });
            attempt += 1;
        }
        if started.elapsed() > BACKOFF_RESET {
            backoff = shared.setup.backoff.initial;
        }
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            () = stopped(&mut stop) => return false,
        }
        backoff = (backoff * 2).min(shared.setup.backoff.max);
    }
}
