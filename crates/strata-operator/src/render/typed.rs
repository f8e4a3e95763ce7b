//! Type errors in a custom resource, said with the field path and in the user's terms.
//!
//! Serde says `invalid value: integer -1, expected u16` and names no field. The path comes
//! from `serde_path_to_error`; the value the user wrote is read from the document at that
//! path; the expectation is translated from Rust types to what a manifest author knows
//! (`an integer between 0 and 65535`). A message serde words in a way not listed here is
//! passed on unchanged, behind the path.

use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_path_to_error::Segment;

use super::schema::join;

/// Deserialises `document` into `K`, or says which field is wrong and why, e.g.
/// `spec.servers.roleGroups.default.replicas: expected an integer between 0 and 65535, got -1`.
pub(crate) fn deserialize<K: DeserializeOwned>(document: &Value) -> Result<K, String> {
    serde_path_to_error::deserialize(document).map_err(|error| {
        let written = value_at(document, error.path());
        let path = match error.path().to_string() {
            root if root == "." => String::new(),
            path => path,
        };
        describe(&path, &error.inner().to_string(), written)
    })
}

/// The value the error is about, when the path leads to one.
fn value_at<'a>(document: &'a Value, path: &serde_path_to_error::Path) -> Option<&'a Value> {
    path.iter()
        .try_fold(document, |value, segment| match segment {
            Segment::Map { key } => value.get(key.as_str()),
            Segment::Seq { index } => value.get(*index),
            Segment::Enum { .. } => Some(value),
            Segment::Unknown => None,
        })
}

/// `path: message` in user terms, from serde's `message` and the value written there.
pub(crate) fn describe(path: &str, message: &str, written: Option<&Value>) -> String {
    let at = |path: &str, text: String| {
        if path.is_empty() {
            text
        } else {
            format!("{path}: {text}")
        }
    };
    if let Some(field) = between(message, "missing field `", "`") {
        return at(&join(path, field), "required field is missing".to_owned());
    }
    if let Some(rest) = message.strip_prefix("unknown variant `")
        && let Some((variant, expected)) = rest.split_once("`, expected ")
    {
        let allowed: Vec<String> = expected
            .split('`')
            .skip(1)
            .step_by(2)
            .map(|name| format!("\"{name}\""))
            .collect();
        return at(
            path,
            format!("expected one of {}, got \"{variant}\"", allowed.join(", ")),
        );
    }
    if let Some(field) = between(message, "unknown field `", "`") {
        return at(&join(path, field), "unknown field".to_owned());
    }
    if let Some(field) = between(message, "duplicate field `", "`") {
        return at(&join(path, field), "duplicate field".to_owned());
    }
    for prefix in ["invalid type: ", "invalid value: ", "invalid length "] {
        if let Some(rest) = message.strip_prefix(prefix)
            && let Some((unexpected, expected)) = rest.rsplit_once(", expected ")
        {
            let got = written.map_or_else(|| unexpected_in_user_terms(unexpected), written_value);
            return at(
                path,
                format!("expected {}, got {got}", expectation(expected.trim())),
            );
        }
    }
    at(path, message.to_owned())
}

/// The text between `start` and the next `end` in `message`.
fn between<'a>(message: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let (_, rest) = message.split_once(start)?;
    rest.split_once(end).map(|(inside, _)| inside)
}

/// What serde expected, as a manifest author would say it.
fn expectation(expected: &str) -> String {
    let integer = |min: &str, max: &str| format!("an integer between {min} and {max}");
    match expected {
        "u8" => integer("0", "255"),
        "u16" => integer("0", "65535"),
        "u32" => integer("0", "4294967295"),
        "u64" | "usize" => integer("0", "18446744073709551615"),
        "i8" => integer("-128", "127"),
        "i16" => integer("-32768", "32767"),
        "i32" => integer("-2147483648", "2147483647"),
        "i64" | "isize" => integer("-9223372036854775808", "9223372036854775807"),
        "f32" | "f64" => "a number".to_owned(),
        "a boolean" => "true or false".to_owned(),
        "a string" | "a borrowed string" | "a string or bytes" => "a string".to_owned(),
        "a character" => "a single character".to_owned(),
        "a sequence" => "a list".to_owned(),
        "a map" => "an object".to_owned(),
        "unit" => "null".to_owned(),
        "Quantity" => "a quantity such as 1Gi, 250m or 2".to_owned(),
        "IntOrString" => "an integer or a string".to_owned(),
        other if other.starts_with("struct ") => "an object".to_owned(),
        other if other.starts_with("enum ") => "one of the allowed values".to_owned(),
        other => other.to_owned(),
    }
}

/// The written value, quoted as it would appear in YAML (strings in double quotes,
/// collections by kind).
fn written_value(value: &Value) -> String {
    match value {
        Value::Object(_) => "an object".to_owned(),
        Value::Array(items) => format!("a list of {}", items.len()),
        Value::String(text) => format!("\"{text}\""),
        Value::Null => "null".to_owned(),
        scalar => scalar.to_string(),
    }
}

/// Serde's description of the unexpected value (`integer `-1``, `map`), when the value
/// itself cannot be found.
fn unexpected_in_user_terms(unexpected: &str) -> String {
    let unexpected = unexpected.trim();
    if let Some(quoted) = unexpected.strip_prefix("string ") {
        return quoted.to_owned();
    }
    for kind in ["integer ", "floating point ", "boolean "] {
        if let Some(value) = unexpected.strip_prefix(kind) {
            return value.trim_matches('`').to_owned();
        }
    }
    match unexpected {
        "map" => "an object".to_owned(),
        "sequence" => "a list".to_owned(),
        "unit value" => "null".to_owned(),
        other => other.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use pretty_assertions::assert_eq;
    use rstest::rstest;
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Spec {
        replicas: Option<u16>,
        #[serde(default)]
        groups: BTreeMap<String, Group>,
        #[serde(default)]
        policy: Policy,
        #[serde(default)]
        ratio: f64,
        #[serde(default)]
        names: Vec<String>,
        #[serde(default)]
        stopped: bool,
        #[serde(default)]
        offset: i32,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Group {
        size: u32,
    }

    #[derive(Debug, Default, Deserialize)]
    #[allow(dead_code)]
    enum Policy {
        #[default]
        IfNotPresent,
        Always,
        Never,
    }

    #[rstest]
    #[case::negative_u16(json!({"replicas": -1}), "replicas: expected an integer between 0 and 65535, got -1")]
    #[case::too_large_u16(json!({"replicas": 70000}), "replicas: expected an integer between 0 and 65535, got 70000")]
    #[case::string_for_an_integer(json!({"replicas": "three"}), "replicas: expected an integer between 0 and 65535, got \"three\"")]
    #[case::float_for_an_integer(json!({"replicas": 1.5}), "replicas: expected an integer between 0 and 65535, got 1.5")]
    #[case::nested_map_value(json!({"groups": {"a": {"size": -2}}}), "groups.a.size: expected an integer between 0 and 4294967295, got -2")]
    #[case::missing_field(json!({"groups": {"a": {}}}), "groups.a.size: required field is missing")]
    #[case::object_for_a_map_value(json!({"groups": {"a": 1}}), "groups.a: expected an object, got 1")]
    #[case::list_for_an_object(json!({"groups": []}), "groups: expected an object, got a list of 0")]
    #[case::unknown_enum_value(json!({"policy": "Sometimes"}), "policy: expected one of \"IfNotPresent\", \"Always\", \"Never\", got \"Sometimes\"")]
    #[case::string_for_a_number(json!({"ratio": "half"}), "ratio: expected a number, got \"half\"")]
    #[case::object_for_a_list(json!({"names": {"a": 1}}), "names: expected a list, got an object")]
    #[case::number_in_a_list_of_strings(json!({"names": ["a", 2]}), "names[1]: expected a string, got 2")]
    #[case::string_for_a_bool(json!({"stopped": "yes"}), "stopped: expected true or false, got \"yes\"")]
    #[case::too_small_i32(json!({"offset": -3_000_000_000_i64}), "offset: expected an integer between -2147483648 and 2147483647, got -3000000000")]
    #[case::not_an_object(json!("spec"), "expected an object, got \"spec\"")]
    fn type_errors_name_the_field_in_user_terms(#[case] document: Value, #[case] expected: &str) {
        let error = deserialize::<Spec>(&document).err();
        assert_eq!(error.as_deref(), Some(expected));
    }

    #[rstest]
    #[case::unknown_message("something odd", None, "spec: something odd")]
    #[case::unexpected_from_serde(
        "invalid type: integer `-1`, expected u8",
        None,
        "spec: expected an integer between 0 and 255, got -1"
    )]
    #[case::unexpected_string(
        "invalid type: string \"x\", expected a boolean",
        None,
        "spec: expected true or false, got \"x\""
    )]
    #[case::unexpected_map(
        "invalid type: map, expected a sequence",
        None,
        "spec: expected a list, got an object"
    )]
    #[case::two_variants(
        "unknown variant `c`, expected `a` or `b`",
        None,
        "spec: expected one of \"a\", \"b\", got \"c\""
    )]
    #[case::deny_unknown_fields("unknown field `x`, expected `a`", None, "spec.x: unknown field")]
    #[case::written_value_wins("invalid value: integer `-1`, expected u16", Some(json!(-1)), "spec: expected an integer between 0 and 65535, got -1")]
    fn serde_messages_are_translated(
        #[case] message: &str,
        #[case] written: Option<Value>,
        #[case] expected: &str,
    ) {
        assert_eq!(describe("spec", message, written.as_ref()), expected);
    }
}
