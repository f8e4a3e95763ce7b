//! Which strings may be written as plain (unquoted) YAML scalars.
//!
//! A plain scalar's type is decided by the reader's resolver, and readers disagree:
//! kubectl's YAML library and PyYAML follow YAML 1.1, where `yes`, `on`, `y`, `~`, `012`,
//! `0x1F`, `1_000`, `1:30`, `.inf` and `2001-12-14` are booleans, numbers, null or
//! timestamps; YAML 1.2 readers take `09` and `1e3` as numbers, which YAML 1.1 reads as
//! strings; Go's `strconv` (behind kubectl's reader) also takes `+inf`, `0o17` and `1_0.5`.
//! A string is written plain only when no resolver below claims it and the YAML syntax
//! cannot read it as anything but the same characters; otherwise it is quoted.
//!
//! The YAML 1.1 patterns are the regular expressions of the type repository
//! (yaml.org/type: bool, int, float, null, timestamp, merge, value), written out in full.

use std::sync::LazyLock;

use regex::RegexSet;

/// Patterns of plain scalars that some reader resolves to something other than a string.
const NON_STRING_PATTERNS: &[&str] = &[
    // YAML 1.1 bool.
    r"^(?:y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$",
    // YAML 1.1 int: base 2, 8, 10, 16 and 60 (sexagesimal), with `_` separators.
    r"^[-+]?0b[0-1_]+$",
    r"^[-+]?0[0-7_]+$",
    r"^[-+]?(?:0|[1-9][0-9_]*)$",
    r"^[-+]?0x[0-9a-fA-F_]+$",
    r"^[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+$",
    // YAML 1.1 float: base 10 (the type repository allows dots after the first), base 60,
    // infinity and not-a-number.
    r"^[-+]?(?:[0-9][0-9_]*)?\.[0-9.]*(?:[eE][-+][0-9]+)?$",
    r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*$",
    r"^[-+]?\.(?:inf|Inf|INF)$",
    r"^\.(?:nan|NaN|NAN)$",
    // YAML 1.1 null (the empty string is handled by the syntax rules).
    r"^(?:~|null|Null|NULL)$",
    // YAML 1.1 timestamp: a date, or a date and time with an optional zone.
    r"^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]$",
    r"^[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?$",
    // YAML 1.1 merge key and value key.
    r"^<<$",
    r"^=$",
    // YAML 1.2 core schema: decimal with leading zeros, octal, and exponent floats.
    r"^[-+]?[0-9]+$",
    r"^0o[0-7]+$",
    r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$",
    // Go's strconv after dropping `_`, as kubectl's reader calls it: decimal and hex
    // floats, prefixed ints, named infinities and NaN in any case.
    r"(?i)^[-+]?(?:[0-9_]+\.?[0-9_]*|\.[0-9_]+)(?:e[-+]?[0-9_]+)?$",
    r"(?i)^[-+]?0x[0-9a-f_]*\.?[0-9a-f_]*(?:p[-+]?[0-9_]+)?$",
    r"(?i)^[-+]?0[bo][0-9_]+$",
    r"(?i)^[-+]?(?:inf|infinity|nan)$",
    // Go's timestamp formats, which accept one-digit months and days.
    r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt ].*)?$",
];

/// The patterns, compiled once. They are constants, so compiling cannot fail in practice;
/// if it ever did, every string would be quoted, which is still correct output.
static NON_STRING: LazyLock<Result<RegexSet, regex::Error>> =
    LazyLock::new(|| RegexSet::new(NON_STRING_PATTERNS));

/// Characters that may not start a plain scalar (YAML indicators), plus space.
const LEADING_INDICATORS: &[char] = &[
    '-', '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`',
    ' ',
];

/// Whether some YAML reader resolves the plain scalar `text` to a non-string.
pub(crate) fn resolves_to_non_string(text: &str) -> bool {
    // Every pattern starts with one of these characters; checking it first keeps long
    // strings (base64 data of a few hundred kilobytes) out of the regex engine.
    const FIRST: &str = "yYnNtTfFoOiI-+0123456789.~<=";
    if !text.starts_with(|c: char| FIRST.contains(c)) {
        return false;
    }
    match &*NON_STRING {
        Ok(patterns) => patterns.is_match(text),
        Err(_) => true,
    }
}

/// Whether `text` can be written unquoted and be read back as the same string by
/// every YAML 1.1 and 1.2 reader.
pub(crate) fn can_be_plain(text: &str) -> bool {
    let Some(first) = text.chars().next() else {
        return false;
    };
    !LEADING_INDICATORS.contains(&first)
        && !text.ends_with([' ', ':'])
        && !text.contains(": ")
        && !text.contains(" #")
        && !text.starts_with("---")
        && !text.starts_with("...")
        && all_printable(text)
        && !resolves_to_non_string(text)
}

/// Whether every character of `text` is printable and not special. ASCII text (base64
/// data, which can be hundreds of kilobytes) is checked byte by byte, which the
/// compiler vectorises.
pub(crate) fn all_printable(text: &str) -> bool {
    if text.is_ascii() {
        text.bytes().all(|byte| (0x20..0x7F).contains(&byte))
    } else {
        text.chars().all(|c| is_printable(c) && !is_special(c))
    }
}

/// YAML's printable characters (the same set in 1.1 and 1.2), without tab and line breaks.
pub(crate) fn is_printable(c: char) -> bool {
    matches!(c,
        '\u{20}'..='\u{7E}'
        | '\u{85}'
        | '\u{A0}'..='\u{D7FF}'
        | '\u{E000}'..='\u{FFFD}'
        | '\u{10000}'..='\u{10FFFF}')
}

/// Characters that are printable but that YAML 1.1 readers treat as line breaks (NEL,
/// LS, PS) or as a byte order mark; they are always escaped.
pub(crate) fn is_special(c: char) -> bool {
    matches!(c, '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{FEFF}')
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[test]
    fn the_patterns_compile() {
        assert!(NON_STRING.is_ok(), "{:?}", NON_STRING.as_ref().err());
    }

    #[rstest]
    #[case::bool_yes("yes")]
    #[case::bool_yes_title("Yes")]
    #[case::bool_yes_upper("YES")]
    #[case::bool_y("y")]
    #[case::bool_n_upper("N")]
    #[case::bool_no("no")]
    #[case::bool_on("on")]
    #[case::bool_off_upper("OFF")]
    #[case::bool_true("true")]
    #[case::bool_false_title("False")]
    #[case::null_tilde("~")]
    #[case::null_word("null")]
    #[case::null_upper("NULL")]
    #[case::int_decimal("1000")]
    #[case::int_negative("-1")]
    #[case::int_signed("+12")]
    #[case::int_octal_1_1("012")]
    #[case::int_leading_zero_1_2("09")]
    #[case::int_octal_1_2("0o17")]
    #[case::int_hex("0x1F")]
    #[case::int_hex_underscore("0x_1F")]
    #[case::int_binary("0b1010")]
    #[case::int_underscore("1_000")]
    #[case::int_sexagesimal("1:30")]
    #[case::int_sexagesimal_long("190:20:30")]
    #[case::float_decimal("1.5")]
    #[case::float_trailing_dot("1.")]
    #[case::float_leading_dot(".5")]
    #[case::float_exponent_1_1("6.8523015e+5")]
    #[case::float_exponent_1_2("1e3")]
    #[case::float_exponent_upper("1E-3")]
    #[case::float_underscore("685_230.15")]
    #[case::float_sexagesimal("190:20:30.15")]
    #[case::float_dotted_version("3.9.5")]
    #[case::float_inf(".inf")]
    #[case::float_negative_inf("-.Inf")]
    #[case::float_nan(".NaN")]
    #[case::go_signed_inf("+inf")]
    #[case::go_infinity("-Infinity")]
    #[case::go_nan("nan")]
    #[case::go_hex_float("0x1p-2")]
    #[case::timestamp_date("2001-12-14")]
    #[case::timestamp_canonical("2001-12-15T02:59:43.1Z")]
    #[case::timestamp_spaced("2001-12-14 21:59:43.10 -5")]
    #[case::timestamp_offset("2001-12-14t21:59:43.10-05:00")]
    #[case::timestamp_go_short_date("2001-1-2")]
    #[case::merge_key("<<")]
    #[case::value_key("=")]
    fn non_strings_are_recognised(#[case] text: &str) {
        assert!(
            resolves_to_non_string(text),
            "{text} should resolve to a non-string"
        );
        assert!(!can_be_plain(text), "{text} must be quoted");
    }

    #[rstest]
    #[case::word("zookeeper")]
    #[case::yes_inside_a_word("yesterday")]
    #[case::on_inside_a_word("online")]
    #[case::quantity_binary("1Gi")]
    #[case::quantity_milli("250m")]
    #[case::image("zookeeper:3.9.5")]
    #[case::path("/data/zookeeper")]
    #[case::host_and_port("simple-zk.default.svc.cluster.local:2181/znode")]
    #[case::label("app.kubernetes.io/name")]
    #[case::sentence("Time to shut down")]
    #[case::jvm_option("Xmx768m")]
    #[case::unicode("grüße")]
    #[case::colon_inside("a:b")]
    #[case::hash_inside("a#b")]
    fn ordinary_strings_stay_plain(#[case] text: &str) {
        assert!(can_be_plain(text), "{text} should be plain");
    }

    #[rstest]
    #[case::empty("")]
    #[case::leading_dash("-Xmx1g")]
    #[case::leading_space(" a")]
    #[case::trailing_space("a ")]
    #[case::trailing_colon("a:")]
    #[case::colon_space("a: b")]
    #[case::comment("a #b")]
    #[case::anchor("&a")]
    #[case::alias("*a")]
    #[case::tag("!a")]
    #[case::flow_sequence("[a]")]
    #[case::flow_mapping("{a}")]
    #[case::quote("'a'")]
    #[case::block_literal("|")]
    #[case::directive("%YAML")]
    #[case::reserved_at("@a")]
    #[case::reserved_backtick("`a")]
    #[case::document_start("---a")]
    #[case::document_end("...")]
    #[case::newline("a\nb")]
    #[case::tab("a\tb")]
    #[case::carriage_return("a\rb")]
    #[case::control("a\u{7}b")]
    #[case::delete("a\u{7F}b")]
    #[case::next_line("a\u{85}b")]
    #[case::line_separator("a\u{2028}b")]
    #[case::byte_order_mark("\u{FEFF}a")]
    fn syntax_forces_quotes(#[case] text: &str) {
        assert!(!can_be_plain(text), "{text:?} must be quoted");
    }
}
