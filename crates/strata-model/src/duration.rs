//! Parsing of `gracefulShutdownTimeout` into whole seconds for
//! `terminationGracePeriodSeconds`.
//!
//! Accepted forms are jiff's "friendly" durations (`2m`, `90s`, `1h30m`, `1h 30m`,
//! `2 minutes`) and ISO 8601 (`PT2M`): the short forms match what Kubernetes users write
//! for Go durations. Calendar units (days and longer) are rejected because their length is
//! ambiguous. Fractions of a second round up, so the user always gets at least the time
//! they asked for.

use jiff::SignedDuration;

/// Why a duration cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("duration {text:?} is invalid: {reason}")]
pub struct DurationError {
    /// The rejected text.
    pub text: String,
    /// The rule it breaks.
    pub reason: String,
}

/// Parses a positive duration into whole seconds, rounding up.
pub fn parse_seconds(text: &str) -> Result<i64, DurationError> {
    let invalid = |reason: String| DurationError {
        text: text.to_owned(),
        reason,
    };
    let duration: SignedDuration = text.trim().parse().map_err(|error: jiff::Error| {
        invalid(format!(
            "write it like \"2m\", \"90s\" or \"1h30m\" ({error})"
        ))
    })?;
    if duration.is_negative() || duration.is_zero() {
        return Err(invalid("it must be longer than zero".to_owned()));
    }
    let whole = duration.as_secs();
    Ok(if duration.subsec_nanos() > 0 {
        whole.saturating_add(1)
    } else {
        whole
    })
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::minutes("2m", 120)]
    #[case::seconds("90s", 90)]
    #[case::hours_and_minutes("1h30m", 5400)]
    #[case::spaced_units("1h 30m", 5400)]
    #[case::long_unit_names("2 minutes", 120)]
    #[case::iso_8601("PT45S", 45)]
    #[case::fraction_rounds_up("1.2s", 2)]
    #[case::milliseconds_round_up("1ms", 1)]
    fn parses(#[case] text: &str, #[case] seconds: i64) {
        assert_eq!(parse_seconds(text), Ok(seconds));
    }

    #[rstest]
    #[case::zero("0s")]
    #[case::negative("-2m")]
    #[case::ago("2m ago")]
    #[case::bare_number("120")]
    #[case::empty("")]
    #[case::gibberish("two minutes")]
    #[case::days("1d")]
    fn rejects(#[case] text: &str) {
        assert!(parse_seconds(text).is_err(), "{text:?} was accepted");
    }
}
