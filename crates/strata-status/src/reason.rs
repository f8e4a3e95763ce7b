//! The machine-readable `reason` of a condition.
//!
//! Seeds 001 and 003 agree: every condition carries a reason, happy ones
//! included, and the reason is one CamelCase word that tools can aggregate on
//! (`count by (reason)`). [`Reason`] makes that a type, so a
//! [`ConditionUpdate`](crate::ConditionUpdate) cannot be built without one and
//! cannot carry a sentence where a word belongs.
//!
//! # Vocabulary
//!
//! | reason | condition(s) | meaning |
//! | --- | --- | --- |
//! | `AsExpected` | any | the happy case |
//! | `ReplicasUnavailable` | Available False | fewer replicas available than desired, no pod in phase Unknown |
//! | `PodPhaseUnknown` | Available Unknown, Degraded True | replicas missing and some pod's phase is Unknown (node lost) |
//! | `PodPhaseFailed` | Progressing False, Degraded True | replicas missing and some pod's phase is Failed |
//! | `PodsFailing` | Progressing False, Degraded True | replicas missing and some container waits in a failure state (crash loop, image pull) |
//! | `ReplicasChanging` | Progressing True | the replica count is moving towards the desired one |
//! | `RolloutInProgress` | Progressing True | a new pod template or spec is being rolled out |
//! | `ProgressDeadlineExceeded` | Progressing False, Degraded True | the Deployment controller gave up on a rollout after `progressDeadlineSeconds` |
//! | `NoWorkloads` | Available False, Progressing False | nothing has been observed to run |
//! | `ReconcileErrorRetrying` | Degraded True | a transient reconcile error; the operator retries by itself |
//! | `InvalidSpec` | Degraded True | the spec cannot be reconciled; the user must change it |
//! | `NeedsUserAction` | Degraded True | any other failure that only the user can fix |
//! | `UnknownOperatorCommand` | Degraded True | the `operator-command` annotation has a value other than `Paused` or `Stopped` |
//! | `ReconciliationPaused` | Paused True, Upgradable False | the operator does not change the cluster |
//! | `ClusterStopped` | Stopped True, Available False, Progressing False, Degraded False | all replicas are set to 0 by request |
//! | `NotAvailable` | Upgradable False | blocked because the cluster is not Available |
//! | `Degraded` | Upgradable False | blocked because the cluster is (or may be) Degraded |
//! | `Progressing` | Upgradable False | blocked because the cluster is Progressing |
//!
//! A container that stops on purpose may name the Degraded reason itself through its
//! termination message ([`ReportedStop`](crate::ReportedStop)).
//!
//! Operators add their own reasons with [`reason!`](crate::reason!) (checked at
//! compile time) or [`Reason::new`] (checked at run time).

use std::{borrow::Cow, fmt};

/// Longest reason Kubernetes accepts on a `metav1.Condition`; we keep the same
/// limit so our reasons stay valid if copied into one.
pub const MAX_REASON_LEN: usize = 1024;

/// A validated condition reason: one CamelCase word.
///
/// The rule is stricter than the `metav1.Condition` pattern on purpose: an
/// upper-case ASCII letter followed by ASCII letters and digits, at most
/// [`MAX_REASON_LEN`] bytes. No separators, so it reads as one word everywhere.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Reason(Cow<'static, str>);

/// A string that is not one CamelCase word, returned by [`Reason::new`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "condition reason {value:?} is not one CamelCase word (an upper-case ASCII letter, then ASCII letters or digits, at most {MAX_REASON_LEN} bytes)"
)]
pub struct InvalidReason {
    /// The rejected value, for the caller's error message.
    pub value: String,
}

/// `const`-evaluable check of the reason rule, shared by [`Reason::new`] and
/// the compile-time [`reason!`](crate::reason!) macro.
#[must_use]
pub const fn is_valid_reason(value: &str) -> bool {
    let bytes = value.as_bytes();
    if bytes.is_empty() || bytes.len() > MAX_REASON_LEN || !bytes[0].is_ascii_uppercase() {
        return false;
    }
    let mut index = 1;
    while index < bytes.len() {
        if !bytes[index].is_ascii_alphanumeric() {
            return false;
        }
        index += 1;
    }
    true
}

impl Reason {
    /// The happy reason for every condition type (seed 003).
    pub const AS_EXPECTED: Self = Self::constant("AsExpected");
    /// Available False: replicas are missing and no pod's phase is Unknown.
    pub const REPLICAS_UNAVAILABLE: Self = Self::constant("ReplicasUnavailable");
    /// Replicas are missing and some pod's phase is Unknown.
    pub const POD_PHASE_UNKNOWN: Self = Self::constant("PodPhaseUnknown");
    /// Replicas are missing and some pod's phase is Failed.
    pub const POD_PHASE_FAILED: Self = Self::constant("PodPhaseFailed");
    /// Replicas are missing and some container waits in a failure state.
    pub const PODS_FAILING: Self = Self::constant("PodsFailing");
    /// Progressing True: the number of available replicas is moving.
    pub const REPLICAS_CHANGING: Self = Self::constant("ReplicasChanging");
    /// Progressing True: a new spec or pod template is being rolled out.
    pub const ROLLOUT_IN_PROGRESS: Self = Self::constant("RolloutInProgress");
    /// Progressing False and Degraded True: the Deployment controller gave up
    /// on a rollout after `progressDeadlineSeconds`. The same word Kubernetes
    /// uses, so users can search for it.
    pub const PROGRESS_DEADLINE_EXCEEDED: Self = Self::constant("ProgressDeadlineExceeded");
    /// No workload was observed, so nothing can be available.
    pub const NO_WORKLOADS: Self = Self::constant("NoWorkloads");
    /// Degraded True after a transient error: the operator retries by itself.
    pub const RECONCILE_ERROR_RETRYING: Self = Self::constant("ReconcileErrorRetrying");
    /// Degraded True: the spec is invalid and the user must change it.
    pub const INVALID_SPEC: Self = Self::constant("InvalidSpec");
    /// Degraded True: a failure only the user can resolve.
    pub const NEEDS_USER_ACTION: Self = Self::constant("NeedsUserAction");
    /// Degraded True: the `operator-command` annotation value is not understood.
    pub const UNKNOWN_OPERATOR_COMMAND: Self = Self::constant("UnknownOperatorCommand");
    /// Paused True (and Upgradable False): reconciliation is paused.
    pub const RECONCILIATION_PAUSED: Self = Self::constant("ReconciliationPaused");
    /// Stopped True: all replicas are set to 0 by request.
    pub const CLUSTER_STOPPED: Self = Self::constant("ClusterStopped");
    /// Upgradable False: the cluster is not Available.
    pub const NOT_AVAILABLE: Self = Self::constant("NotAvailable");
    /// Upgradable False: the cluster is or may be Degraded.
    pub const DEGRADED: Self = Self::constant("Degraded");
    /// Upgradable False: the cluster is Progressing.
    pub const PROGRESSING: Self = Self::constant("Progressing");

    /// Validates a reason computed at run time.
    ///
    /// # Errors
    ///
    /// [`InvalidReason`] when `value` is not one CamelCase word.
    pub fn new(value: impl Into<String>) -> Result<Self, InvalidReason> {
        let value = value.into();
        if is_valid_reason(&value) {
            Ok(Self(Cow::Owned(value)))
        } else {
            Err(InvalidReason { value })
        }
    }

    /// Builds a reason from a literal, failing *compilation* when it is
    /// invalid. Use it through [`reason!`](crate::reason!), which forces
    /// evaluation in a `const` block; called at run time it could not report
    /// an error, which is why it is hidden.
    #[doc(hidden)]
    #[must_use]
    pub const fn __from_literal(value: &'static str) -> Self {
        assert!(
            is_valid_reason(value),
            "a condition reason must be one CamelCase word"
        );
        Self(Cow::Borrowed(value))
    }

    /// Our own vocabulary; every entry is covered by a unit test.
    const fn constant(value: &'static str) -> Self {
        Self(Cow::Borrowed(value))
    }

    /// The reason as written into the condition.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Reason {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<Reason> for String {
    fn from(reason: Reason) -> Self {
        reason.0.into_owned()
    }
}

/// A [`Reason`] from a string literal, checked at compile time.
///
/// ```
/// const UNREACHABLE: strata_status::Reason = strata_status::reason!("ZookeeperUnreachable");
/// assert_eq!(UNREACHABLE.as_str(), "ZookeeperUnreachable");
/// ```
///
/// An invalid literal does not compile:
///
/// ```compile_fail
/// let _ = strata_status::reason!("not a reason");
/// ```
#[macro_export]
macro_rules! reason {
    ($value:literal) => {
        const { $crate::Reason::__from_literal($value) }
    };
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::as_expected(Reason::AS_EXPECTED)]
    #[case::replicas_unavailable(Reason::REPLICAS_UNAVAILABLE)]
    #[case::pod_phase_unknown(Reason::POD_PHASE_UNKNOWN)]
    #[case::pod_phase_failed(Reason::POD_PHASE_FAILED)]
    #[case::pods_failing(Reason::PODS_FAILING)]
    #[case::replicas_changing(Reason::REPLICAS_CHANGING)]
    #[case::rollout_in_progress(Reason::ROLLOUT_IN_PROGRESS)]
    #[case::progress_deadline_exceeded(Reason::PROGRESS_DEADLINE_EXCEEDED)]
    #[case::no_workloads(Reason::NO_WORKLOADS)]
    #[case::reconcile_error_retrying(Reason::RECONCILE_ERROR_RETRYING)]
    #[case::invalid_spec(Reason::INVALID_SPEC)]
    #[case::needs_user_action(Reason::NEEDS_USER_ACTION)]
    #[case::unknown_operator_command(Reason::UNKNOWN_OPERATOR_COMMAND)]
    #[case::reconciliation_paused(Reason::RECONCILIATION_PAUSED)]
    #[case::cluster_stopped(Reason::CLUSTER_STOPPED)]
    #[case::not_available(Reason::NOT_AVAILABLE)]
    #[case::degraded(Reason::DEGRADED)]
    #[case::progressing(Reason::PROGRESSING)]
    fn vocabulary_entry_is_valid(#[case] reason: Reason) {
        assert!(is_valid_reason(reason.as_str()), "{reason}");
    }

    #[rstest]
    #[case::camel_case_word("AsExpected", true)]
    #[case::with_digits("Http2Failed", true)]
    #[case::single_capital("X", true)]
    #[case::empty("", false)]
    #[case::lower_case_start("asExpected", false)]
    #[case::contains_space("As Expected", false)]
    #[case::contains_colon("Pods:Failing", false)]
    #[case::contains_underscore("Pods_Failing", false)]
    #[case::non_ascii("Ärger", false)]
    #[case::too_long(&"A".repeat(MAX_REASON_LEN + 1), false)]
    #[case::longest_allowed(&"A".repeat(MAX_REASON_LEN), true)]
    fn validates_reason(#[case] value: &str, #[case] valid: bool) {
        assert_eq!(Reason::new(value).is_ok(), valid, "{value:?}");
    }

    #[test]
    fn invalid_reason_error_names_value() {
        let error = Reason::new("bad reason").unwrap_err();
        assert!(error.to_string().contains("\"bad reason\""), "{error}");
    }

    #[test]
    fn macro_builds_reason_at_compile_time() {
        const CUSTOM: Reason = crate::reason!("ZnodeMissing");
        assert_eq!(String::from(CUSTOM), "ZnodeMissing");
    }
}
