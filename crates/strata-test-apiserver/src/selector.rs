//! Label and field selectors, parsed from their query-string syntax and matched against JSON.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// A selector string the server cannot understand; answered with 400 Bad Request.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unable to parse selector requirement {requirement:?}: {problem}")]
pub(crate) struct SelectorError {
    requirement: String,
    problem: &'static str,
}

/// One requirement of a label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, BTreeSet<String>),
    NotIn(String, BTreeSet<String>),
    Exists(String),
    NotExists(String),
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Self::Equals(k, v) => labels.get(k) == Some(v),
            Self::NotEquals(k, v) => labels.get(k) != Some(v),
            Self::In(k, set) => labels.get(k).is_some_and(|v| set.contains(v)),
            Self::NotIn(k, set) => labels.get(k).is_none_or(|v| !set.contains(v)),
            Self::Exists(k) => labels.contains_key(k),
            Self::NotExists(k) => !labels.contains_key(k),
        }
    }
}

/// A parsed label selector; all requirements must hold (logical AND).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Parses `a=b,c!=d,e in (f,g),h notin (i),j,!k`.
    pub(crate) fn parse(raw: &str) -> Result<Self, SelectorError> {
        let requirements = split_top_level(raw)
            .into_iter()
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .map(parse_requirement)
            .collect::<Result<_, _>>()?;
        Ok(Self { requirements })
    }

    /// Whether an object's `metadata.labels` satisfy every requirement.
    pub(crate) fn matches(&self, object: &Value) -> bool {
        let labels = crate::object::labels(object);
        self.requirements.iter().all(|r| r.matches(&labels))
    }
}

/// Splits on commas that are not inside a `( ... )` value set.
fn split_top_level(raw: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0_i32;
    let mut start = 0;
    for (i, c) in raw.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&raw[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&raw[start..]);
    parts
}

fn parse_requirement(part: &str) -> Result<Requirement, SelectorError> {
    let error = |problem| SelectorError {
        requirement: part.to_owned(),
        problem,
    };
    if let Some(key) = part.strip_prefix('!') {
        return Ok(Requirement::NotExists(
            checked_key(key.trim()).map_err(error)?,
        ));
    }
    if let Some((key, values)) = split_set_operator(part, " notin ") {
        return Ok(Requirement::NotIn(
            checked_key(key).map_err(error)?,
            value_set(values).map_err(error)?,
        ));
    }
    if let Some((key, values)) = split_set_operator(part, " in ") {
        return Ok(Requirement::In(
            checked_key(key).map_err(error)?,
            value_set(values).map_err(error)?,
        ));
    }
    if let Some((key, value)) = part.split_once("!=") {
        return Ok(Requirement::NotEquals(
            checked_key(key.trim()).map_err(error)?,
            value.trim().to_owned(),
        ));
    }
    if let Some((key, value)) = part.split_once("==").or_else(|| part.split_once('=')) {
        return Ok(Requirement::Equals(
            checked_key(key.trim()).map_err(error)?,
            value.trim().to_owned(),
        ));
    }
    if part.contains(['<', '>', '(', ')', ' ']) {
        return Err(error("unsupported operator"));
    }
    Ok(Requirement::Exists(checked_key(part).map_err(error)?))
}

fn split_set_operator<'a>(part: &'a str, operator: &str) -> Option<(&'a str, &'a str)> {
    part.split_once(operator)
        .map(|(key, values)| (key.trim(), values.trim()))
}

fn checked_key(key: &str) -> Result<String, &'static str> {
    if key.is_empty() || key.contains([' ', '(', ')', '=', '!', ',']) {
        Err("invalid label key")
    } else {
        Ok(key.to_owned())
    }
}

fn value_set(values: &str) -> Result<BTreeSet<String>, &'static str> {
    let inner = values
        .strip_prefix('(')
        .and_then(|v| v.strip_suffix(')'))
        .ok_or("value set must be wrapped in parentheses")?;
    Ok(inner
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
        .collect())
}

/// A parsed field selector: equality or inequality on dotted JSON paths.
///
/// A real server only supports a few fields per kind; any dotted path works here.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FieldSelector {
    requirements: Vec<(String, bool, String)>,
}

impl FieldSelector {
    /// Parses `metadata.name=x,status.phase!=Running`.
    pub(crate) fn parse(raw: &str) -> Result<Self, SelectorError> {
        let requirements = raw
            .split(',')
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .map(|part| {
                let (path, equal, value) = if let Some((p, v)) = part.split_once("!=") {
                    (p, false, v)
                } else if let Some((p, v)) = part.split_once("==").or_else(|| part.split_once('='))
                {
                    (p, true, v)
                } else {
                    return Err(SelectorError {
                        requirement: part.to_owned(),
                        problem: "field selectors need = or !=",
                    });
                };
                Ok((path.trim().to_owned(), equal, value.trim().to_owned()))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { requirements })
    }

    /// Whether the object satisfies every field requirement; missing fields compare as "".
    pub(crate) fn matches(&self, object: &Value) -> bool {
        self.requirements.iter().all(|(path, equal, expected)| {
            let actual = path
                .split('.')
                .try_fold(object, |v, key| v.get(key))
                .map(scalar_text)
                .unwrap_or_default();
            (actual == *expected) == *equal
        })
    }
}

fn scalar_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::json;

    use super::*;

    fn obj() -> Value {
        json!({"metadata": {"name": "web-0", "namespace": "prod",
            "labels": {"app": "web", "tier": "front", "env": "prod"}},
            "status": {"phase": "Running", "replicas": 3}})
    }

    #[rstest]
    #[case::equality("app=web", true)]
    #[case::double_equality("app==web", true)]
    #[case::equality_mismatch("app=db", false)]
    #[case::inequality("app!=db", true)]
    #[case::inequality_on_missing_key("missing!=x", true)]
    #[case::set_in("tier in (front, back)", true)]
    #[case::set_in_mismatch("tier in (back)", false)]
    #[case::set_in_missing_key("missing in (x)", false)]
    #[case::set_notin("env notin (dev,test)", true)]
    #[case::set_notin_missing_key("missing notin (x)", true)]
    #[case::set_notin_mismatch("env notin (prod)", false)]
    #[case::exists("app", true)]
    #[case::exists_missing("missing", false)]
    #[case::not_exists("!missing", true)]
    #[case::not_exists_present("!app", false)]
    #[case::conjunction("app=web,tier in (front),!missing", true)]
    #[case::conjunction_one_fails("app=web,tier notin (front)", false)]
    #[case::empty_selects_all("", true)]
    fn label_selector_matches(#[case] selector: &str, #[case] expected: bool) {
        let parsed = LabelSelector::parse(selector);
        assert_eq!(parsed.map(|s| s.matches(&obj())), Ok(expected));
    }

    #[rstest]
    #[case::greater_than("a>1")]
    #[case::unwrapped_set("a in x")]
    #[case::empty_key("=x")]
    fn label_selector_rejects_garbage(#[case] selector: &str) {
        assert!(LabelSelector::parse(selector).is_err());
    }

    #[rstest]
    #[case::name("metadata.name=web-0", true)]
    #[case::namespace_mismatch("metadata.namespace=dev", false)]
    #[case::not_equal("status.phase!=Pending", true)]
    #[case::number("status.replicas=3", true)]
    #[case::missing_field_is_empty("spec.nodeName=", true)]
    fn field_selector_matches(#[case] selector: &str, #[case] expected: bool) {
        let parsed = FieldSelector::parse(selector);
        assert_eq!(parsed.map(|s| s.matches(&obj())), Ok(expected));
    }
}
