//! The Paused and Stopped operations, from the spec or from the ADR027
//! annotation.
//!
//! Two ways to ask for the same thing:
//!
//! - `spec.clusterOperation.reconciliationPaused: true` and
//!   `spec.clusterOperation.stopped: true`: declarative, for GitOps.
//! - the annotation `operator-command` with value `Paused` or `Stopped`
//!   (exactly as ADR027 names them, case-sensitive): for a quick
//!   `kubectl annotate`.
//!
//! **Precedence:** an operation is on when the spec field is true **or** the
//! annotation asks for it. Neither can switch off what the other switched
//! on; to resume, clear both. When both ask, the spec is reported as the
//! trigger, since removing only the annotation would change nothing.
//!
//! The annotation holds one value, so it can request one operation; the spec
//! can request both. An annotation value other than `Paused` or `Stopped` is
//! not ignored: it is kept in [`OperationState::unknown_command`] and turned
//! into a needs-user [`ReconcileFailure`] by
//! [`OperationState::unknown_command_failure`].

use std::{collections::BTreeMap, fmt};

use crate::{
    condition::{ConditionStatus, ConditionType, ConditionUpdate},
    error::{FailureKind, ReconcileFailure},
    reason::Reason,
};

/// The annotation of ADR027.
pub const OPERATOR_COMMAND_ANNOTATION: &str = "operator-command";
/// Annotation value that pauses reconciliation.
pub const COMMAND_PAUSED: &str = "Paused";
/// Annotation value that stops the cluster.
pub const COMMAND_STOPPED: &str = "Stopped";

/// What switched an operation on; named in the condition message so the
/// user knows what to undo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OperationTrigger {
    /// A `spec.clusterOperation` field.
    Spec,
    /// The `operator-command` annotation.
    Annotation,
}

/// The operations requested for a cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OperationState {
    /// Set when reconciliation is paused.
    pub paused: Option<OperationTrigger>,
    /// Set when the cluster is stopped.
    pub stopped: Option<OperationTrigger>,
    /// An `operator-command` value that is neither `Paused` nor `Stopped`.
    pub unknown_command: Option<String>,
}

impl OperationState {
    /// Resolves the spec fields and annotations by the documented precedence.
    #[must_use]
    pub fn resolve(
        spec_reconciliation_paused: bool,
        spec_stopped: bool,
        annotations: &BTreeMap<String, String>,
    ) -> Self {
        let command = annotations
            .get(OPERATOR_COMMAND_ANNOTATION)
            .map(String::as_str);
        let trigger = |spec: bool, value: &str| {
            if spec {
                Some(OperationTrigger::Spec)
            } else if command == Some(value) {
                Some(OperationTrigger::Annotation)
            } else {
                None
            }
        };
        Self {
            paused: trigger(spec_reconciliation_paused, COMMAND_PAUSED),
            stopped: trigger(spec_stopped, COMMAND_STOPPED),
            unknown_command: command
                .filter(|value| *value != COMMAND_PAUSED && *value != COMMAND_STOPPED)
                .map(str::to_owned),
        }
    }

    /// Whether the operator must not change the cluster's objects.
    #[must_use]
    pub fn is_paused(&self) -> bool {
        self.paused.is_some()
    }

    /// Whether all replicas must be 0.
    #[must_use]
    pub fn is_stopped(&self) -> bool {
        self.stopped.is_some()
    }

    /// The Paused condition.
    #[must_use]
    pub fn paused_condition(&self) -> ConditionUpdate {
        match self.paused {
            Some(trigger) => ConditionUpdate::new(
                ConditionType::Paused,
                ConditionStatus::True,
                Reason::RECONCILIATION_PAUSED,
                format!(
                    "Reconciliation is paused by {}; the operator does not change the cluster.",
                    Source(
                        trigger,
                        "spec.clusterOperation.reconciliationPaused",
                        COMMAND_PAUSED
                    )
                ),
            ),
            None => ConditionUpdate::new(
                ConditionType::Paused,
                ConditionStatus::False,
                Reason::AS_EXPECTED,
                "The cluster is reconciled by the operator.",
            ),
        }
    }

    /// The Stopped condition.
    #[must_use]
    pub fn stopped_condition(&self) -> ConditionUpdate {
        match self.stopped {
            Some(trigger) => ConditionUpdate::new(
                ConditionType::Stopped,
                ConditionStatus::True,
                Reason::CLUSTER_STOPPED,
                format!(
                    "The cluster is stopped by {}; all replicas are set to 0.",
                    Source(trigger, "spec.clusterOperation.stopped", COMMAND_STOPPED)
                ),
            ),
            None => ConditionUpdate::new(
                ConditionType::Stopped,
                ConditionStatus::False,
                Reason::AS_EXPECTED,
                "The cluster is not stopped.",
            ),
        }
    }

    /// A needs-user failure for an unknown annotation value, so it shows up
    /// as Degraded (and can be sent as an Event) instead of being ignored.
    #[must_use]
    pub fn unknown_command_failure(&self) -> Option<ReconcileFailure> {
        self.unknown_command.as_ref().map(|value| {
            ReconcileFailure::new(
                FailureKind::NeedsUser,
                Reason::UNKNOWN_OPERATOR_COMMAND,
                format!(
                    "The annotation {OPERATOR_COMMAND_ANNOTATION}={value:?} is not understood and has no effect; use {COMMAND_PAUSED:?} or {COMMAND_STOPPED:?}, or remove it."
                ),
            )
        })
    }
}

/// Renders a trigger as the field or annotation the user set.
struct Source(OperationTrigger, &'static str, &'static str);

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            OperationTrigger::Spec => f.write_str(self.1),
            OperationTrigger::Annotation => {
                write!(f, "the annotation {OPERATOR_COMMAND_ANNOTATION}={}", self.2)
            }
        }
    }
}
