//! The rules of the file-based system access control every node enforces: the user's
//! rules with one rule of the operator's in front, or the operator's defaults.
//!
//! The operator's rules let [`SHUTDOWN_USER`] read and write system information, which
//! `PUT /v1/info/state` (the preStop drain) needs, and [`METRICS_USER`] read it, which
//! `/metrics` needs, and forbid both to run queries or see a catalog: their passwords
//! live in Secrets that pods and Prometheus read, so they must open nothing else. The
//! rules go first in their sections, where Trino applies the first rule that matches,
//! so they win for those users alone; for every other user the user's rules decide, in
//! their order. A section the user's rules leave out allows everything when absent, so
//! the operator adds a rule that allows everything after its own there.
//! A section Trino denies everything in when it is absent stays that way for everyone
//! but the shutdown user.

use serde_json::{Map, Value, json};

use super::known_properties::ACCESS_CONTROL_RULE_SECTIONS;
use super::server::{METRICS_USER, SHUTDOWN_USER};

/// The key of the rules in the user's ConfigMap and in the operator's.
pub const RULES_KEY: &str = "rules.json";

/// Why the user's rules cannot be used. Messages name the problem, never a rule's
/// content beyond a section's name.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RulesError {
    /// Not JSON, or not a JSON object.
    #[error("is not a JSON object of rule sections: {0}")]
    NotAnObject(String),
    /// A section Trino's file-based access control does not have.
    #[error(
        "has the section {0:?}, which Trino's file-based access control does not know (it \
         would refuse the file); the sections are {sections}",
        sections = ACCESS_CONTROL_RULE_SECTIONS.join(", ")
    )]
    UnknownSection(String),
    /// A section that is not a list of rules.
    #[error("has a section {0:?} that is not a list of rules")]
    NotAList(String),
    /// A rule Trino would refuse, failing every access check of the running cluster
    /// at its next refresh ([`super::access_rules`]).
    #[error("has a rule Trino refuses: rule {index} of {section:?} {problem}")]
    InvalidRule {
        /// The section.
        section: String,
        /// The rule's position in it, from 1.
        index: usize,
        /// What is wrong, naming properties, never values.
        problem: String,
    },
}

/// The operator's rules for its own users, in front of every other: per section, the
/// rules, and what a section Trino allows everything in when absent gets after them.
/// Where no `queries` rule is given, every user runs queries but sees and kills only
/// their own (security review, finding 18): Trino lets a query's owner do both whatever
/// the rules say (`AccessControlUtil`), so `execute` alone is owner-only.
fn operator_rules() -> [(&'static str, Vec<Value>, Option<Value>); 3] {
    let both = format!("{SHUTDOWN_USER}|{METRICS_USER}");
    [
        (
            "system_information",
            vec![
                json!({"user": SHUTDOWN_USER, "allow": ["read", "write"]}),
                json!({"user": METRICS_USER, "allow": ["read"]}),
            ],
            None,
        ),
        (
            "queries",
            vec![json!({"user": both, "allow": []})],
            Some(json!({"allow": ["execute"]})),
        ),
        (
            "catalogs",
            vec![json!({"user": both, "allow": "none"})],
            Some(json!({"allow": "all"})),
        ),
    ]
}

/// `sections` with the operator's rules in front of each of theirs.
fn with_operator_rules_in(mut sections: Map<String, Value>) -> Map<String, Value> {
    for (section, rules, when_absent) in operator_rules() {
        let existing = sections.remove(section);
        let mut merged = rules;
        match existing {
            Some(Value::Array(user_rules)) => merged.extend(user_rules),
            _ => merged.extend(when_absent),
        }
        sections.insert(section.to_owned(), Value::Array(merged));
    }
    sections
}

/// The rules without the user's: Trino's built-in `default` access control (everything
/// but impersonation and writing system information) and the operator's rules.
/// Sections that allow everything when absent (schemas, tables, session properties)
/// are left out; the four that deny when absent are written (impersonation stays
/// denied by being absent).
fn default_rules() -> Value {
    let defaults = json!({
        "system_information": [{"allow": ["read"]}],
        "functions": [{"privileges": ["EXECUTE", "GRANT_EXECUTE", "OWNERSHIP"]}],
        "procedures": [{"privileges": ["EXECUTE", "GRANT_EXECUTE"]}],
        "authorization": [
            {"original_user": ".*", "new_user": ".*", "new_role": ".*", "allow": true}
        ]
    });
    match defaults {
        Value::Object(sections) => Value::Object(with_operator_rules_in(sections)),
        other => other,
    }
}

/// The rules file: `user_rules` (the text of the user's `rules.json`) with the
/// operator's rules first in their sections, or the defaults without user rules.
pub fn access_control_rules(user_rules: Option<&str>) -> Result<String, RulesError> {
    let rules = match user_rules {
        None => default_rules(),
        Some(text) => with_operator_rules(text)?,
    };
    let mut text = serde_json::to_string_pretty(&rules).unwrap_or_default();
    text.push('\n');
    Ok(text)
}

fn with_operator_rules(text: &str) -> Result<Value, RulesError> {
    let sections: Map<String, Value> = match serde_json::from_str(text) {
        Ok(Value::Object(sections)) => sections,
        Ok(other) => {
            return Err(RulesError::NotAnObject(format!(
                "it is a JSON {}",
                json_kind(&other)
            )));
        }
        Err(error) => return Err(RulesError::NotAnObject(error.to_string())),
    };
    for (name, rules) in &sections {
        if !ACCESS_CONTROL_RULE_SECTIONS.contains(&name.as_str()) {
            return Err(RulesError::UnknownSection(name.clone()));
        }
        let Some(rules) = rules.as_array() else {
            return Err(RulesError::NotAList(name.clone()));
        };
        for (index, rule) in rules.iter().enumerate() {
            if let Some(problem) = super::access_rules::rule_problem(name, rule) {
                return Err(RulesError::InvalidRule {
                    section: name.clone(),
                    index: index + 1,
                    problem,
                });
            }
        }
    }
    Ok(Value::Object(with_operator_rules_in(sections)))
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn parsed(text: &str) -> Value {
        serde_json::from_str(text).expect("the rules are JSON")
    }

    const OPERATOR_USERS: &str = "graceful-shutdown|strata-metrics";

    #[test]
    fn without_user_rules_only_the_shutdown_user_writes_system_information() {
        let rules = parsed(&access_control_rules(None).expect("the defaults"));
        assert_eq!(
            rules["system_information"],
            json!([
                {"user": SHUTDOWN_USER, "allow": ["read", "write"]},
                {"user": METRICS_USER, "allow": ["read"]},
                {"allow": ["read"]}
            ])
        );
        assert!(rules.get("impersonation").is_none());
    }

    #[rstest]
    #[case::defaults(None)]
    #[case::user_rules_without_the_sections(Some(r#"{"tables": [{"privileges": ["SELECT"]}]}"#))]
    fn the_operators_users_run_no_query_and_everyone_else_sees_only_their_own_queries(
        #[case] user_rules: Option<&str>,
    ) {
        let rules = parsed(&access_control_rules(user_rules).expect("valid rules"));
        assert_eq!(
            rules["queries"],
            json!([
                {"user": OPERATOR_USERS, "allow": []},
                {"allow": ["execute"]}
            ])
        );
        assert_eq!(
            rules["catalogs"],
            json!([{"user": OPERATOR_USERS, "allow": "none"}, {"allow": "all"}])
        );
    }

    #[rstest]
    #[case::section_absent(
        r#"{"catalogs": [{"user": "alice", "catalog": "tpch", "allow": "all"}]}"#,
        json!([
            {"user": SHUTDOWN_USER, "allow": ["read", "write"]},
            {"user": METRICS_USER, "allow": ["read"]}
        ])
    )]
    #[case::section_present(
        r#"{"system_information": [{"user": "admin", "allow": ["read", "write"]}, {"allow": []}]}"#,
        json!([
            {"user": SHUTDOWN_USER, "allow": ["read", "write"]},
            {"user": METRICS_USER, "allow": ["read"]},
            {"user": "admin", "allow": ["read", "write"]},
            {"allow": []}
        ])
    )]
    fn the_operators_rules_go_first_and_the_users_rules_follow_in_order(
        #[case] user_rules: &str,
        #[case] system_information: Value,
    ) {
        let rules = parsed(&access_control_rules(Some(user_rules)).expect("valid rules"));
        assert_eq!(rules["system_information"], system_information);
        let user = parsed(user_rules);
        for (section, value) in user.as_object().expect("an object") {
            if section == "system_information" {
                continue;
            }
            let written = rules[section].as_array().expect("a list");
            let kept = &written[written.len() - value.as_array().expect("a list").len()..];
            assert_eq!(
                &Value::Array(kept.to_vec()),
                value,
                "{section} keeps the user's rules in order, last"
            );
        }
    }

    /// The operator's own rules, and the defaults, are rules Trino reads.
    #[rstest]
    #[case::defaults(None)]
    #[case::with_user_rules(Some(r#"{"catalogs": [{"user": "alice", "catalog": "limited", "allow": "none"}, {"allow": "all"}]}"#))]
    fn every_rule_the_operator_writes_passes_its_own_check(#[case] user_rules: Option<&str>) {
        let rules = parsed(&access_control_rules(user_rules).expect("valid rules"));
        for (section, rules) in rules.as_object().expect("an object") {
            for rule in rules.as_array().expect("a list") {
                assert_eq!(
                    super::super::access_rules::rule_problem(section, rule),
                    None,
                    "{section}: {rule}"
                );
            }
        }
    }

    #[rstest]
    #[case::a_rule_trino_refuses(
        r#"{"catalogs": [{"allow": "all"}, {"catalog": "(", "allow": "all"}]}"#,
        "rule 2 of \"catalogs\" has \"catalog\" that Java cannot compile as a regex"
    )]
    #[case::not_json("{catalogs", "is not a JSON object")]
    #[case::an_array("[]", "it is a JSON array")]
    #[case::unknown_section(r#"{"tabels": []}"#, "the section \"tabels\"")]
    #[case::section_not_a_list(r#"{"catalogs": {"allow": "all"}}"#, "not a list of rules")]
    fn invalid_user_rules_are_refused_with_the_reason(#[case] text: &str, #[case] says: &str) {
        let error = access_control_rules(Some(text)).expect_err("refused");
        assert!(error.to_string().contains(says), "{error}");
    }
}
