//! Leader election, so that an operator can run as more than one replica and
//! still have exactly one instance reconciling.
//!
//! Every instance competes for one `coordination.k8s.io/v1` Lease in its own
//! namespace, through `kube-lease-manager` (server-side apply makes two
//! simultaneous claims conflict instead of both succeeding). The holder runs
//! the controllers; the others wait, report ready and make no other request.
//! A leader that loses the Lease stops its controllers before anything else
//! happens and goes back to waiting; a leader that shuts down releases the
//! Lease, so a standby takes over within one lease duration instead of waiting
//! for it to expire.
//!
//! Every term starts the controllers afresh, with new watch caches: nothing a
//! former leader cached is trusted after a gap in which another instance may
//! have written.
//!
//! The lease manager says a leader lost the Lease only once a renewal came back
//! refused; a renewal that hangs (a slow API server, a stalled connection)
//! leaves it leading after the Lease expired and a standby took over, and then
//! two instances reconcile at once. So the leader also reads its Lease every
//! [`CONFIRM_PERIOD`] and ends its term by its own clock
//! once the last renewal it saw is about to expire, as
//! client-go's renew deadline does. The sandbox caught the split brain this
//! prevents: a renewal that took 24 s while the ZooKeeper operator's standby
//! took the Lease over, and both grew one ensemble.

use std::future::Future;
use std::pin::pin;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube_lease_manager::{LeaseCreateMode, LeaseManager, LeaseManagerBuilder};

use crate::controller::OperatorRuntime;
use crate::rbac::Verb;

/// How long a Lease stays valid without renewal: the longest a crashed
/// leader's clusters go unreconciled before a standby takes over. The same
/// value client-go's leader election uses by default.
pub const LEASE_DURATION: Duration = Duration::from_secs(15);

/// How long before expiry the leader renews its Lease: it renews 5 s after the
/// last renewal, so a renewal has 5 s to land before the term's own deadline
/// (client-go's renew deadline is 10 s of a 15 s Lease too).
pub const RENEW_GRACE: Duration = Duration::from_secs(10);

/// The requests the lease manager makes on its Lease: `get` to read it,
/// `create` the first time, `patch` to claim, renew and release it. The chart's
/// leader-election Role grants exactly these ([`crate::rbac::lease_rules`]).
pub const LEASE_VERBS: &[Verb] = &[Verb::Get, Verb::Create, Verb::Patch];

/// How long to wait before retrying after the Lease could not be read or
/// created (an unreachable API server, missing RBAC).
const RETRY_DELAY: Duration = Duration::from_secs(5);

/// How often the leader reads its Lease to confirm its renewals (client-go's
/// retry period), and how long one read may take.
pub const CONFIRM_PERIOD: Duration = Duration::from_secs(2);
const CONFIRM_TIMEOUT: Duration = Duration::from_secs(2);

/// The share of the Lease's duration by which a term ends before the last
/// renewal expires: the time its controllers have to stop, plus the clock skew
/// tolerated, before a standby may start (5 s of 15 s).
const STOP_MARGIN_DIVISOR: u32 = 3;

/// Which Lease an instance competes for, and as whom.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Election {
    /// The Lease's name: the operator's name, so that several operators can
    /// share a namespace.
    pub lease_name: String,
    /// The Lease's namespace: the operator's own.
    pub namespace: String,
    /// This instance's name in the Lease's `holderIdentity`; unique per process.
    pub identity: String,
    /// See [`LEASE_DURATION`].
    pub lease_duration: Duration,
    /// See [`RENEW_GRACE`].
    pub renew_grace: Duration,
}

impl Election {
    /// The election of `operator_name` in `namespace`, with the default timing.
    pub fn new(
        operator_name: impl Into<String>,
        namespace: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        Self {
            lease_name: operator_name.into(),
            namespace: namespace.into(),
            identity: identity.into(),
            lease_duration: LEASE_DURATION,
            renew_grace: RENEW_GRACE,
        }
    }
}

/// A holder identity for this process: the pod's (or host's) name, which an
/// administrator recognises in the Lease, plus a random suffix, so that a
/// restarted process never mistakes its predecessor's claim for its own.
pub fn identity(pod_name: Option<&str>) -> String {
    let name = pod_name
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
        .or_else(|| {
            std::env::var("HOSTNAME")
                .ok()
                .filter(|name| !name.is_empty())
        })
        .unwrap_or_else(|| "operator".to_owned());
    let suffix = crate::apply::random_token(4).unwrap_or_else(|_| std::process::id().to_string());
    format!("{name}_{suffix}")
}

/// Runs `run` whenever this instance holds the Lease, until `runtime.shutdown`
/// is cancelled; then releases the Lease.
///
/// `run` gets a runtime whose shutdown token is cancelled when the term ends
/// (the Lease was lost, or the process is stopping) and must return soon after.
pub async fn lead<F, Fut>(runtime: &OperatorRuntime, election: &Election, mut run: F)
where
    F: FnMut(OperatorRuntime) -> Fut,
    Fut: Future<Output = ()>,
{
    let shutdown = runtime.shutdown.clone();
    while !shutdown.is_cancelled() {
        let manager = tokio::select! {
            () = shutdown.cancelled() => return,
            manager = lease_manager(runtime, election) => manager,
        };
        let manager = match manager {
            Ok(manager) => manager,
            Err(error) => {
                tracing::warn!(
                    lease = %election.lease_name,
                    namespace = %election.namespace,
                    api_server = %runtime.api_server,
                    %error,
                    "cannot read or create the leader-election Lease; retrying in {}s",
                    RETRY_DELAY.as_secs()
                );
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(RETRY_DELAY) => continue,
                }
            }
        };
        let (mut is_leader, task) = manager.watch().await;
        loop {
            runtime.set_standby();
            tokio::select! {
                () = shutdown.cancelled() => break,
                held = is_leader.wait_for(|leader| *leader) => if held.is_err() { break },
            }
            let leases: Api<Lease> = Api::namespaced(runtime.client.clone(), &election.namespace);
            let Some(until) = confirmed_until(&leases, election).await else {
                // Held by the lease manager's account, not (yet) by the Lease: a
                // renewal is still on its way, or another instance holds it.
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = tokio::time::sleep(CONFIRM_PERIOD) => continue,
                }
            };
            tracing::info!(
                lease = %election.lease_name,
                identity = %election.identity,
                "holding the leader-election Lease; starting the controllers"
            );
            runtime.metrics.set_leader(true);
            let term = runtime.for_term();
            let mut controllers = pin!(run(term.clone()));
            let lost = tokio::select! {
                () = &mut controllers => false,
                _ = is_leader.wait_for(|leader| !*leader) => true,
                () = term_expired(&leases, election, until) => true,
            };
            term.shutdown.cancel();
            if lost {
                tracing::warn!(
                    lease = %election.lease_name,
                    identity = %election.identity,
                    "lost the leader-election Lease; stopping the controllers"
                );
                controllers.await;
            }
            runtime.metrics.set_leader(false);
            if shutdown.is_cancelled() || is_leader.has_changed().is_err() {
                break;
            }
        }
        // Dropping the receiver makes the lease manager release the Lease.
        drop(is_leader);
        match tokio::time::timeout(RETRY_DELAY, task).await {
            Ok(Ok(Ok(_))) => {
                tracing::info!(lease = %election.lease_name, "released the leader-election Lease");
            }
            Ok(Ok(Err(error))) => {
                tracing::warn!(lease = %election.lease_name, %error, "releasing the leader-election Lease failed; it expires on its own");
            }
            Ok(Err(error)) => {
                tracing::warn!(lease = %election.lease_name, %error, "the leader-election task failed");
            }
            Err(_) => {
                tracing::warn!(lease = %election.lease_name, "releasing the leader-election Lease timed out; it expires on its own");
            }
        }
    }
}

/// Whose the Lease is, as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Claim {
    /// This instance's, until the time its term must end by its own clock: a third
    /// of the Lease's duration before the last renewal expires, so that its
    /// controllers have stopped before a standby may start.
    Ours(SystemTime),
    /// Another instance's, or nobody's.
    NotOurs,
}

/// Reads `lease` for `election`'s instance.
fn claim(lease: &Lease, election: &Election) -> Claim {
    let Some(spec) = &lease.spec else {
        return Claim::NotOurs;
    };
    if spec.holder_identity.as_deref() != Some(election.identity.as_str()) {
        return Claim::NotOurs;
    }
    let renewed = spec
        .renew_time
        .as_ref()
        .or(spec.acquire_time.as_ref())
        .and_then(|time| u64::try_from(time.0.as_nanosecond()).ok())
        .map(|nanos| SystemTime::UNIX_EPOCH + Duration::from_nanos(nanos));
    match renewed {
        Some(renewed) => Claim::Ours(
            renewed + election.lease_duration - election.lease_duration / STOP_MARGIN_DIVISOR,
        ),
        None => Claim::NotOurs,
    }
}

/// The Lease's claim, or `None` when it cannot be read within [`CONFIRM_TIMEOUT`].
async fn read_claim(leases: &Api<Lease>, election: &Election) -> Option<Claim> {
    let lease = tokio::time::timeout(CONFIRM_TIMEOUT, leases.get(&election.lease_name))
        .await
        .ok()?
        .ok()?;
    Some(claim(&lease, election))
}

/// When this instance's term must end, if the Lease names it and that time is
/// still ahead.
async fn confirmed_until(leases: &Api<Lease>, election: &Election) -> Option<SystemTime> {
    match read_claim(leases, election).await? {
        Claim::Ours(until) if SystemTime::now() < until => Some(until),
        Claim::Ours(_) | Claim::NotOurs => None,
    }
}

/// Returns once the term must end: the Lease names another instance, or the last
/// renewal this instance saw confirmed is about to expire (a renewal that hangs
/// or fails confirms nothing). A read never delays the deadline: it races it.
async fn term_expired(leases: &Api<Lease>, election: &Election, mut until: SystemTime) {
    loop {
        let left = until
            .duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO);
        let confirmed = async {
            tokio::time::sleep(CONFIRM_PERIOD).await;
            read_claim(leases, election).await
        };
        tokio::select! {
            () = tokio::time::sleep(left) => {
                tracing::warn!(
                    lease = %election.lease_name,
                    identity = %election.identity,
                    "no renewal of the leader-election Lease confirmed in time; ending the term"
                );
                return;
            }
            claim = confirmed => match claim {
                Some(Claim::NotOurs) => return,
                Some(Claim::Ours(later)) => until = until.max(later),
                None => {}
            },
        }
    }
}

async fn lease_manager(
    runtime: &OperatorRuntime,
    election: &Election,
) -> Result<LeaseManager, kube_lease_manager::LeaseManagerError> {
    LeaseManagerBuilder::new(runtime.client.clone(), &election.lease_name)
        .with_namespace(&election.namespace)
        .with_create_mode(LeaseCreateMode::AutoCreate)
        .with_identity(&election.identity)
        .with_duration(election.lease_duration.as_secs())
        .with_grace(election.renew_grace.as_secs())
        .build()
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
    use rstest::rstest;

    fn lease(holder: Option<&str>, renewed_secs: Option<i64>) -> Lease {
        let mut lease = Lease::default();
        let spec = lease.spec.get_or_insert_default();
        spec.holder_identity = holder.map(str::to_owned);
        spec.renew_time =
            renewed_secs.map(|secs| MicroTime(jiff::Timestamp::from_second(secs).expect("a time")));
        lease
    }

    #[rstest]
    #[case::ours_until_a_third_of_the_duration_before_expiry(Some("me_1"), Some(1_000), Claim::Ours(
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_010)
    ))]
    #[case::another_instance_holds_it(Some("other_2"), Some(1_000), Claim::NotOurs)]
    #[case::released(None, Some(1_000), Claim::NotOurs)]
    #[case::ours_without_a_renewal_time(Some("me_1"), None, Claim::NotOurs)]
    fn a_term_lasts_until_a_third_of_the_duration_before_the_last_renewal_expires(
        #[case] holder: Option<&str>,
        #[case] renewed_secs: Option<i64>,
        #[case] expected: Claim,
    ) {
        let election = Election::new("op", "ns", "me_1");
        assert_eq!(claim(&lease(holder, renewed_secs), &election), expected);
    }

    #[test]
    fn the_identity_names_the_pod_and_differs_per_process() {
        let first = identity(Some("zookeeper-operator-7f9c-abcde"));
        let second = identity(Some("zookeeper-operator-7f9c-abcde"));
        assert!(
            first.starts_with("zookeeper-operator-7f9c-abcde_"),
            "{first}"
        );
        assert_ne!(first, second, "a restarted process never inherits a claim");
    }

    #[test]
    fn without_a_pod_name_the_identity_still_has_a_readable_part() {
        let identity = identity(Some(""));
        let (name, suffix) = identity.rsplit_once('_').expect("name_suffix");
        assert!(!name.is_empty() && !suffix.is_empty(), "{identity}");
    }

    #[test]
    fn the_lease_is_named_after_the_operator_and_renewed_before_it_expires() {
        let election = Election::new("zookeeper-operator", "operators", "me");
        assert_eq!(election.lease_name, "zookeeper-operator");
        assert!(election.renew_grace < election.lease_duration);
    }
}
