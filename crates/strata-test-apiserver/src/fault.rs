//! Fault injection: make chosen requests fail or slow down, to test retries and backoff.

use std::time::Duration;

use crate::requests::{RequestRecord, Verb};

/// What an injected fault does to a matching request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaultEffect {
    /// Answer with this HTTP code and a matching `Status` body, without touching state.
    Status(u16),
    /// Answer 409 Conflict, as for a stale resourceVersion.
    Conflict,
    /// Wait this long, then serve the request normally.
    Delay(Duration),
}

/// How many matching requests a fault affects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultTimes {
    /// The next `n` matching requests.
    Times(u32),
    /// Every matching request until [`crate::TestApiServer::clear_faults`].
    Always,
}

/// Which requests a fault applies to; `None` fields match anything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultMatcher {
    /// RBAC verb.
    pub verb: Option<Verb>,
    /// Resource as in [`RequestRecord::is_for`]: `plural`, `plural.group`, `plural/status`.
    pub resource: Option<String>,
    /// Object name.
    pub name: Option<String>,
}

impl FaultMatcher {
    /// Whether a request is affected.
    pub fn matches(&self, request: &RequestRecord) -> bool {
        self.verb.is_none_or(|v| v == request.verb)
            && self.resource.as_deref().is_none_or(|r| request.is_for(r))
            && self
                .name
                .as_deref()
                .is_none_or(|n| request.name.as_deref() == Some(n))
    }
}

/// A fault to inject with [`crate::TestApiServer::inject`].
///
/// ```
/// use std::time::Duration;
/// use strata_test_apiserver::{Fault, Verb};
///
/// let flaky_status = Fault::status(500).verb(Verb::Patch).resource("statefulsets/status").times(2);
/// let slow_lists = Fault::delay(Duration::from_millis(200)).verb(Verb::List).always();
/// # let _ = (flaky_status, slow_lists);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// Which requests are affected.
    pub matcher: FaultMatcher,
    /// How many times.
    pub times: FaultTimes,
    /// What happens.
    pub effect: FaultEffect,
}

impl Fault {
    /// A fault affecting the next request of any kind once; narrow it with the builders.
    pub fn new(effect: FaultEffect) -> Self {
        Self {
            matcher: FaultMatcher::default(),
            times: FaultTimes::Times(1),
            effect,
        }
    }

    /// Fail with an HTTP status code (500, 503, 429, ...).
    pub fn status(code: u16) -> Self {
        Self::new(FaultEffect::Status(code))
    }

    /// Fail with 409 Conflict.
    pub fn conflict() -> Self {
        Self::new(FaultEffect::Conflict)
    }

    /// Delay the request.
    pub fn delay(duration: Duration) -> Self {
        Self::new(FaultEffect::Delay(duration))
    }

    /// Only requests with this verb.
    #[must_use]
    pub fn verb(mut self, verb: Verb) -> Self {
        self.matcher.verb = Some(verb);
        self
    }

    /// Only requests for this resource (`plural`, `plural.group`, `plural/status`).
    #[must_use]
    pub fn resource(mut self, resource: impl Into<String>) -> Self {
        self.matcher.resource = Some(resource.into());
        self
    }

    /// Only requests for the object with this name.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.matcher.name = Some(name.into());
        self
    }

    /// Affect the next `n` matching requests.
    #[must_use]
    pub fn times(mut self, n: u32) -> Self {
        self.times = FaultTimes::Times(n);
        self
    }

    /// Affect every matching request.
    #[must_use]
    pub fn always(mut self) -> Self {
        self.times = FaultTimes::Always;
        self
    }

    /// Consumes one use if the fault applies to `request`; returns the effect to apply.
    pub(crate) fn take(&mut self, request: &RequestRecord) -> Option<FaultEffect> {
        if !self.matcher.matches(request) {
            return None;
        }
        match &mut self.times {
            FaultTimes::Always => Some(self.effect.clone()),
            FaultTimes::Times(0) => None,
            FaultTimes::Times(n) => {
                *n -= 1;
                Some(self.effect.clone())
            }
        }
    }

    /// Whether the fault can still fire.
    pub(crate) fn is_active(&self) -> bool {
        self.times != FaultTimes::Times(0)
    }
}

/// What the faults decided for one request: a total delay, then maybe a failure.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Decision {
    pub(crate) delay: Duration,
    pub(crate) failure: Option<u16>,
}

/// Runs the request past every active fault in injection order.
///
/// Delays add up; the first failing fault wins and later ones are not consumed.
pub(crate) fn decide(faults: &mut Vec<Fault>, request: &RequestRecord) -> Decision {
    let mut decision = Decision::default();
    for fault in faults.iter_mut() {
        match fault.take(request) {
            Some(FaultEffect::Delay(d)) => decision.delay += d,
            Some(FaultEffect::Status(code)) => {
                decision.failure = Some(code);
                break;
            }
            Some(FaultEffect::Conflict) => {
                decision.failure = Some(409);
                break;
            }
            None => {}
        }
    }
    faults.retain(Fault::is_active);
    decision
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(verb: Verb, name: &str) -> RequestRecord {
        RequestRecord {
            verb,
            group: "apps".into(),
            resource: "statefulsets".into(),
            subresource: None,
            namespace: Some("ns".into()),
            name: Some(name.into()),
            field_manager: None,
            apply: false,
            metadata_only: false,
            user: None,
        }
    }

    #[test]
    fn counted_fault_fires_n_times_then_disappears() {
        let mut faults = vec![Fault::status(500).verb(Verb::Patch).times(2)];
        let patch = request(Verb::Patch, "a");
        assert_eq!(decide(&mut faults, &request(Verb::Get, "a")).failure, None);
        assert_eq!(decide(&mut faults, &patch).failure, Some(500));
        assert_eq!(decide(&mut faults, &patch).failure, Some(500));
        assert_eq!(decide(&mut faults, &patch).failure, None);
        assert!(faults.is_empty());
    }

    #[test]
    fn delays_add_up_and_first_failure_wins() {
        let ms = Duration::from_millis;
        let mut faults = vec![
            Fault::delay(ms(10)).always(),
            Fault::conflict().name("a"),
            Fault::status(503).always(),
        ];
        let decision = decide(&mut faults, &request(Verb::Get, "a"));
        assert_eq!(
            decision,
            Decision {
                delay: ms(10),
                failure: Some(409)
            }
        );
        let decision = decide(&mut faults, &request(Verb::Get, "a"));
        assert_eq!(
            decision,
            Decision {
                delay: ms(10),
                failure: Some(503)
            }
        );
        assert_eq!(faults.len(), 2);
    }
}
