//! Reconcile failures as they appear in status.
//!
//! Seed 001: a user must see whether a failure goes away by itself or needs
//! them. The kind decides the wording of the Degraded message, and the
//! constructors pick reasons that say it too (`ReconcileErrorRetrying` vs
//! `InvalidSpec` / `NeedsUserAction`).

use crate::{
    condition::{ConditionStatus, ConditionType, ConditionUpdate},
    reason::Reason,
};

/// Who resolves a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::Display)]
pub enum FailureKind {
    /// The operator retries with backoff; e.g. the API server was unreachable.
    Transient,
    /// Nothing changes until the user acts; e.g. an invalid spec or a
    /// missing Secret.
    NeedsUser,
    /// The operator itself is wrong (it built an object the API server cannot
    /// take, or lost track of a finalizer). Not the user's fault: the operator
    /// retries with backoff, and the message asks for a bug report.
    OperatorBug,
}

/// A failure of the last reconcile, reported as Degraded True.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReconcileFailure {
    /// Who resolves it.
    pub kind: FailureKind,
    /// The Degraded reason. Prefer one that says who acts; the constructors
    /// below do.
    pub reason: Reason,
    /// What went wrong, for humans.
    pub message: String,
}

impl ReconcileFailure {
    /// A failure with an operator-specific reason.
    #[must_use]
    pub fn new(kind: FailureKind, reason: Reason, message: impl Into<String>) -> Self {
        Self {
            kind,
            reason,
            message: message.into(),
        }
    }

    /// A transient failure (`ReconcileErrorRetrying`).
    #[must_use]
    pub fn transient(message: impl Into<String>) -> Self {
        Self::new(
            FailureKind::Transient,
            Reason::RECONCILE_ERROR_RETRYING,
            message,
        )
    }

    /// An invalid spec (`InvalidSpec`).
    #[must_use]
    pub fn invalid_spec(message: impl Into<String>) -> Self {
        Self::new(FailureKind::NeedsUser, Reason::INVALID_SPEC, message)
    }

    /// Any other failure the user must resolve (`NeedsUserAction`).
    #[must_use]
    pub fn needs_user(message: impl Into<String>) -> Self {
        Self::new(FailureKind::NeedsUser, Reason::NEEDS_USER_ACTION, message)
    }

    /// The sentence telling the user who acts next.
    #[must_use]
    pub fn follow_up(&self) -> &'static str {
        match self.kind {
            FailureKind::Transient => "The operator retries automatically.",
            FailureKind::NeedsUser => "The operator cannot continue until this is fixed.",
            FailureKind::OperatorBug => {
                "This is a bug in the operator; please report it. The operator retries automatically."
            }
        }
    }

    /// Degraded True for this failure, with the failure's reason and a
    /// message ending in [`follow_up`](Self::follow_up).
    #[must_use]
    pub fn degraded_condition(&self) -> ConditionUpdate {
        ConditionUpdate::new(
            ConditionType::Degraded,
            ConditionStatus::True,
            self.reason.clone(),
            format!("{} {}", sentence(&self.message), self.follow_up()),
        )
    }
}

/// Ends a message with a full stop unless it already has one, so messages
/// joined from several parts stay sentences.
pub(crate) fn sentence(message: &str) -> String {
    let trimmed = message.trim_end();
    if trimmed.ends_with(['.', '!', '?']) {
        trimmed.to_owned()
    } else {
        format!("{trimmed}.")
    }
}
