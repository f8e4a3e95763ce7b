//! A Python module of `NAME = value` assignments: Superset's `superset_config.py`.
//!
//! Two kinds of values:
//! - [`PyValue`] literals the operator produces (strings, numbers, booleans, `None`,
//!   lists and dicts of them) are written as Python literals, strings with every quote,
//!   backslash and control character escaped, so no value can leave its literal;
//! - [`PyValue::Expression`]: text users write in `configOverrides` ("key = Python
//!   expression"), written verbatim. It is the user's own code in their own Superset,
//!   so it is not sandboxed, but it must be exactly one expression: one line, and
//!   (by [`expression::check`]) no `;`, no bare `=` and no line continuation outside
//!   strings and brackets, balanced brackets and closed strings. So every override is
//!   one assignment, and none can add a statement, or assign another name, behind the
//!   operator's back.
//!
//! Names must be Python identifiers (ASCII) and not keywords. Imports the operator needs
//! come first, then the assignments in the caller's order.

pub mod expression;

use std::collections::BTreeMap;
use std::fmt::Write as _;

pub use self::expression::ExpressionProblem;

/// A value of an assignment.
#[derive(Clone, Debug, PartialEq)]
pub enum PyValue {
    /// `None`.
    None,
    /// `True` or `False`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float; must be finite.
    Float(f64),
    /// A string literal.
    Str(String),
    /// A list literal.
    List(Vec<PyValue>),
    /// A dict literal with string keys.
    Dict(BTreeMap<String, PyValue>),
    /// A Python expression written by the user, verbatim, on one line.
    Expression(String),
}

/// Why the module could not be written.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PythonError {
    /// The name cannot be assigned in Python.
    #[error(
        "{name:?} is not a Python identifier (ASCII letters, digits and '_', not starting with a digit, not a keyword)"
    )]
    InvalidName {
        /// The rejected name.
        name: String,
    },
    /// A user expression spans several lines.
    #[error("the expression for {name} contains a line break; write it on one line")]
    MultiLineExpression {
        /// The assignment's name.
        name: String,
    },
    /// A user expression that is not exactly one expression.
    #[error("the expression for {name} {problem}")]
    NotOneExpression {
        /// The assignment's name.
        name: String,
        /// What is wrong with it.
        problem: ExpressionProblem,
    },
    /// Python has no literal for NaN or infinity.
    #[error("the value of {name} is not a finite number")]
    NonFiniteFloat {
        /// The assignment's name.
        name: String,
    },
}

/// Python 3's hard keywords: names that cannot be assigned.
const KEYWORDS: [&str; 35] = [
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// Whether `name` can be the target of an assignment.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    let starts_well = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    starts_well && chars.all(|c| c.is_ascii_alphanumeric() || c == '_') && !KEYWORDS.contains(&name)
}

/// A string literal in double quotes that Python reads back as exactly `text`.
pub fn string_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') => {
                let _ = write!(out, "\\U{:08x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn literal(name: &str, value: &PyValue, out: &mut String) -> Result<(), PythonError> {
    match value {
        PyValue::None => out.push_str("None"),
        PyValue::Bool(true) => out.push_str("True"),
        PyValue::Bool(false) => out.push_str("False"),
        PyValue::Int(number) => out.push_str(&number.to_string()),
        PyValue::Float(number) if number.is_finite() => out.push_str(&format!("{number:?}")),
        PyValue::Float(_) => {
            return Err(PythonError::NonFiniteFloat {
                name: name.to_owned(),
            });
        }
        PyValue::Str(text) => out.push_str(&string_literal(text)),
        PyValue::List(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                literal(name, item, out)?;
            }
            out.push(']');
        }
        PyValue::Dict(entries) => {
            out.push('{');
            for (index, (key, item)) in entries.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                out.push_str(&string_literal(key));
                out.push_str(": ");
                literal(name, item, out)?;
            }
            out.push('}');
        }
        PyValue::Expression(expression) => {
            if expression.contains(['\n', '\r', '\u{b}', '\u{c}', '\u{2028}', '\u{2029}']) {
                return Err(PythonError::MultiLineExpression {
                    name: name.to_owned(),
                });
            }
            expression::check(expression).map_err(|problem| PythonError::NotOneExpression {
                name: name.to_owned(),
                problem,
            })?;
            out.push_str(expression.trim());
        }
    }
    Ok(())
}

/// The module: a header comment, `imports` (whole lines the operator controls, such
/// as `import os`), then one `NAME = value` line per assignment, in the given order.
pub fn write<'a>(
    header: &str,
    imports: &[&str],
    assignments: impl IntoIterator<Item = (&'a str, &'a PyValue)>,
) -> Result<String, PythonError> {
    let mut out = String::new();
    for line in header.lines() {
        out.push_str("# ");
        out.push_str(line);
        out.push('\n');
    }
    for import in imports {
        out.push_str(import);
        out.push('\n');
    }
    if !imports.is_empty() {
        out.push('\n');
    }
    for (name, value) in assignments {
        if !is_identifier(name) {
            return Err(PythonError::InvalidName {
                name: name.to_owned(),
            });
        }
        out.push_str(name);
        out.push_str(" = ");
        literal(name, value, &mut out)?;
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use rstest::rstest;

    use super::*;

    /// Operator literals that must come back from a real Python interpreter intact.
    pub(crate) fn tricky() -> Vec<(&'static str, PyValue)> {
        vec![
            ("ROW_LIMIT", PyValue::Int(50000)),
            ("RATIO", PyValue::Float(0.25)),
            ("ENABLED", PyValue::Bool(true)),
            ("NOTHING", PyValue::None),
            (
                "QUOTES",
                PyValue::Str("\"double\" 'single' \"\"\" triple".to_owned()),
            ),
            ("BREAKOUT", PyValue::Str("\"\nimport os\nX = \"".to_owned())),
            ("BACKSLASH", PyValue::Str("C:\\path\\".to_owned())),
            ("UNICODE", PyValue::Str("grüße ✓ 😀 \u{2028}".to_owned())),
            ("CONTROL", PyValue::Str("bell\u{7} nul\u{0}".to_owned())),
            (
                "NESTED",
                PyValue::Dict(BTreeMap::from([
                    (
                        "list".to_owned(),
                        PyValue::List(vec![PyValue::Int(1), PyValue::Str("two".to_owned())]),
                    ),
                    ("key\"quote".to_owned(), PyValue::Bool(false)),
                ])),
            ),
        ]
    }

    #[rstest]
    #[case::identifier("SECRET_KEY", true)]
    #[case::underscore_start("_private", true)]
    #[case::digit_start("1ST", false)]
    #[case::dash("ROW-LIMIT", false)]
    #[case::dotted("a.b", false)]
    #[case::keyword("import", false)]
    #[case::empty("", false)]
    #[case::assignment_injection("X = 1; Y", false)]
    #[case::non_ascii("ÄPFEL", false)]
    fn identifiers(#[case] name: &str, #[case] expected: bool) {
        assert_eq!(is_identifier(name), expected);
    }

    #[rstest]
    #[case::plain("abc", "\"abc\"")]
    #[case::quote("a\"b", "\"a\\\"b\"")]
    #[case::backslash("a\\b", "\"a\\\\b\"")]
    #[case::newline("a\nb", "\"a\\nb\"")]
    #[case::control("\u{0}", "\"\\U00000000\"")]
    fn string_literals(#[case] text: &str, #[case] expected: &str) {
        assert_eq!(string_literal(text), expected);
    }

    #[test]
    fn an_expression_must_stay_on_one_line() {
        let value = PyValue::Expression("1\nimport os".to_owned());
        assert_eq!(
            write("", &[], [("X", &value)]),
            Err(PythonError::MultiLineExpression {
                name: "X".to_owned()
            })
        );
    }

    #[test]
    fn expressions_are_written_verbatim() {
        let value = PyValue::Expression("timedelta(days=1)".to_owned());
        assert_eq!(
            write(
                "",
                &["from datetime import timedelta"],
                [("LIFETIME", &value)]
            ),
            Ok("from datetime import timedelta\n\nLIFETIME = timedelta(days=1)\n".to_owned())
        );
    }

    #[test]
    fn invalid_names_and_numbers_are_refused() {
        assert_eq!(
            write("", &[], [("not-a-name", &PyValue::None)]),
            Err(PythonError::InvalidName {
                name: "not-a-name".to_owned()
            })
        );
        assert_eq!(
            write("", &[], [("X", &PyValue::Float(f64::NAN))]),
            Err(PythonError::NonFiniteFloat {
                name: "X".to_owned()
            })
        );
    }
}
