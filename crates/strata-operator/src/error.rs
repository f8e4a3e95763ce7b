//! The reconcile error: every failure says whether the operator will retry on
//! its own or the user must change something.

use std::time::Duration;

/// Who has to act for a failed reconcile to succeed: the operator retries
/// `Transient` failures; `NeedsUser` failures wait for a change by the user.
pub use strata_status::FailureKind as ErrorKind;

/// The error of one pipeline step, as an enum whose variant names are the
/// condition reasons.
///
/// Deriving `strum::IntoStaticStr` on the enum makes each variant's name its
/// reason, so a reason is a name the compiler checks, not a string typed at
/// the place of failure; [`ReconcileError`] is built from any step error with
/// `?`. Each step says per variant who acts next ([`ErrorKind`]).
pub trait StepError: std::error::Error + Send + Sync + 'static {
    /// The condition reason: the variant's name.
    fn reason(&self) -> &'static str;
    /// Whether the operator retries, the user must act, or the operator is wrong.
    fn kind(&self) -> ErrorKind;
}

impl<E: StepError> From<E> for ReconcileError {
    fn from(error: E) -> Self {
        Self {
            kind: error.kind(),
            reason: error.reason().to_owned(),
            message: error.to_string(),
            source: Some(Box::new(error)),
        }
    }
}

/// The pure layer's validation errors: always the user's to fix.
macro_rules! user_errors {
    ($($error:ty),* $(,)?) => {
        $(impl StepError for $error {
            fn reason(&self) -> &'static str {
                <$error>::reason(self)
            }

            fn kind(&self) -> ErrorKind {
                ErrorKind::NeedsUser
            }
        })*
    };
}

user_errors!(
    strata_model::identity::IdentityError,
    strata_model::resources::ResourceError,
);

/// A product default set that leaves a field empty: the operator's bug.
impl StepError for strata_model::merge::MissingDefault {
    fn reason(&self) -> &'static str {
        "MissingDefault"
    }

    fn kind(&self) -> ErrorKind {
        ErrorKind::OperatorBug
    }
}

/// A role group's common settings: the user's to fix, unless the product defaults
/// are incomplete.
impl StepError for strata_model::role_group::CommonSettingsError {
    fn reason(&self) -> &'static str {
        Self::reason(self)
    }

    fn kind(&self) -> ErrorKind {
        match self {
            Self::Identity(error) => error.kind(),
            Self::MissingDefault(error) => error.kind(),
            Self::Resources { .. } | Self::InvalidGracefulShutdownTimeout { .. } => {
                ErrorKind::NeedsUser
            }
        }
    }
}

/// Who acts on a failed API request: 4xx answers other than conflicts,
/// throttling and timeouts mean the request itself is wrong (an object the API
/// server rejects), which retrying does not fix; everything else is transient.
pub fn kube_error_kind(error: &kube::Error) -> ErrorKind {
    match error {
        kube::Error::Api(status) if is_permanent_status(status.code) => ErrorKind::NeedsUser,
        _ => ErrorKind::Transient,
    }
}

/// A kube error as a sentence for a condition message: the API server's own
/// words when it answered.
pub fn describe_kube_error(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => format!(
            "the API server answered {} {}: {}",
            status.code, status.reason, status.message
        ),
        other => other.to_string(),
    }
}

/// A failed reconcile, with a machine-readable reason and a human message.
///
/// The reason becomes the `reason` of the Degraded condition and of the
/// Warning Event, so it is one CamelCase word. The message must never contain
/// secret values.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ReconcileError {
    kind: ErrorKind,
    reason: String,
    message: String,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl ReconcileError {
    /// A failure the operator retries.
    pub fn transient(reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::Transient,
            reason: reason.into(),
            message: message.into(),
            source: None,
        }
    }

    /// A failure only the user can fix.
    pub fn invalid_spec(reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::NeedsUser,
            reason: reason.into(),
            message: message.into(),
            source: None,
        }
    }

    /// A failure that is the operator's fault, not the user's: it is retried
    /// with backoff like a transient one and says so in the condition.
    pub fn operator_bug(reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::OperatorBug,
            reason: reason.into(),
            message: message.into(),
            source: None,
        }
    }

    /// Classifies a kube client error that happened while `doing` something.
    ///
    /// 4xx answers other than conflicts, throttling and timeouts mean the
    /// request itself is wrong (for example an object the API server
    /// rejects), which retrying does not fix; they need the user or a fixed
    /// operator. Everything else is transient.
    pub fn from_kube(
        reason: impl Into<String>,
        doing: impl Into<String>,
        source: kube::Error,
    ) -> Self {
        let kind = kube_error_kind(&source);
        let message = format!("{} failed: {}", doing.into(), describe_kube_error(&source));
        Self {
            kind,
            reason: reason.into(),
            message,
            source: Some(Box::new(source)),
        }
    }

    /// Appends what the user can do about it, after a semicolon.
    #[must_use]
    pub fn with_hint(mut self, hint: &str) -> Self {
        self.message = format!("{}; {hint}", self.message);
        self
    }

    /// Attaches the underlying error.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// Whether the operator retries or the user must act.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The failure as strata-status sees it, for the Degraded condition.
    ///
    /// A reason that is not a valid CamelCase word (a bug in the operator)
    /// falls back to the generic reason of its kind instead of failing.
    pub fn to_failure(&self) -> strata_status::ReconcileFailure {
        let reason = strata_status::Reason::new(self.reason.clone()).unwrap_or(match self.kind {
            ErrorKind::Transient | ErrorKind::OperatorBug => {
                strata_status::Reason::RECONCILE_ERROR_RETRYING
            }
            ErrorKind::NeedsUser => strata_status::Reason::INVALID_SPEC,
        });
        strata_status::ReconcileFailure::new(self.kind, reason, self.message.clone())
    }

    /// Whether a retry may succeed without a change to the spec.
    pub fn is_transient(&self) -> bool {
        self.kind != ErrorKind::NeedsUser
    }

    /// The CamelCase reason.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// The human message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

fn is_permanent_status(code: u16) -> bool {
    matches!(code, 400..=499) && !matches!(code, 404 | 408 | 409 | 429)
}

/// Exponential backoff for retries of one object.
///
/// Transient failures start fast and slow down; invalid specs wait long,
/// because the user's fix changes the object and triggers a reconcile anyway.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackoffPolicy {
    /// Delay after the first transient failure.
    pub initial: Duration,
    /// Upper bound for transient failures.
    pub max: Duration,
    /// Delay after an invalid-spec failure.
    pub invalid_spec: Duration,
}

impl Default for BackoffPolicy {
    fn default() -> Self {
        Self {
            initial: Duration::from_secs(2),
            max: Duration::from_secs(300),
            invalid_spec: Duration::from_secs(300),
        }
    }
}

impl BackoffPolicy {
    /// The delay before retry number `consecutive_failures` (1 for the first).
    pub fn delay(&self, kind: ErrorKind, consecutive_failures: u32) -> Duration {
        match kind {
            ErrorKind::NeedsUser => self.invalid_spec,
            ErrorKind::Transient | ErrorKind::OperatorBug => {
                let exponent = consecutive_failures.saturating_sub(1).min(16);
                self.initial.saturating_mul(1 << exponent).min(self.max)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use strata_model::merge::MissingDefault;
    use strata_model::role_group::CommonSettingsError;

    use super::*;

    #[rstest]
    #[case::missing_default_is_the_operators_bug(
        CommonSettingsError::MissingDefault(MissingDefault { field: "gracefulShutdownTimeout" }),
        ErrorKind::OperatorBug
    )]
    #[case::unparsable_timeout_is_the_users(
        CommonSettingsError::InvalidGracefulShutdownTimeout {
            field: "servers.roleGroups.default".to_owned(),
            source: strata_model::duration::parse_seconds("soon").expect_err("not a duration"),
        },
        ErrorKind::NeedsUser
    )]
    fn common_settings_errors_say_who_acts(
        #[case] error: CommonSettingsError,
        #[case] kind: ErrorKind,
    ) {
        let reason = error.reason();
        let error = ReconcileError::from(error);
        assert_eq!(error.kind(), kind);
        assert_eq!(error.reason(), reason);
    }

    #[rstest]
    #[case::first_transient_failure(ErrorKind::Transient, 1, 2)]
    #[case::second_transient_failure_doubles(ErrorKind::Transient, 2, 4)]
    #[case::fifth_transient_failure(ErrorKind::Transient, 5, 32)]
    #[case::transient_is_capped(ErrorKind::Transient, 30, 300)]
    #[case::invalid_spec_waits_for_the_user(ErrorKind::NeedsUser, 1, 300)]
    fn backoff(#[case] kind: ErrorKind, #[case] failures: u32, #[case] seconds: u64) {
        assert_eq!(
            BackoffPolicy::default().delay(kind, failures),
            Duration::from_secs(seconds)
        );
    }

    fn api_error(code: u16) -> kube::Error {
        kube::Error::Api(Box::new(kube::core::Status {
            code,
            reason: "Reason".into(),
            message: "message".into(),
            ..Default::default()
        }))
    }

    #[rstest]
    #[case::server_error_is_transient(500, ErrorKind::Transient)]
    #[case::conflict_is_transient(409, ErrorKind::Transient)]
    #[case::throttling_is_transient(429, ErrorKind::Transient)]
    #[case::not_found_is_transient(404, ErrorKind::Transient)]
    #[case::rejected_object_needs_a_fix(422, ErrorKind::NeedsUser)]
    #[case::forbidden_needs_a_fix(403, ErrorKind::NeedsUser)]
    fn classification(#[case] code: u16, #[case] kind: ErrorKind) {
        assert_eq!(
            ReconcileError::from_kube("ApplyFailed", "applying", api_error(code)).kind(),
            kind
        );
    }
}
