//! Block-style YAML for JSON values, read identically by YAML 1.1 and 1.2 readers.
//!
//! The layout is the common one (`kubectl get -o yaml`, serde_yaml): two-space indents,
//! sequences at their key's indentation, `{}` and `[]` for empty collections, and multi-line
//! strings as literal blocks. What differs from a general emitter is the choice of scalar
//! style, made here so that it does not depend on any one reader:
//!
//! - a string is plain only when [`scalar::can_be_plain`] allows it;
//! - a multi-line string is a literal block (`|`, `|-` or `|+` as its trailing newlines
//!   need) when a literal block can hold it exactly; otherwise, like every other string
//!   that needs quotes, it is double-quoted with escapes (`\n`, `\t`, `\uXXXX`);
//! - a float always has a `.` and a signed exponent (`1.0e+300`), the only exponent form
//!   YAML 1.1 reads as a float.

use std::fmt::Write;

use serde_json::{Map, Number, Value};

use super::scalar::{can_be_plain, is_printable, is_special};

/// One YAML document (without the `---` line) for `value`.
#[cfg(test)]
pub(crate) fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    write_yaml(value, &mut out);
    out
}

/// Appends the YAML document (without the `---` line) for `value` to `out`.
pub(crate) fn write_yaml(value: &Value, out: &mut String) {
    match value {
        Value::Object(fields) if !fields.is_empty() => mapping(fields, 0, false, out),
        Value::Array(items) if !items.is_empty() => sequence(items, 0, false, out),
        scalar => line_scalar(scalar, 2, out),
    }
}

/// Writes the entries of `fields` at `indent`; with `inline_first` the first entry
/// continues the current line (after a sequence's `- `).
fn mapping(fields: &Map<String, Value>, indent: usize, inline_first: bool, out: &mut String) {
    for (position, (key, value)) in fields.iter().enumerate() {
        if position > 0 || !inline_first {
            pad(indent, out);
        }
        flow_string(key, out);
        out.push(':');
        match value {
            Value::Object(fields) if !fields.is_empty() => {
                out.push('\n');
                mapping(fields, indent + 2, false, out);
            }
            Value::Array(items) if !items.is_empty() => {
                out.push('\n');
                sequence(items, indent, false, out);
            }
            scalar => {
                out.push(' ');
                line_scalar(scalar, indent + 2, out);
            }
        }
    }
}

/// Writes the items of `items` as `- ` lines at `indent`.
fn sequence(items: &[Value], indent: usize, inline_first: bool, out: &mut String) {
    for (position, item) in items.iter().enumerate() {
        if position > 0 || !inline_first {
            pad(indent, out);
        }
        out.push_str("- ");
        match item {
            Value::Object(fields) if !fields.is_empty() => mapping(fields, indent + 2, true, out),
            Value::Array(items) if !items.is_empty() => sequence(items, indent + 2, true, out),
            scalar => line_scalar(scalar, indent + 2, out),
        }
    }
}

/// Writes a scalar (or an empty collection) and ends the line; a literal block's lines
/// are indented by `block_indent`.
fn line_scalar(value: &Value, block_indent: usize, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(number) => out.push_str(&number_text(number)),
        Value::String(text) if literal_block_fits(text) => {
            literal_block(text, block_indent, out);
            return;
        }
        Value::String(text) => flow_string(text, out),
        Value::Array(_) => out.push_str("[]"),
        Value::Object(_) => out.push_str("{}"),
    }
    out.push('\n');
}

/// A string on one line: plain when safe, double-quoted otherwise.
fn flow_string(text: &str, out: &mut String) {
    if can_be_plain(text) {
        out.push_str(text);
    } else {
        double_quoted(text, out);
    }
}

fn double_quoted(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if is_printable(c) && !is_special(c) => out.push(c),
            c if u32::from(c) <= 0xFFFF => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => {
                let _ = write!(out, "\\U{:08X}", u32::from(c));
            }
        }
    }
    out.push('"');
}

/// Whether a literal block holds `text` exactly: it has several lines, only printable
/// characters and tabs, and starts with a character that is not a space, a tab or a line
/// break (readers detect the block's indentation from its first line, and libyaml-based
/// readers refuse a tab there).
fn literal_block_fits(text: &str) -> bool {
    text.contains('\n')
        && !text.starts_with([' ', '\t', '\n'])
        && text
            .chars()
            .all(|c| c == '\n' || c == '\t' || (is_printable(c) && !is_special(c)))
}

fn literal_block(text: &str, indent: usize, out: &mut String) {
    let body = text.trim_end_matches('\n');
    let chomping = match text.len() - body.len() {
        0 => "-",
        1 => "",
        _ => "+",
    };
    out.push('|');
    out.push_str(chomping);
    out.push('\n');
    // With `+`, the newlines after the body are kept as empty lines.
    let kept = text.len() - body.len();
    for line in body.split('\n') {
        if !line.is_empty() {
            pad(indent, out);
            out.push_str(line);
        }
        out.push('\n');
    }
    for _ in 1..kept {
        out.push('\n');
    }
}

/// Integers as they are; floats with a `.` and a signed exponent.
fn number_text(number: &Number) -> String {
    let text = number.to_string();
    if !number.is_f64() {
        return text;
    }
    let (mantissa, exponent) = match text.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => (mantissa, Some(exponent)),
        None => (text.as_str(), None),
    };
    let mut out = mantissa.to_owned();
    if !out.contains('.') {
        out.push_str(".0");
    }
    if let Some(exponent) = exponent {
        out.push('e');
        if !exponent.starts_with(['-', '+']) {
            out.push('+');
        }
        out.push_str(exponent);
    }
    out
}

fn pad(indent: usize, out: &mut String) {
    out.extend(std::iter::repeat_n(' ', indent));
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use rstest::rstest;
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[rstest]
    #[case::plain_string(json!("zookeeper"), "zookeeper\n")]
    #[case::yaml_1_1_bool(json!("on"), "\"on\"\n")]
    #[case::yaml_1_1_octal(json!("012"), "\"012\"\n")]
    #[case::escapes(json!("a\"b\\c\td"), "\"a\\\"b\\\\c\\td\"\n")]
    #[case::control_and_separator(json!("a\u{1}\u{2028}"), "\"a\\u0001\\u2028\"\n")]
    #[case::astral_plain(json!("a\u{1F600}"), "a\u{1F600}\n")]
    #[case::integer(json!(-3), "-3\n")]
    #[case::float(json!(1.5), "1.5\n")]
    #[case::float_with_exponent(json!(1e300), "1.0e+300\n")]
    #[case::float_with_negative_exponent(json!(1.5e-7), "1.5e-7\n")]
    #[case::null(json!(null), "null\n")]
    #[case::bool(json!(false), "false\n")]
    #[case::empty_string(json!(""), "\"\"\n")]
    fn scalars(#[case] value: Value, #[case] expected: &str) {
        assert_eq!(to_yaml(&value), expected);
    }

    #[test]
    fn block_layout() {
        let value = json!({
            "kind": "ConfigMap",
            "data": {"zoo.cfg": "a=1\nb=2\n", "yes": "no", "empty": {}},
            "list": [{"name": "a", "args": ["x", "1"]}, [], [["deep"]]],
            "none": []
        });
        let expected = "\
data:
  empty: {}
  \"yes\": \"no\"
  zoo.cfg: |
    a=1
    b=2
kind: ConfigMap
list:
- args:
  - x
  - \"1\"
  name: a
- []
- - - deep
none: []
";
        assert_eq!(to_yaml(&value), expected);
    }

    #[rstest]
    #[case::no_trailing_newline("a\nb", "k: |-\n  a\n  b\n")]
    #[case::one_trailing_newline("a\nb\n", "k: |\n  a\n  b\n")]
    #[case::kept_trailing_newlines("a\n\n\n", "k: |+\n  a\n\n\n")]
    #[case::inner_empty_lines_and_tabs("a\n\n\tb  \n", "k: |\n  a\n\n  \tb  \n")]
    #[case::leading_space_is_quoted(" a\nb", "k: \" a\\nb\"\n")]
    #[case::leading_tab_is_quoted("\ta\nb", "k: \"\\ta\\nb\"\n")]
    #[case::leading_newline_is_quoted("\na", "k: \"\\na\"\n")]
    #[case::carriage_return_is_quoted("a\r\nb", "k: \"a\\r\\nb\"\n")]
    fn multi_line_strings(#[case] text: &str, #[case] expected: &str) {
        assert_eq!(to_yaml(&json!({ "k": text })), expected);
    }

    /// Whatever the emitter writes, a YAML 1.2 reader gets the same JSON back.
    #[rstest]
    #[case::awkward_strings(json!({
        "s": ["yes", "~", "1e3", "0x10", "2001-12-14", " lead", "trail ", "a: b", "#c", "-",
              "multi\nline\n", "\n", "\u{85}", "\"", "'", "\\", "tab\t", "\u{7f}", "---", "..."],
        "~": {"<<": "=", "": null, "1": [1, 2.5, true]}
    }))]
    #[case::nested_sequences(json!([[1, [2, []]], {"a": [{}]}]))]
    fn serde_yaml_reads_the_same_value_back(#[case] value: Value) {
        let text = to_yaml(&value);
        let parsed = Value::deserialize(serde_yaml_ng::Deserializer::from_str(&text))
            .unwrap_or_else(|error| panic!("{error}:\n{text}"));
        assert_eq!(parsed, value, "{text}");
    }
}
