//! The ADR027 table applied to one workload.
//!
//! With `d` desired and `a` available replicas:
//!
//! | condition | status | when | reason |
//! | --- | --- | --- | --- |
//! | Available | True | `a >= d` | `AsExpected` |
//! | Available | Unknown | `a < d` and some pod has phase Unknown | `PodPhaseUnknown` |
//! | Available | False | `a < d` and no pod has phase Unknown | `ReplicasUnavailable` |
//! | Progressing | False | the Deployment controller gave up on the rollout (checked first) | `ProgressDeadlineExceeded` |
//! | Progressing | True | a rollout is in progress (checked next) | `RolloutInProgress` |
//! | Progressing | False | `a == d` | `AsExpected` |
//! | Progressing | False | `a < d` and some pod is failing | `PodPhaseFailed` / `PodsFailing` |
//! | Progressing | True | `a != d` otherwise | `ReplicasChanging` |
//! | Degraded | True | the Deployment controller gave up on the rollout | `ProgressDeadlineExceeded` |
//! | Degraded | True | `a < d` and some pod is failing or has phase Unknown | `PodPhaseFailed` / `PodsFailing` / `PodPhaseUnknown` |
//! | Degraded | False | otherwise | `AsExpected` |
//!
//! Where this goes beyond the ADR, and why:
//!
//! - A pod is *failing* when its phase is Failed **or** a container (init
//!   containers included) waits in one of the
//!   [`FAILING_WAITING_REASONS`](crate::FAILING_WAITING_REASONS). A
//!   crash-looping pod stays Running and an image that cannot be pulled keeps
//!   it Pending, yet neither will ever become ready.
//! - A rollout (see [`WorkloadObservation::rollout_in_progress`]) makes
//!   Progressing True even when pods fail: the workload controller is still
//!   applying a new template, and Degraded tells the user that it is stuck.
//! - A Deployment whose controller reports `ProgressDeadlineExceeded`
//!   (see [`WorkloadObservation::progress_deadline_exceeded`]) is stuck, not
//!   rolling out: Progressing False and Degraded True, whatever the replica
//!   counts say. Old pods may still serve every replica while the new ones
//!   never start, so this is the one Degraded row that does not need
//!   `a < d`. The messages quote the Deployment controller and name the
//!   failing pods, whatever the counts, because they are what blocks it.
//! - A StatefulSet with a partitioned RollingUpdate has finished rolling out
//!   once every pod at or above the partition is updated (see
//!   [`WorkloadObservation::partition`]); the pods below it keep the old
//!   revision by request.
//! - Available is True for `a > d` too (the ADR says `a == d`): surplus pods
//!   while scaling down are no outage. Progressing is True for them.
//! - Pod states only count while replicas are missing (`a < d`), as in the
//!   ADR's Degraded row (its Progressing row says `a != d`; surplus replicas
//!   are being removed, which a failed pod does not block). A Deployment keeps evicted pods in phase Failed next to their
//!   healthy replacements; those must not make the cluster Degraded forever.
//!
//! Degraded picks its reason in the order `ProgressDeadlineExceeded`,
//! `PodPhaseFailed`, `PodsFailing`, `PodPhaseUnknown`; the message names
//! every affected pod.

use crate::{
    condition::{ConditionStatus, ConditionType, ConditionUpdate},
    error::sentence,
    reason::Reason,
    workload::{PodObservation, PodPhase, WorkloadObservation},
};

/// The three observed conditions of one workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadAssessment {
    /// The workload as named in messages (`StatefulSet name`); also the sort
    /// key when assessments are combined.
    pub workload: String,
    /// Whether the workload has its desired replicas.
    pub available: ConditionUpdate,
    /// Whether it is moving towards a new state.
    pub progressing: ConditionUpdate,
    /// Whether it is stuck or lost pods.
    pub degraded: ConditionUpdate,
}

impl WorkloadObservation {
    /// Applies the ADR027 table (see the `assess` module's docs) to this workload.
    #[must_use]
    pub fn assess(&self) -> WorkloadAssessment {
        let problems = PodProblems::collect(&self.pods);
        WorkloadAssessment {
            workload: self.display_name(),
            available: self.available(&problems),
            progressing: self.progressing(&problems),
            degraded: self.degraded(&problems),
        }
    }

    /// `"<workload> exceeded its progress deadline: <controller message>"`,
    /// or `None` when the workload controller has not given up.
    fn deadline_sentence(&self) -> Option<String> {
        self.progress_deadline_exceeded.as_deref().map(|message| {
            let prefix = format!("{} exceeded its progress deadline", self.display_name());
            if message.trim().is_empty() {
                format!("{prefix}.")
            } else {
                format!("{prefix}: {}", sentence(message))
            }
        })
    }

    fn replica_summary(&self) -> String {
        format!(
            "{} has {} of {} desired replicas available",
            self.display_name(),
            self.available_replicas,
            self.desired_replicas
        )
    }

    fn available(&self, problems: &PodProblems) -> ConditionUpdate {
        let (status, reason, detail) = if self.available_replicas >= self.desired_replicas {
            (ConditionStatus::True, Reason::AS_EXPECTED, String::new())
        } else if !problems.unknown.is_empty() {
            (
                ConditionStatus::Unknown,
                Reason::POD_PHASE_UNKNOWN,
                format!(" {}", problems.unknown_sentence()),
            )
        } else {
            (
                ConditionStatus::False,
                Reason::REPLICAS_UNAVAILABLE,
                String::new(),
            )
        };
        ConditionUpdate::new(
            ConditionType::Available,
            status,
            reason,
            format!("{}.{detail}", self.replica_summary()),
        )
    }

    fn progressing(&self, problems: &PodProblems) -> ConditionUpdate {
        let update = |status, reason, message: String| {
            ConditionUpdate::new(ConditionType::Progressing, status, reason, message)
        };
        if let Some(deadline) = self.deadline_sentence() {
            return update(
                ConditionStatus::False,
                Reason::PROGRESS_DEADLINE_EXCEEDED,
                format!("{deadline} {}.", self.replica_summary()),
            );
        }
        if let Some(causes) = self.rollout_in_progress() {
            return update(
                ConditionStatus::True,
                Reason::ROLLOUT_IN_PROGRESS,
                format!("{} is rolling out: {causes}.", self.display_name()),
            );
        }
        if self.available_replicas == self.desired_replicas {
            return update(
                ConditionStatus::False,
                Reason::AS_EXPECTED,
                format!("{} and is not rolling out.", self.replica_summary()),
            );
        }
        let missing_replicas = self.available_replicas < self.desired_replicas;
        match problems.failing_reason().filter(|_| missing_replicas) {
            Some(reason) => update(
                ConditionStatus::False,
                reason,
                format!(
                    "{} and cannot progress. {}",
                    self.replica_summary(),
                    problems.failing_sentences()
                ),
            ),
            None => update(
                ConditionStatus::True,
                Reason::REPLICAS_CHANGING,
                format!("{}; pods are starting or stopping.", self.replica_summary()),
            ),
        }
    }

    fn degraded(&self, problems: &PodProblems) -> ConditionUpdate {
        let missing_replicas = self.available_replicas < self.desired_replicas;
        let deadline = self.deadline_sentence();
        let reason = if deadline.is_some() {
            Some(Reason::PROGRESS_DEADLINE_EXCEEDED)
        } else if missing_replicas {
            problems
                .failing_reason()
                .or_else(|| (!problems.unknown.is_empty()).then_some(Reason::POD_PHASE_UNKNOWN))
        } else {
            None
        };
        match reason {
            Some(reason) => {
                let message = [
                    deadline.unwrap_or_default(),
                    format!("{}.", self.replica_summary()),
                    problems.failing_sentences(),
                    problems.unknown_sentence(),
                ]
                .into_iter()
                .filter(|sentence| !sentence.is_empty())
                .collect::<Vec<_>>()
                .join(" ");
                ConditionUpdate::new(
                    ConditionType::Degraded,
                    ConditionStatus::True,
                    reason,
                    message,
                )
            }
            None => ConditionUpdate::new(
                ConditionType::Degraded,
                ConditionStatus::False,
                Reason::AS_EXPECTED,
                format!("{} and no failing pods.", self.replica_summary()),
            ),
        }
    }
}

/// The pods of a workload sorted into the problems the table cares about.
/// Pods arrive sorted by name, so every list is sorted.
struct PodProblems<'a> {
    unknown: Vec<&'a PodObservation>,
    failed: Vec<&'a PodObservation>,
    containers: Vec<&'a PodObservation>,
}

impl<'a> PodProblems<'a> {
    fn collect(pods: &'a [PodObservation]) -> Self {
        let with = |keep: fn(&PodObservation) -> bool| pods.iter().filter(|p| keep(p)).collect();
        Self {
            unknown: with(|p| p.phase == PodPhase::Unknown),
            failed: with(|p| p.phase == PodPhase::Failed),
            containers: with(|p| !p.failing_containers.is_empty()),
        }
    }

    /// The reason for a failing workload, `None` when no pod is failing. A
    /// container that said why it stopped ([`crate::ReportedStop`]) names the
    /// reason instead of `PodsFailing`.
    fn failing_reason(&self) -> Option<Reason> {
        let reported = self
            .containers
            .iter()
            .flat_map(|pod| &pod.failing_containers)
            .find_map(|container| container.reported.as_ref());
        if !self.failed.is_empty() {
            Some(Reason::POD_PHASE_FAILED)
        } else if let Some(reported) = reported {
            Some(reported.reason.clone())
        } else if !self.containers.is_empty() {
            Some(Reason::PODS_FAILING)
        } else {
            None
        }
    }

    fn unknown_sentence(&self) -> String {
        names_sentence("Pods with phase Unknown", &self.unknown, |p| p.name.clone())
    }

    fn failing_sentences(&self) -> String {
        let failed = names_sentence("Pods with phase Failed", &self.failed, |p| p.name.clone());
        let containers = names_sentence("Pods with failing containers", &self.containers, |p| {
            let containers = p
                .failing_containers
                .iter()
                .map(|c| {
                    let kind = if c.init {
                        "init container"
                    } else {
                        "container"
                    };
                    match (&c.reported, &c.config_error) {
                        (Some(stop), _) => format!(
                            "{kind} {} {}: {}: {}",
                            c.name, c.reason, stop.reason, stop.message
                        ),
                        (None, Some(error)) => {
                            format!("{kind} {} {}: {error}", c.name, c.reason)
                        }
                        (None, None) => format!("{kind} {} {}", c.name, c.reason),
                    }
                })
                .collect::<Vec<_>>()
                .join(", ");
            format!("{} ({containers})", p.name)
        });
        [failed, containers]
            .into_iter()
            .filter(|sentence| !sentence.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `"<label>: [a, b]."`, or empty when there are no pods.
fn names_sentence(
    label: &str,
    pods: &[&PodObservation],
    describe: impl Fn(&PodObservation) -> String,
) -> String {
    if pods.is_empty() {
        return String::new();
    }
    let names: Vec<String> = pods.iter().map(|p| describe(p)).collect();
    format!("{label}: [{}].", names.join(", "))
}
