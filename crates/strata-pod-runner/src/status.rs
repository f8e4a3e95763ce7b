//! What a running pod reports, in the kubelet's terms, and its translation into the
//! API's `PodStatus` for the node agent.

use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
    ContainerStatus as ApiContainerStatus, PodCondition, PodIP, PodStatus as ApiPodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

/// How a container ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Terminated {
    /// The exit code (128 + signal for a signal).
    pub exit_code: i32,
    /// `Completed` for 0, `Error` otherwise, `OOMKilled` is not detected.
    pub reason: String,
    /// The termination message.
    pub message: Option<String>,
    /// When it started and ended.
    pub started_at: Timestamp,
    /// When it ended.
    pub finished_at: Timestamp,
}

/// A container's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// Not running: not started yet, or between restarts.
    Waiting {
        /// `ContainerCreating`, `PodInitializing`, `CrashLoopBackOff`,
        /// `CreateContainerConfigError`...
        reason: String,
        /// The detail.
        message: Option<String>,
    },
    /// Running since then.
    Running(Timestamp),
    /// Ended and not restarted.
    Terminated(Terminated),
}

/// One container's status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerStatus {
    /// The container's name.
    pub name: String,
    /// The image it runs.
    pub image: String,
    /// Its state now.
    pub state: State,
    /// How its previous run ended.
    pub last_state: Option<Terminated>,
    /// Its readiness.
    pub ready: bool,
    /// Whether its startup probe has succeeded (or it has none and runs).
    pub started: bool,
    /// How often it was restarted.
    pub restart_count: i32,
    /// The process, while it runs.
    pub pid: Option<u32>,
}

impl ContainerStatus {
    /// A container that has not started.
    pub fn waiting(name: &str, image: &str, reason: &str) -> Self {
        Self {
            name: name.to_owned(),
            image: image.to_owned(),
            state: State::Waiting {
                reason: reason.to_owned(),
                message: None,
            },
            last_state: None,
            ready: false,
            started: false,
            restart_count: 0,
            pid: None,
        }
    }

    fn to_api(&self) -> ApiContainerStatus {
        ApiContainerStatus {
            name: self.name.clone(),
            image: self.image.clone(),
            image_id: format!("strata-pod-runner://{}", self.image),
            ready: self.ready,
            started: Some(self.started),
            restart_count: self.restart_count,
            state: Some(state(&self.state)),
            last_state: self.last_state.as_ref().map(|terminated| ContainerState {
                terminated: Some(terminated_state(terminated)),
                ..ContainerState::default()
            }),
            ..ApiContainerStatus::default()
        }
    }
}

fn terminated_state(terminated: &Terminated) -> ContainerStateTerminated {
    ContainerStateTerminated {
        exit_code: terminated.exit_code,
        reason: Some(terminated.reason.clone()),
        message: terminated.message.clone(),
        started_at: Some(Time(terminated.started_at)),
        finished_at: Some(Time(terminated.finished_at)),
        ..ContainerStateTerminated::default()
    }
}

fn state(state: &State) -> ContainerState {
    match state {
        State::Waiting { reason, message } => ContainerState {
            waiting: Some(ContainerStateWaiting {
                reason: Some(reason.clone()),
                message: message.clone(),
            }),
            ..ContainerState::default()
        },
        State::Running(since) => ContainerState {
            running: Some(ContainerStateRunning {
                started_at: Some(Time(*since)),
            }),
            ..ContainerState::default()
        },
        State::Terminated(terminated) => ContainerState {
            terminated: Some(terminated_state(terminated)),
            ..ContainerState::default()
        },
    }
}

/// A pod's status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodStatus {
    /// `Pending`, `Running`, `Succeeded` or `Failed`.
    pub phase: String,
    /// The pod's address.
    pub pod_ip: String,
    /// The init containers, in order.
    pub init_containers: Vec<ContainerStatus>,
    /// The containers, in order.
    pub containers: Vec<ContainerStatus>,
    /// When the pod was started.
    pub started_at: Timestamp,
    /// Why the pod cannot run as rendered, if it cannot.
    pub unrunnable: Option<String>,
}

impl PodStatus {
    /// All init containers done and every container ready.
    pub fn ready(&self) -> bool {
        self.phase == "Running"
            && !self.containers.is_empty()
            && self.containers.iter().all(|container| container.ready)
    }

    /// The status the kubelet would write, with the conditions the API expects.
    pub fn to_api(&self, host_ip: &str) -> ApiPodStatus {
        let initialized = self.init_containers.iter().all(|container| {
            matches!(&container.state, State::Terminated(done) if done.exit_code == 0)
                || container.started
        });
        let containers_ready = self.containers.iter().all(|container| container.ready);
        let condition = |kind: &str, status: bool| PodCondition {
            type_: kind.to_owned(),
            status: if status { "True" } else { "False" }.to_owned(),
            last_transition_time: Some(Time(self.started_at)),
            ..PodCondition::default()
        };
        ApiPodStatus {
            phase: Some(self.phase.clone()),
            pod_ip: Some(self.pod_ip.clone()),
            pod_ips: Some(vec![PodIP {
                ip: self.pod_ip.clone(),
            }]),
            host_ip: Some(host_ip.to_owned()),
            start_time: Some(Time(self.started_at)),
            conditions: Some(vec![
                condition("PodScheduled", true),
                condition("Initialized", initialized),
                condition("ContainersReady", containers_ready),
                condition("Ready", self.ready()),
            ]),
            init_container_statuses: Some(
                self.init_containers
                    .iter()
                    .map(ContainerStatus::to_api)
                    .collect(),
            ),
            container_statuses: Some(
                self.containers
                    .iter()
                    .map(ContainerStatus::to_api)
                    .collect(),
            ),
            message: self.unrunnable.clone(),
            reason: self.unrunnable.as_ref().map(|_| "Unrunnable".to_owned()),
            ..ApiPodStatus::default()
        }
    }
}
