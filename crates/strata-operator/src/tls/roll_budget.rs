//! Whether a certificate renewal's roll fits in the time the old certificate has left.
//!
//! The operator renews a certificate two thirds into its lifetime, and a pod reads its
//! certificate only when it starts: the pods not yet rolled present the old one, which
//! expires a third of the lifetime after the renewal. The pods roll one at a time, and
//! a pod's turn can last its whole termination grace period (a Trino worker drains its
//! queries first). So a cluster whose pods can take longer than that third to roll ends
//! with pods serving expired certificates (security review, finding 12). The worst case
//! is rare, so it is a Warning, not a refusal.

use std::time::Duration;

use strata_status::{Reason, SpecWarning};

/// The reason of the Warning.
pub const ROLL_OUTLASTS_RENEWAL: &str = "CertificateRollOutlastsRenewal";

/// How a product's pods roll: what each pod's start costs besides its termination (the
/// scheduling, the process's start, the readiness probe), and what the user can shorten
/// besides the lifetime.
#[derive(Clone, Copy, Debug)]
pub struct RollCost {
    /// Each pod's start.
    pub start: Duration,
    /// What to shorten, as the Warning ends: `or <advice>`.
    pub advice: &'static str,
}

/// The longest a roll of these role groups can take: for each pod, one after the other,
/// its termination grace period and `start`. `groups` gives each role group's replicas
/// and termination grace period in seconds.
pub fn worst_roll(groups: &[(u16, i64)], start: Duration) -> Duration {
    let seconds = groups
        .iter()
        .map(|&(replicas, grace)| {
            u64::from(replicas)
                .saturating_mul(grace.max(0).unsigned_abs().saturating_add(start.as_secs()))
        })
        .fold(0_u64, u64::saturating_add);
    Duration::from_secs(seconds)
}

/// The Warning for a certificate `lifetime` whose last third is shorter than the
/// worst roll of `groups`, or `None`.
pub fn roll_budget_warning(
    lifetime: Duration,
    groups: &[(u16, i64)],
    cost: RollCost,
) -> Option<SpecWarning> {
    let left_after_renewal = lifetime / 3;
    let roll = worst_roll(groups, cost.start);
    (roll > left_after_renewal).then(|| SpecWarning {
        reason: Reason::new(ROLL_OUTLASTS_RENEWAL).unwrap_or(Reason::AS_EXPECTED),
        message: format!(
            "clusterConfig.tls.certificateLifetime leaves {} between a renewal and the old \
             certificate's expiry, but rolling every pod onto the new one can take {} (each \
             pod in turn: its termination grace period and {} s to start): pods not yet \
             rolled would serve an expired certificate. Make certificateLifetime at least \
             {}, or {}",
            human(left_after_renewal),
            human(roll),
            cost.start.as_secs(),
            human(roll * 3),
            cost.advice,
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
    /// A Trino worker's termination grace period with its defaults: 2 × 30 s + 1h + 45 s.
    const DRAINING_WORKER: i64 = 3_705;
    const COST: RollCost = RollCost {
        start: Duration::from_secs(60),
        advice: "a shorter drain",
    };

    #[rstest]
    #[case::thirty_days_and_ten_workers(30 * 24 * HOUR, &[(1, 75), (10, DRAINING_WORKER)], false)]
    #[case::ten_workers_draining_an_hour_in_a_day(24 * HOUR, &[(1, 75), (10, DRAINING_WORKER)], true)]
    #[case::two_workers_draining_an_hour_in_a_day(24 * HOUR, &[(1, 75), (2, DRAINING_WORKER)], false)]
    #[case::five_minutes_and_quick_drains(300, &[(1, 30), (0, 100)], false)]
    #[case::five_minutes_and_an_hour_long_drain(300, &[(1, 75), (1, DRAINING_WORKER)], true)]
    #[case::no_pods(300, &[], false)]
    fn a_roll_longer_than_the_last_third_of_the_lifetime_is_warned_of(
        #[case] lifetime_seconds: u64,
        #[case] groups: &[(u16, i64)],
        #[case] warned: bool,
    ) {
        let warning = roll_budget_warning(Duration::from_secs(lifetime_seconds), groups, COST);
        assert_eq!(warning.is_some(), warned, "{warning:?}");
        if let Some(warning) = warning {
            assert_eq!(warning.reason.as_str(), ROLL_OUTLASTS_RENEWAL);
        }
    }

    #[rstest]
    #[case::the_time_left("leaves 8h between")]
    #[case::the_worst_roll("can take 10h 29m")]
    #[case::a_lifetime_that_fits("at least 1d 7h")]
    #[case::the_products_advice("or a shorter drain")]
    fn the_message_names(#[case] part: &str) {
        let warning = roll_budget_warning(
            Duration::from_secs(24 * HOUR),
            &[(1, 75), (10, DRAINING_WORKER)],
            COST,
        )
        .expect("a warning");
        assert!(warning.message.contains(part), "{}", warning.message);
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
