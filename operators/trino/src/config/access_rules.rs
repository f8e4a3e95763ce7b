//! The shape of each rule of Trino's file-based system access control, as Trino 483
//! reads it: the user's rules are checked here before any pod sees them, because Trino
//! re-reads the file every refresh period and a file it cannot parse fails every
//! access check of the running cluster, and then every start (security review,
//! finding 19).
//!
//! Trino parses the file with Jackson, unknown properties refused at every level
//! (`FAIL_ON_UNKNOWN_PROPERTIES`), enums case-insensitively, and each regex with
//! `Pattern.compile`. So a rule here is refused for: a property its section does not
//! have, a missing required property, a value of the wrong kind, an enum value Trino
//! does not know, a regex that cannot compile, and the checks Trino's constructors make
//! (`queryOwner` with `execute`, a principal rule without `user` or
//! `principal_to_user`, an authorization rule without `new_user` or `new_role`,
//! duplicate column names, `function_kinds`). A JSON `null` is an absent property, as
//! for Jackson.
//!
//! Regexes are Java's: the check parses them with Rust's `regex-syntax` and refuses
//! only the errors both dialects share (an unclosed or unopened group or class, a
//! repetition of nothing, an inverted range or count, a trailing backslash). A
//! construct only Java knows (look-around, back-references, possessive quantifiers)
//! is left to Trino.

use std::collections::BTreeSet;

use regex_syntax::ast::ErrorKind;
use serde_json::{Map, Value};

/// What a property's value must be.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// A string that compiles as a regex.
    Regex,
    /// A boolean.
    Bool,
    /// A string Trino does not parse (SQL, a replacement).
    Text,
    /// A catalog rule's `allow`: a boolean, or one of these (any case).
    CatalogAccess,
    /// A list of these values (any case).
    Set(&'static [&'static str]),
    /// A table rule's `columns`.
    Columns,
    /// `filter_environment`, `mask_environment`: `{"user": "<name>"}`.
    Environment,
    /// `function_kinds`: no longer supported; only absent or empty.
    FunctionKinds,
}

/// One property of a rule: its names (the first is Trino's, the others its aliases),
/// its kind, and whether the rule needs it.
struct Property {
    names: &'static [&'static str],
    kind: Kind,
    required: bool,
}

const fn optional(names: &'static [&'static str], kind: Kind) -> Property {
    Property {
        names,
        kind,
        required: false,
    }
}

const fn required(names: &'static [&'static str], kind: Kind) -> Property {
    Property {
        names,
        kind,
        required: true,
    }
}

const USER: Property = optional(&["user"], Kind::Regex);
const ROLE: Property = optional(&["role"], Kind::Regex);
const GROUP: Property = optional(&["group"], Kind::Regex);
const CATALOG: Property = optional(&["catalog"], Kind::Regex);
const SCHEMA: Property = optional(&["schema"], Kind::Regex);

const TABLE_PRIVILEGES: &[&str] = &[
    "SELECT",
    "INSERT",
    "DELETE",
    "UPDATE",
    "OWNERSHIP",
    "GRANT_SELECT",
];

/// The properties of each section's rules, by section (Trino 483's rule classes).
fn properties(section: &str) -> Option<Vec<Property>> {
    let properties = match section {
        "catalogs" => vec![
            required(&["allow"], Kind::CatalogAccess),
            USER,
            ROLE,
            GROUP,
            CATALOG,
        ],
        "queries" => vec![
            required(&["allow"], Kind::Set(&["execute", "view", "kill"])),
            USER,
            ROLE,
            GROUP,
            optional(&["queryOwner"], Kind::Regex),
        ],
        "impersonation" => vec![
            optional(&["original_user", "originalUser"], Kind::Regex),
            optional(&["original_role"], Kind::Regex),
            required(&["new_user", "newUser"], Kind::Regex),
            optional(&["allow"], Kind::Bool),
        ],
        "principals" => vec![
            required(&["principal"], Kind::Regex),
            USER,
            optional(&["principal_to_user"], Kind::Text),
            optional(&["allow"], Kind::Bool),
        ],
        "system_information" => vec![
            required(&["allow"], Kind::Set(&["read", "write"])),
            USER,
            ROLE,
        ],
        "authorization" => vec![
            optional(&["original_user", "originalUser"], Kind::Regex),
            optional(&["original_group", "originalGroup"], Kind::Regex),
            optional(&["original_role", "originalRole"], Kind::Regex),
            optional(&["new_user", "newUser"], Kind::Regex),
            optional(&["new_role", "newRole"], Kind::Regex),
            optional(&["allow"], Kind::Bool),
        ],
        "schemas" => vec![
            optional(&["owner"], Kind::Bool),
            USER,
            ROLE,
            GROUP,
            SCHEMA,
            CATALOG,
        ],
        "tables" => vec![
            required(&["privileges"], Kind::Set(TABLE_PRIVILEGES)),
            optional(&["columns"], Kind::Columns),
            optional(&["filter"], Kind::Text),
            optional(&["filter_environment"], Kind::Environment),
            USER,
            ROLE,
            GROUP,
            SCHEMA,
            optional(&["table"], Kind::Regex),
            CATALOG,
        ],
        "system_session_properties" => vec![
            optional(&["allow"], Kind::Bool),
            USER,
            ROLE,
            GROUP,
            optional(&["property"], Kind::Regex),
        ],
        "catalog_session_properties" => vec![
            optional(&["allow"], Kind::Bool),
            USER,
            ROLE,
            GROUP,
            optional(&["property"], Kind::Regex),
            CATALOG,
        ],
        "functions" => vec![
            required(
                &["privileges"],
                Kind::Set(&["EXECUTE", "GRANT_EXECUTE", "OWNERSHIP"]),
            ),
            USER,
            ROLE,
            GROUP,
            CATALOG,
            SCHEMA,
            optional(&["function"], Kind::Regex),
            optional(&["function_kinds", "functionKinds"], Kind::FunctionKinds),
        ],
        "procedures" => vec![
            required(&["privileges"], Kind::Set(&["EXECUTE", "GRANT_EXECUTE"])),
            USER,
            ROLE,
            GROUP,
            CATALOG,
            SCHEMA,
            optional(&["procedure"], Kind::Regex),
        ],
        _ => return None,
    };
    Some(properties)
}

/// What is wrong with `rule`, one of `section`'s, in words that name properties but
/// never repeat a value; `None` when Trino would take it.
pub fn rule_problem(section: &str, rule: &Value) -> Option<String> {
    let Some(properties) = properties(section) else {
        return Some("is in a section Trino does not know".to_owned());
    };
    let Value::Object(fields) = rule else {
        return Some("is not a JSON object".to_owned());
    };
    for name in fields.keys() {
        if !properties
            .iter()
            .any(|property| property.names.contains(&name.as_str()))
        {
            let known: Vec<&str> = properties
                .iter()
                .map(|property| property.names[0])
                .collect();
            return Some(format!(
                "has the property {name:?}, which Trino refuses there; the properties are {}",
                known.join(", ")
            ));
        }
    }
    for property in &properties {
        let given: Vec<(&str, &Value)> = property
            .names
            .iter()
            .filter_map(|name| Some((*name, fields.get(*name)?)))
            .filter(|(_, value)| !value.is_null())
            .collect();
        match given.as_slice() {
            [] if property.required => {
                return Some(format!(
                    "lacks {:?}, which Trino requires",
                    property.names[0]
                ));
            }
            [] => {}
            [(name, value)] => {
                if let Some(problem) = value_problem(property.kind, value) {
                    return Some(format!("has {name:?} {problem}"));
                }
            }
            _ => {
                return Some(format!(
                    "names {:?} twice (as {})",
                    property.names[0],
                    property.names.join(" and ")
                ));
            }
        }
    }
    constructor_problem(section, fields)
}

/// Why `value` is not of `kind`, as the end of a sentence.
fn value_problem(kind: Kind, value: &Value) -> Option<String> {
    match kind {
        Kind::Regex => match value {
            Value::String(pattern) => regex_problem(pattern)
                .map(|problem| format!("that Java cannot compile as a regex ({problem})")),
            _ => Some("that is not a string (a regex)".to_owned()),
        },
        Kind::Bool => (!value.is_boolean()).then(|| "that is not true or false".to_owned()),
        Kind::Text => (!value.is_string()).then(|| "that is not a string".to_owned()),
        Kind::CatalogAccess => {
            let known = ["all", "read-only", "owner", "none"];
            let fits = value.is_boolean()
                || value
                    .as_str()
                    .is_some_and(|text| known.iter().any(|mode| mode.eq_ignore_ascii_case(text)));
            (!fits).then(|| format!("that is none of {}, true or false", known.join(", ")))
        }
        Kind::Set(known) => {
            let Value::Array(items) = value else {
                return Some(format!("that is not a list of {}", known.join(", ")));
            };
            let fits = items.iter().all(|item| {
                item.as_str()
                    .is_some_and(|text| known.iter().any(|mode| mode.eq_ignore_ascii_case(text)))
            });
            (!fits).then(|| format!("with a value that is none of {}", known.join(", ")))
        }
        Kind::Columns => columns_problem(value),
        Kind::Environment => environment_problem(value),
        Kind::FunctionKinds => {
            let empty = value.as_array().is_some_and(Vec::is_empty);
            (!empty)
                .then(|| "with function kinds, which Trino no longer supports in rules".to_owned())
        }
    }
}

fn environment_problem(value: &Value) -> Option<String> {
    let Value::Object(fields) = value else {
        return Some("that is not an object".to_owned());
    };
    if fields.keys().any(|key| key != "user") {
        return Some("with a property other than \"user\"".to_owned());
    }
    match fields.get("user") {
        None | Some(Value::Null | Value::String(_)) => None,
        Some(_) => Some("whose \"user\" is not a string".to_owned()),
    }
}

fn columns_problem(value: &Value) -> Option<String> {
    let Value::Array(columns) = value else {
        return Some("that is not a list of columns".to_owned());
    };
    let mut names = BTreeSet::new();
    for (index, column) in columns.iter().enumerate() {
        let problem = column_problem(column, &mut names);
        if let Some(problem) = problem {
            return Some(format!("whose column {} {problem}", index + 1));
        }
    }
    None
}

fn column_problem(column: &Value, names: &mut BTreeSet<String>) -> Option<String> {
    let Value::Object(fields) = column else {
        return Some("is not an object".to_owned());
    };
    let known = ["name", "allow", "mask", "mask_environment"];
    if let Some(unknown) = fields.keys().find(|key| !known.contains(&key.as_str())) {
        return Some(format!(
            "has the property {unknown:?}; a column has {}",
            known.join(", ")
        ));
    }
    let Some(Value::String(name)) = fields.get("name") else {
        return Some("has no \"name\"".to_owned());
    };
    if !names.insert(name.clone()) {
        return Some("names a column an earlier one names".to_owned());
    }
    [
        ("allow", Kind::Bool),
        ("mask", Kind::Text),
        ("mask_environment", Kind::Environment),
    ]
    .into_iter()
    .filter_map(|(key, kind)| Some((key, kind, fields.get(key).filter(|value| !value.is_null())?)))
    .find_map(|(key, kind, value)| Some(format!("has {key:?} {}", value_problem(kind, value)?)))
}

/// The checks of Trino's rule constructors beyond each property.
fn constructor_problem(section: &str, fields: &Map<String, Value>) -> Option<String> {
    let present = |names: &[&str]| {
        names
            .iter()
            .any(|name| fields.get(*name).is_some_and(|value| !value.is_null()))
    };
    match section {
        "queries" => {
            let executes = fields
                .get("allow")
                .and_then(Value::as_array)
                .is_some_and(|modes| {
                    modes.iter().any(|mode| {
                        mode.as_str()
                            .is_some_and(|mode| mode.eq_ignore_ascii_case("execute"))
                    })
                });
            (present(&["queryOwner"]) && executes)
                .then(|| "combines \"queryOwner\" with \"execute\", which Trino refuses".to_owned())
        }
        "principals" => (!present(&["user", "principal_to_user"])).then(|| {
            "has neither \"user\" nor \"principal_to_user\"; Trino requires one".to_owned()
        }),
        "authorization" => (!present(&["new_user", "newUser", "new_role", "newRole"]))
            .then(|| "has neither \"new_user\" nor \"new_role\"; Trino requires one".to_owned()),
        _ => None,
    }
}

/// Why Java's `Pattern.compile` would refuse `pattern`, as far as Rust's parser can
/// tell; `None` for a pattern it parses, or refuses only for a construct Java has.
fn regex_problem(pattern: &str) -> Option<&'static str> {
    let error = regex_syntax::ast::parse::Parser::new()
        .parse(pattern)
        .err()?;
    match error.kind() {
        ErrorKind::GroupUnclosed => Some("a group is not closed"),
        ErrorKind::GroupUnopened => Some("a group is closed that was not opened"),
        ErrorKind::ClassUnclosed => Some("a character class is not closed"),
        ErrorKind::ClassRangeInvalid => Some("a character range is inverted"),
        // Java's possessive quantifiers (`a*+`) are a `+` after a quantifier, which
        // Rust reads as a repetition of nothing.
        ErrorKind::RepetitionMissing if possessive(pattern, error.span().start.offset) => None,
        ErrorKind::RepetitionMissing => Some("a repetition repeats nothing"),
        ErrorKind::RepetitionCountInvalid => Some("a repetition count is inverted"),
        ErrorKind::EscapeUnexpectedEof => Some("it ends with a lone backslash"),
        _ => None,
    }
}

/// Whether the `+` at byte `offset` of `pattern` follows a quantifier.
fn possessive(pattern: &str, offset: usize) -> bool {
    pattern
        .get(offset..)
        .is_some_and(|rest| rest.starts_with('+'))
        && pattern
            .get(..offset)
            .and_then(|before| before.chars().last())
            .is_some_and(|last| matches!(last, '*' | '+' | '?' | '}'))
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::json;

    use super::*;

    #[rstest]
    #[case::a_catalog_rule("catalogs", json!({"user": "alice", "catalog": "tpch|memory", "allow": "read-only"}))]
    #[case::a_catalog_rule_allowing_with_a_boolean("catalogs", json!({"allow": true}))]
    #[case::an_access_mode_in_capitals("catalogs", json!({"allow": "ALL"}))]
    #[case::a_query_rule("queries", json!({"group": "ops", "allow": ["view", "kill"], "queryOwner": "etl.*"}))]
    #[case::impersonation_with_aliases("impersonation", json!({"originalUser": "admin", "newUser": ".*", "allow": false}))]
    #[case::a_principal_rule("principals", json!({"principal": "(.*)@EXAMPLE", "principal_to_user": "$1", "allow": true}))]
    #[case::an_authorization_rule("authorization", json!({"original_group": "admins", "new_role": ".*"}))]
    #[case::a_schema_rule("schemas", json!({"role": "admin", "schema": ".*", "owner": true}))]
    #[case::a_table_rule_with_a_mask_and_a_filter("tables", json!({
        "catalog": "hive", "table": "orders", "privileges": ["select"],
        "columns": [{"name": "card", "mask": "'XXX'", "mask_environment": {"user": "masker"}}, {"name": "secret", "allow": false}],
        "filter": "region = 'EU'", "filter_environment": {"user": "filterer"}
    }))]
    #[case::no_privileges_at_all("tables", json!({"privileges": []}))]
    #[case::a_session_property_rule("catalog_session_properties", json!({"catalog": "hive", "property": "bucket_.*", "allow": false}))]
    #[case::a_function_rule_with_empty_kinds("functions", json!({"privileges": ["EXECUTE"], "function_kinds": []}))]
    #[case::a_procedure_rule("procedures", json!({"privileges": ["EXECUTE", "GRANT_EXECUTE"], "procedure": "sync_.*"}))]
    #[case::a_null_as_an_absent_property("schemas", json!({"user": null, "owner": false}))]
    #[case::a_look_ahead_only_java_has("catalogs", json!({"user": "(?!admin).*", "allow": "none"}))]
    #[case::a_possessive_quantifier_only_java_has("catalogs", json!({"user": "a*+b", "allow": "none"}))]
    fn rules_trino_reads_are_taken(#[case] section: &str, #[case] rule: Value) {
        assert_eq!(rule_problem(section, &rule), None);
    }

    #[rstest]
    #[case::a_regex_that_does_not_compile("catalogs", json!({"catalog": "(", "allow": "all"}), "\"catalog\" that Java cannot compile as a regex (a group is not closed)")]
    #[case::an_unclosed_class("tables", json!({"table": "[a-z", "privileges": ["SELECT"]}), "a character class is not closed")]
    #[case::an_access_mode_trino_lacks("catalogs", json!({"allow": "yes"}), "\"allow\" that is none of all, read-only, owner, none, true or false")]
    #[case::the_string_true("catalogs", json!({"allow": "true"}), "\"allow\" that is none of")]
    #[case::a_privilege_trino_lacks("tables", json!({"privileges": ["READ"]}), "with a value that is none of SELECT")]
    #[case::a_missing_allow("catalogs", json!({"user": "alice"}), "lacks \"allow\", which Trino requires")]
    #[case::a_misspelt_property("schemas", json!({"owner": true, "shema": "x"}), "has the property \"shema\", which Trino refuses there")]
    #[case::a_group_on_system_information("system_information", json!({"group": "ops", "allow": ["read"]}), "has the property \"group\"")]
    #[case::a_user_that_is_not_a_string("catalogs", json!({"user": 7, "allow": "all"}), "that is not a string (a regex)")]
    #[case::a_rule_that_is_not_an_object("catalogs", json!("allow all"), "is not a JSON object")]
    #[case::query_owner_with_execute("queries", json!({"queryOwner": "bob", "allow": ["execute"]}), "combines \"queryOwner\" with \"execute\"")]
    #[case::a_principal_rule_mapping_to_no_user("principals", json!({"principal": ".*", "allow": true}), "neither \"user\" nor \"principal_to_user\"")]
    #[case::an_authorization_rule_granting_nothing("authorization", json!({"original_user": "x"}), "neither \"new_user\" nor \"new_role\"")]
    #[case::an_alias_beside_its_name("impersonation", json!({"new_user": "a", "newUser": "b"}), "names \"new_user\" twice")]
    #[case::two_columns_of_one_name("tables", json!({"privileges": [], "columns": [{"name": "a"}, {"name": "a", "allow": false}]}), "column 2 names a column an earlier one names")]
    #[case::a_column_without_a_name("tables", json!({"privileges": [], "columns": [{"mask": "NULL"}]}), "column 1 has no \"name\"")]
    #[case::function_kinds("functions", json!({"privileges": ["EXECUTE"], "function_kinds": ["SCALAR"]}), "no longer supports")]
    #[case::a_filter_environment_with_a_role("tables", json!({"privileges": [], "filter_environment": {"role": "x"}}), "with a property other than \"user\"")]
    fn rules_trino_refuses_are_refused_with_the_property_named(
        #[case] section: &str,
        #[case] rule: Value,
        #[case] says: &str,
    ) {
        let problem = rule_problem(section, &rule).expect("refused");
        assert!(problem.contains(says), "{problem}");
    }

    #[test]
    fn a_problem_never_repeats_the_rules_values() {
        let rule = json!({"user": "alice-the-secret-name", "catalog": "(unclosed", "allow": "all"});
        let problem = rule_problem("catalogs", &rule).expect("refused");
        assert!(
            !problem.contains("alice-the-secret-name") && !problem.contains("(unclosed"),
            "{problem}"
        );
    }
}
