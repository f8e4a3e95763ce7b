//! Kubernetes quantities (`250m`, `1.5Gi`, `2`, `1e3`): exact parsing, and the
//! canonical form the API server stores.
//!
//! The canonical form matters for apply economy: the API server stores
//! `1000m` as `1` and `1024Mi` as `1Gi`, so an operator that applied the
//! user's spelling would find its cached copy different on every reconcile
//! and write it again forever. Builders therefore emit [`canonical`] forms.
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

/// The form the API server stores a quantity in: the same format (binary
/// `Ki`…`Ei`, decimal `m`, `k`…`E`, or exponent `e3`) as written, with the
/// largest suffix that represents the value exactly. Binary quantities below
/// 1024, and binary quantities with fractions of a unit, switch to the
/// decimal format, as Kubernetes does.
pub fn canonical(quantity: &str) -> Result<String, QuantityError> {
    let milli = parse_milli(quantity)?;
    let unsigned = quantity.strip_prefix('+').unwrap_or(quantity);
    let suffix_start = unsigned
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(unsigned.len());
    let suffix = &unsigned[suffix_start..];
    let whole_bytes = milli.is_multiple_of(1000).then_some(milli / 1000);
    Ok(match whole_bytes {
        Some(bytes) if suffix.ends_with('i') && bytes >= 1024 => binary_form(bytes),
        _ => decimal_form(milli, suffix.starts_with(['e', 'E'])),
    })
}

fn binary_form(mut value: u128) -> String {
    const SUFFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let mut power = 0;
    while power < SUFFIXES.len() - 1 && value.is_multiple_of(1024) {
        value /= 1024;
        power += 1;
    }
    format!("{value}{}", SUFFIXES[power])
}

fn decimal_form(milli: u128, exponent_style: bool) -> String {
    const SUFFIXES: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    if milli == 0 {
        return "0".to_owned();
    }
    if !milli.is_multiple_of(1000) {
        return if exponent_style {
            format!("{milli}e-3")
        } else {
            format!("{milli}m")
        };
    }
    let mut value = milli / 1000;
    let mut power = 0;
    while power < SUFFIXES.len() - 1 && value.is_multiple_of(1000) {
        value /= 1000;
        power += 1;
    }
    match (exponent_style, power) {
        (true, 0) => value.to_string(),
        (true, _) => format!("{value}e{}", 3 * power),
        (false, _) => format!("{value}{}", SUFFIXES[power]),
    }
}

#[cfg(test)]
mod tests {
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

    #[rstest]
    #[case::millicores_stay("250m", "250m")]
    #[case::thousand_millicores_are_one_core("1000m", "1")]
    #[case::fractional_cores_become_millicores("1.5", "1500m")]
    #[case::sub_milli_rounds_up("0.1m", "1m")]
    #[case::whole_cores_stay("2", "2")]
    #[case::thousand_is_one_k("1000", "1k")]
    #[case::decimal_suffix_grows("2000M", "2G")]
    #[case::gibibyte_stays("1Gi", "1Gi")]
    #[case::mebibytes_become_gibibytes("1024Mi", "1Gi")]
    #[case::uneven_mebibytes_stay("1536Mi", "1536Mi")]
    #[case::half_gibibyte_is_mebibytes("0.5Gi", "512Mi")]
    #[case::small_binary_becomes_decimal("0.5Ki", "512")]
    #[case::exponent_stays_exponent("1e3", "1e3")]
    #[case::exponent_grows("1000e3", "1e6")]
    #[case::zero("0", "0")]
    #[case::plus_sign_dropped("+1Gi", "1Gi")]
    fn canonical_forms(#[case] text: &str, #[case] expected: &str) {
        assert_eq!(canonical(text).as_deref(), Ok(expected));
    }
}
