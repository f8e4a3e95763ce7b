//! Parsing of Kubernetes quantities (`250m`, `1.5Gi`, `2`, `1e3`) into exact integers.
//!
//! The operator needs numbers from quantities to derive the JVM heap from the memory
//! limit and to check that the CPU request does not exceed the limit. Checking the syntax
//! here also turns a typo into an InvalidSpec message on the cluster instead of an API
//! server rejection of the StatefulSet. Arithmetic is exact (integers, no floats), in
//! thousandths of the unit, rounding up like Kubernetes does.

/// Why a quantity cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("quantity {quantity:?} is invalid: {reason}")]
pub struct QuantityError {
    /// The rejected text.
    pub quantity: String,
    /// The rule it breaks.
    pub reason: &'static str,
}

/// Longest digit sequence accepted; keeps every intermediate value far from `u128::MAX`.
const MAX_DIGITS: usize = 24;
/// Largest decimal exponent accepted (`1e18` is an exabyte).
const MAX_EXPONENT: u32 = 18;

/// Parses a non-negative quantity into thousandths of its unit: `250m` CPU is 250,
/// `1Ki` memory is 1 024 000. Values finer than a thousandth round up.
pub fn parse_milli(quantity: &str) -> Result<u128, QuantityError> {
    let invalid = |reason| QuantityError {
        quantity: quantity.to_owned(),
        reason,
    };
    let unsigned = quantity.strip_prefix('+').unwrap_or(quantity);
    if unsigned.starts_with('-') {
        return Err(invalid("it must not be negative"));
    }
    let number_end = unsigned
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(unsigned.len());
    let (number, suffix) = unsigned.split_at(number_end);
    let (integer, fraction) = number.split_once('.').unwrap_or((number, ""));
    if integer.is_empty() && fraction.is_empty() {
        return Err(invalid("it must start with a number"));
    }
    if fraction.contains('.') {
        return Err(invalid("it has more than one decimal point"));
    }
    let digits = format!("{integer}{fraction}");
    if digits.len() > MAX_DIGITS {
        return Err(invalid("it has too many digits"));
    }
    let mantissa: u128 = digits
        .parse()
        .map_err(|_| invalid("it must start with a number"))?;
    let (numerator, denominator) = scale(suffix).ok_or_else(|| {
        invalid("the suffix must be one of Ki, Mi, Gi, Ti, Pi, Ei, m, k, M, G, T, P, E or an exponent like e3")
    })?;
    let fraction_scale = 10u128.pow(u32::try_from(fraction.len()).unwrap_or(u32::MAX).min(38));
    let scaled = mantissa
        .checked_mul(numerator)
        .and_then(|value| value.checked_mul(1000))
        .ok_or_else(|| invalid("it is too large"))?;
    let divisor = denominator
        .checked_mul(fraction_scale)
        .ok_or_else(|| invalid("it has too many digits"))?;
    Ok(scaled.div_ceil(divisor))
}

/// The factor a suffix stands for, as numerator and denominator.
fn scale(suffix: &str) -> Option<(u128, u128)> {
    let binary = |power: u32| Some((1u128 << (10 * power), 1));
    let decimal = |power: u32| Some((10u128.pow(power), 1));
    match suffix {
        "" => decimal(0),
        "m" => Some((1, 1000)),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(1),
        "Mi" => binary(2),
        "Gi" => binary(3),
        "Ti" => binary(4),
        "Pi" => binary(5),
        "Ei" => binary(6),
        _ => exponent(suffix),
    }
}

/// `e3`, `E-2`, `e+6`: a decimal exponent.
fn exponent(suffix: &str) -> Option<(u128, u128)> {
    let rest = suffix.strip_prefix(['e', 'E'])?;
    let (negative, digits) = match rest.strip_prefix('-') {
        Some(digits) => (true, digits),
        None => (false, rest.strip_prefix('+').unwrap_or(rest)),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let power: u32 = digits.parse().ok().filter(|power| *power <= MAX_EXPONENT)?;
    let factor = 10u128.pow(power);
    Some(if negative { (1, factor) } else { (factor, 1) })
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::millicores("250m", 250)]
    #[case::one_core("1", 1000)]
    #[case::fractional_cores("1.5", 1500)]
    #[case::leading_dot(".5", 500)]
    #[case::trailing_dot("2.", 2000)]
    #[case::plus_sign("+3", 3000)]
    #[case::kibibyte("1Ki", 1_024_000)]
    #[case::gibibyte("1Gi", 1_073_741_824_000)]
    #[case::fractional_gibibyte("1.5Gi", 1_610_612_736_000)]
    #[case::kilobyte("1k", 1_000_000)]
    #[case::gigabyte("2G", 2_000_000_000_000)]
    #[case::exponent("1e3", 1_000_000)]
    #[case::negative_exponent("15E-1", 1500)]
    #[case::exa_suffix("1E", 1_000_000_000_000_000_000_000)]
    #[case::sub_milli_rounds_up("0.1m", 1)]
    #[case::zero("0", 0)]
    fn parses(#[case] text: &str, #[case] milli: u128) {
        assert_eq!(parse_milli(text), Ok(milli));
    }

    #[rstest]
    #[case::empty("", "it must start with a number")]
    #[case::negative("-1", "it must not be negative")]
    #[case::only_suffix("Gi", "it must start with a number")]
    #[case::lowercase_binary_suffix(
        "1gi",
        "the suffix must be one of Ki, Mi, Gi, Ti, Pi, Ei, m, k, M, G, T, P, E or an exponent like e3"
    )]
    #[case::space_before_suffix(
        "1 Gi",
        "the suffix must be one of Ki, Mi, Gi, Ti, Pi, Ei, m, k, M, G, T, P, E or an exponent like e3"
    )]
    #[case::two_dots("1.2.3", "it has more than one decimal point")]
    #[case::huge_exponent(
        "1e99",
        "the suffix must be one of Ki, Mi, Gi, Ti, Pi, Ei, m, k, M, G, T, P, E or an exponent like e3"
    )]
    #[case::too_many_digits("1234567890123456789012345", "it has too many digits")]
    #[case::too_large("999999999999999999999999Ei", "it is too large")]
    fn rejects(#[case] text: &str, #[case] reason: &str) {
        assert_eq!(parse_milli(text).map_err(|error| error.reason), Err(reason));
    }
}
