//! Whether a certificate renewal's roll fits in the time the old certificate has left.
//!
//! The operator renews a certificate two thirds into its lifetime, and every pod reads
//! its certificate only when it starts: the pods not yet rolled present the old one,
//! which expires a third of the lifetime after the renewal. The pods roll one at a
//! time, and a worker's turn can last its whole termination grace period (it drains
//! its queries first, up to `gracefulShutdownTimeout`). So a cluster whose pods can
//! take longer than that third to roll ends with workers serving expired certificates,
//! which the coordinator drops (security review, finding 12). The worst case is rare
//! (drains are usually short), so it is a Warning, not a refusal: the user shortens
//! `gracefulShutdownTimeout` or lengthens `certificateLifetime`.

use std::time::Duration;

use strata_status::{Reason, SpecWarning};

/// What each pod's turn in a roll costs besides its termination: the scheduling, the
/// JVM's start and the readiness probe of a Trino 483 node, 30 to 60 s on a
/// production machine.
pub const START_ALLOWANCE_SECONDS: u64 = 60;

/// The reason of the Warning.
pub const ROLL_OUTLASTS_RENEWAL: &str = "CertificateRollOutlastsRenewal";

/// The longest a roll of these role groups can take: for each pod, one after the other,
/// its termination grace period and [`START_ALLOWANCE_SECONDS`]. `groups` gives each
/// role group's replicas and termination grace period in seconds.
pub fn worst_roll(groups: &[(u16, i64)]) -> Duration {
    let seconds = groups
        .iter()
        .map(|&(replicas, grace)| {
            u64::from(replicas).saturating_mul(
                grace
                    .max(0)
                    .unsigned_abs()
                    .saturating_add(START_ALLOWANCE_SECONDS),
            )
        })
        .fold(0_u64, u64::saturating_add);
    Duration::from_secs(seconds)
}

/// The Warning for a certificate `lifetime` whose last third is shorter than the
/// worst roll of `groups`, or `None`.
pub fn roll_budget_warning(lifetime: Duration, groups: &[(u16, i64)]) -> Option<SpecWarning> {
    let left_after_renewal = lifetime / 3;
    let roll = worst_roll(groups);
    (roll > left_after_renewal).then(|| SpecWarning {
        reason: Reason::new(ROLL_OUTLASTS_RENEWAL).unwrap_or(Reason::AS_EXPECTED),
        message: format!(
            "clusterConfig.tls.certificateLifetime leaves {} between a renewal and the old \
             certificate's expiry, but rolling every pod onto the new one can take {} (each \
             pod in turn: its termination grace period, which holds a worker's drain of up \
             to gracefulShutdownTimeout, and {START_ALLOWANCE_SECONDS} s to start): pods \
             not yet rolled would serve an expired certificate. Make certificateLifetime at \
             least {}, or gracefulShutdownTimeout shorter",
            human(left_after_renewal),
            human(roll),
            human(roll * 3),
        ),
    })
}

/// `1h 5m`, `5m`, `40s`: whole units, the two largest.
fn human(duration: Duration) -> String {
    let seconds = duration.as_secs();
    let (days, hours, minutes, rest) = (
        seconds / 86_400,
        seconds % 86_400 / 3_600,
        seconds % 3_600 / 60,
        seconds % 60,
    );
    let parts: Vec<String> = [(days, "d"), (hours, "h"), (minutes, "m"), (rest, "s")]
        .into_iter()
        .skip_while(|(value, _)| *value == 0)
        .take(2)
        .filter(|(value, _)| *value > 0)
        .map(|(value, unit)| format!("{value}{unit}"))
        .collect();
    if parts.is_empty() {
        "0s".to_owned()
    } else {
        parts.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    const HOUR: u64 = 3_600;
    /// A worker's termination grace period with the defaults: 2 × 30 s + 1h + 45 s.
    const DEFAULT_WORKER_GRACE: i64 = 3_705;

    #[rstest]
    #[case::the_defaults_and_ten_workers(30 * 24 * HOUR, &[(1, 75), (10, DEFAULT_WORKER_GRACE)], false)]
    #[case::ten_workers_draining_an_hour_in_a_day(24 * HOUR, &[(1, 75), (10, DEFAULT_WORKER_GRACE)], true)]
    #[case::two_workers_draining_an_hour_in_a_day(24 * HOUR, &[(1, 75), (2, DEFAULT_WORKER_GRACE)], false)]
    #[case::five_minutes_and_quick_drains(300, &[(1, 30), (0, 100)], false)]
    #[case::five_minutes_and_a_default_drain(300, &[(1, 75), (1, DEFAULT_WORKER_GRACE)], true)]
    #[case::no_pods(300, &[], false)]
    fn a_roll_longer_than_the_last_third_of_the_lifetime_is_warned_of(
        #[case] lifetime_seconds: u64,
        #[case] groups: &[(u16, i64)],
        #[case] warned: bool,
    ) {
        let warning = roll_budget_warning(Duration::from_secs(lifetime_seconds), groups);
        assert_eq!(warning.is_some(), warned, "{warning:?}");
        if let Some(warning) = warning {
            assert_eq!(warning.reason.as_str(), ROLL_OUTLASTS_RENEWAL);
        }
    }

    #[test]
    fn the_message_names_the_time_left_the_roll_and_a_lifetime_that_fits() {
        let warning = roll_budget_warning(
            Duration::from_secs(24 * HOUR),
            &[(1, 75), (10, DEFAULT_WORKER_GRACE)],
        )
        .expect("a warning");
        assert!(
            warning.message.contains("leaves 8h between"),
            "{}",
            warning.message
        );
        assert!(
            warning.message.contains("can take 10h 29m"),
            "{}",
            warning.message
        );
        assert!(
            warning.message.contains("at least 1d 7h"),
            "{}",
            warning.message
        );
    }

    #[rstest]
    #[case::seconds(40, "40s")]
    #[case::minutes(300, "5m")]
    #[case::hours_and_minutes(3_900, "1h 5m")]
    #[case::days_and_hours(90_000, "1d 1h")]
    #[case::days_hours_dropped_seconds(86_401, "1d")]
    #[case::zero(0, "0s")]
    fn durations_read_in_their_two_largest_units(#[case] seconds: u64, #[case] text: &str) {
        assert_eq!(human(Duration::from_secs(seconds)), text);
    }
}
