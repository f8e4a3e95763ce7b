//! One generic observation of a workload (StatefulSet, Deployment or
//! DaemonSet) and its pods.
//!
//! The three kinds report the same facts under different field names. They
//! are read once here into [`WorkloadObservation`], and every rule
//! ([`assess`](crate::assess), [`next_deployed_version`](crate::next_deployed_version))
//! works on that, instead of one condition builder per kind.

use k8s_openapi::api::{
    apps::v1::{DaemonSet, Deployment, StatefulSet},
    core::v1::{ContainerStatus, Pod},
};

use crate::reason::Reason;

/// The label that carries the product version on every pod (recommended
/// Kubernetes labels); the deployed-version rule reads it.
pub const VERSION_LABEL: &str = "app.kubernetes.io/version";

/// Container waiting reasons that mean the pod will not become ready without
/// a change: the image cannot be pulled, the container keeps crashing, or its
/// configuration (a missing Secret or ConfigMap key) is broken.
pub const FAILING_WAITING_REASONS: &[&str] = &[
    "CrashLoopBackOff",
    "ImagePullBackOff",
    "ErrImagePull",
    "CreateContainerConfigError",
    "CreateContainerError",
    "InvalidImageName",
];

/// The workload kinds an operator deploys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, strum::Display)]
pub enum WorkloadKind {
    /// An `apps/v1` StatefulSet.
    StatefulSet,
    /// An `apps/v1` Deployment.
    Deployment,
    /// An `apps/v1` DaemonSet.
    DaemonSet,
}

/// The phase of a pod, parsed from `status.phase`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, strum::Display)]
pub enum PodPhase {
    /// Accepted but not all containers run yet. Also used when the pod has no
    /// status yet, which is what a freshly created pod looks like.
    Pending,
    /// Bound to a node, containers started.
    Running,
    /// All containers terminated successfully.
    Succeeded,
    /// All containers terminated, at least one in failure.
    Failed,
    /// The node stopped reporting. Also used for a phase this crate does not
    /// know, so an unexpected value is never mistaken for a healthy one.
    Unknown,
}

impl PodPhase {
    fn parse(phase: Option<&str>) -> Self {
        match phase {
            None | Some("Pending") => Self::Pending,
            Some("Running") => Self::Running,
            Some("Succeeded") => Self::Succeeded,
            Some("Failed") => Self::Failed,
            Some(_) => Self::Unknown,
        }
    }
}

/// A container that waits in one of the [`FAILING_WAITING_REASONS`].
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct FailingContainer {
    /// The container name.
    pub name: String,
    /// Whether it is an init container (a crash-looping init container keeps
    /// the pod Pending forever).
    pub init: bool,
    /// The waiting reason, e.g. `CrashLoopBackOff`.
    pub reason: String,
    /// Why the container last stopped, in its own words, when it said so
    /// ([`ReportedStop`]).
    pub reported: Option<ReportedStop>,
    /// The kubelet's explanation of a configuration error
    /// (`CreateContainerConfigError`: "couldn't find key password in Secret
    /// default/superset-db"), the one waiting message that names what the user must
    /// fix; other waiting messages (back-off timers) are left out.
    pub config_error: Option<String>,
}

/// What a container that stops on purpose says about why.
///
/// The contract: a container that finds a state it must not run in (an HDFS
/// namenode whose name directory holds half a format) writes its
/// termination message (`/dev/termination-log`) as two lines, a CamelCase
/// reason and one sentence saying what to do, and exits non-zero. The
/// status then names that reason instead of the `CrashLoopBackOff` the
/// restarts lead to, because the crash loop is the symptom and the message
/// is the cause. Anything else in a termination message is ignored.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ReportedStop {
    /// The reason, checked to be one CamelCase word.
    pub reason: Reason,
    /// The sentence.
    pub message: String,
}

impl ReportedStop {
    /// Longest message kept; a termination message is at most 4096 bytes, and a
    /// condition message should stay readable.
    pub const MAX_MESSAGE_CHARS: usize = 1000;

    /// Reads a termination message written by the contract above.
    #[must_use]
    pub fn parse(termination_message: &str) -> Option<Self> {
        let mut lines = termination_message.lines();
        let reason = Reason::new(lines.next()?.trim()).ok()?;
        let message: String = lines
            .next()?
            .trim()
            .chars()
            .take(Self::MAX_MESSAGE_CHARS)
            .collect();
        (!message.is_empty()).then_some(Self { reason, message })
    }

    /// The stop a container status reports: its last termination, or the
    /// current one.
    fn of(status: &ContainerStatus) -> Option<Self> {
        [status.last_state.as_ref(), status.state.as_ref()]
            .into_iter()
            .flatten()
            .filter_map(|state| state.terminated.as_ref()?.message.as_deref())
            .find_map(Self::parse)
    }
}

/// What the status rules need to know about one pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodObservation {
    /// `metadata.name`.
    pub name: String,
    /// The parsed `status.phase`.
    pub phase: PodPhase,
    /// Containers (init containers included) waiting in a failure state,
    /// sorted by init-first, then name.
    pub failing_containers: Vec<FailingContainer>,
    /// The value of [`VERSION_LABEL`], if set.
    pub version: Option<String>,
}

impl PodObservation {
    /// Reads a pod.
    #[must_use]
    pub fn from_pod(pod: &Pod) -> Self {
        let status = pod.status.as_ref();
        let init = status.and_then(|s| s.init_container_statuses.as_deref());
        let main = status.and_then(|s| s.container_statuses.as_deref());
        let mut failing_containers: Vec<FailingContainer> =
            failing(init, true).chain(failing(main, false)).collect();
        failing_containers.sort_by(|a, b| b.init.cmp(&a.init).then_with(|| a.name.cmp(&b.name)));
        Self {
            name: pod.metadata.name.clone().unwrap_or_default(),
            phase: PodPhase::parse(status.and_then(|s| s.phase.as_deref())),
            failing_containers,
            version: pod
                .metadata
                .labels
                .as_ref()
                .and_then(|labels| labels.get(VERSION_LABEL))
                .cloned(),
        }
    }

    /// A pod counts as failing when its phase is Failed or a container waits
    /// in a failure state, whatever its phase.
    #[must_use]
    pub fn is_failing(&self) -> bool {
        self.phase == PodPhase::Failed || !self.failing_containers.is_empty()
    }
}

fn failing(
    statuses: Option<&[ContainerStatus]>,
    init: bool,
) -> impl Iterator<Item = FailingContainer> + '_ {
    statuses
        .unwrap_or_default()
        .iter()
        .filter_map(move |status| {
            let waiting = status.state.as_ref()?.waiting.as_ref()?;
            let reason = waiting.reason.as_deref()?;
            FAILING_WAITING_REASONS
                .contains(&reason)
                .then(|| FailingContainer {
                    name: status.name.clone(),
                    init,
                    reason: reason.to_owned(),
                    reported: ReportedStop::of(status),
                    config_error: waiting
                        .message
                        .clone()
                        .filter(|_| reason == "CreateContainerConfigError"),
                })
        })
}

/// The facts about one workload and its pods that status rules use.
///
/// Fields are public so operators with other kinds of workloads (for
/// example a Job-based one) can fill it in themselves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadObservation {
    /// The workload kind, used in messages.
    pub kind: WorkloadKind,
    /// `metadata.name`.
    pub name: String,
    /// Desired replicas: `spec.replicas` (default 1), or for a DaemonSet
    /// `status.desiredNumberScheduled`.
    pub desired_replicas: i32,
    /// Available replicas as reported by the workload controller.
    pub available_replicas: i32,
    /// Replicas already at the newest pod template.
    pub updated_replicas: i32,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// `status.observedGeneration`.
    pub observed_generation: Option<i64>,
    /// For a StatefulSet with the RollingUpdate strategy and no partition:
    /// the current and the update revision differ. Always false otherwise,
    /// because Kubernetes then never advances `currentRevision`: not for
    /// `OnDelete` (kubernetes/kubernetes#73492), and not while a partition
    /// keeps pods at the old revision (it moves only once *every* replica is
    /// updated). Either would report a rollout forever.
    pub revision_changing: bool,
    /// For a StatefulSet with the RollingUpdate strategy:
    /// `spec.updateStrategy.rollingUpdate.partition`. Pods with an ordinal
    /// below it keep the old revision on purpose, so a rollout is complete
    /// once `desired_replicas - partition` replicas are updated. 0 for other
    /// kinds and strategies.
    pub partition: i32,
    /// For a Deployment: the message of its `Progressing` condition when the
    /// Deployment controller gave up on the rollout (status False, reason
    /// `ProgressDeadlineExceeded`) for the latest generation. `None` otherwise
    /// and for other kinds. A condition left from an older generation does not
    /// count: the controller resets it when it starts the next rollout, and
    /// until it has observed that generation the condition is stale (the same
    /// rule as `kubectl rollout status`).
    pub progress_deadline_exceeded: Option<String>,
    /// The workload's pods, sorted by name.
    pub pods: Vec<PodObservation>,
}

impl WorkloadObservation {
    /// Observes a StatefulSet; `pods` are the pods matching its selector.
    #[must_use]
    pub fn from_stateful_set(stateful_set: &StatefulSet, pods: &[Pod]) -> Self {
        let spec = &stateful_set.spec;
        let status = stateful_set.status.as_ref();
        let strategy = spec.update_strategy.as_ref();
        let rolling_update = strategy
            .and_then(|s| s.type_.as_deref())
            .is_none_or(|strategy| strategy == "RollingUpdate");
        let partition = if rolling_update {
            strategy
                .and_then(|s| s.rolling_update.as_ref())
                .and_then(|r| r.partition)
                .unwrap_or(0)
                .max(0)
        } else {
            0
        };
        let revision_changing = rolling_update
            && partition == 0
            && status.is_some_and(|s| {
                matches!(
                    (&s.current_revision, &s.update_revision),
                    (Some(current), Some(update)) if current != update
                )
            });
        Self {
            kind: WorkloadKind::StatefulSet,
            name: stateful_set.metadata.name.clone().unwrap_or_default(),
            desired_replicas: spec.replicas.unwrap_or(1),
            available_replicas: status.and_then(|s| s.available_replicas).unwrap_or(0),
            updated_replicas: status.and_then(|s| s.updated_replicas).unwrap_or(0),
            generation: stateful_set.metadata.generation,
            observed_generation: status.and_then(|s| s.observed_generation),
            revision_changing,
            partition,
            progress_deadline_exceeded: None,
            pods: observe_pods(pods),
        }
    }

    /// Observes a Deployment; `pods` are the pods matching its selector.
    #[must_use]
    pub fn from_deployment(deployment: &Deployment, pods: &[Pod]) -> Self {
        let status = deployment.status.as_ref();
        let generation = deployment.metadata.generation;
        let observed_generation = status.and_then(|s| s.observed_generation);
        let progress_deadline_exceeded = status
            .filter(|_| generation.is_none_or(|g| observed_generation >= Some(g)))
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default()
            .iter()
            .find(|c| {
                c.type_.as_deref() == Some("Progressing")
                    && c.status.as_deref() == Some("False")
                    // Our reason is the word the Deployment controller uses.
                    && c.reason.as_deref() == Some(Reason::PROGRESS_DEADLINE_EXCEEDED.as_str())
            })
            .map(|c| c.message.clone().unwrap_or_default());
        Self {
            kind: WorkloadKind::Deployment,
            name: deployment.metadata.name.clone().unwrap_or_default(),
            desired_replicas: deployment.spec.replicas.unwrap_or(1),
            available_replicas: status.and_then(|s| s.available_replicas).unwrap_or(0),
            updated_replicas: status.and_then(|s| s.updated_replicas).unwrap_or(0),
            generation,
            observed_generation,
            revision_changing: false,
            partition: 0,
            progress_deadline_exceeded,
            pods: observe_pods(pods),
        }
    }

    /// Observes a DaemonSet; `pods` are the pods matching its selector. The
    /// desired count comes from the status because it depends on the nodes.
    #[must_use]
    pub fn from_daemon_set(daemon_set: &DaemonSet, pods: &[Pod]) -> Self {
        let status = daemon_set.status.as_ref();
        Self {
            kind: WorkloadKind::DaemonSet,
            name: daemon_set.metadata.name.clone().unwrap_or_default(),
            desired_replicas: status.map_or(0, |s| s.desired_number_scheduled),
            available_replicas: status.and_then(|s| s.number_available).unwrap_or(0),
            updated_replicas: status.and_then(|s| s.updated_number_scheduled).unwrap_or(0),
            generation: daemon_set.metadata.generation,
            observed_generation: status.and_then(|s| s.observed_generation),
            revision_changing: false,
            partition: 0,
            progress_deadline_exceeded: None,
            pods: observe_pods(pods),
        }
    }

    /// `Kind name`, the way the workload is named in messages.
    #[must_use]
    pub fn display_name(&self) -> String {
        format!("{} {}", self.kind, self.name)
    }

    /// Why a rollout is in progress, or `None` when none is. The three
    /// signals: the workload controller has not seen the latest spec yet,
    /// fewer replicas than the rollout targets run the newest template (all
    /// desired replicas, or those at or above a StatefulSet's
    /// [`partition`](Self::partition)), or (StatefulSet) the update revision
    /// differs from the current one.
    #[must_use]
    pub fn rollout_in_progress(&self) -> Option<String> {
        let mut causes = Vec::new();
        if self.generation.is_some() && self.observed_generation < self.generation {
            causes.push(format!(
                "the workload controller has observed generation {} of {}",
                self.observed_generation
                    .map_or_else(|| "none".to_owned(), |g| g.to_string()),
                self.generation.unwrap_or_default()
            ));
        }
        let target = self.desired_replicas.saturating_sub(self.partition).max(0);
        if self.updated_replicas < target {
            let scope = if self.partition > 0 {
                format!(" at or above partition {}", self.partition)
            } else {
                String::new()
            };
            causes.push(format!(
                "{} of {target} replicas{scope} run the newest pod template",
                self.updated_replicas
            ));
        }
        if self.revision_changing {
            causes.push("the update revision differs from the current revision".to_owned());
        }
        (!causes.is_empty()).then(|| causes.join(", "))
    }
}

fn observe_pods(pods: &[Pod]) -> Vec<PodObservation> {
    let mut observed: Vec<PodObservation> = pods.iter().map(PodObservation::from_pod).collect();
    observed.sort_by(|a, b| a.name.cmp(&b.name));
    observed
}
