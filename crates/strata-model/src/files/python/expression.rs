//! Whether a user's Python expression is exactly one expression, found by a
//! scanner that knows Python's string literals and brackets, so the
//! characters that matter are only seen where they act.
//!
//! Outside strings and brackets, Python ends a statement at `;`, makes another
//! assignment target of `=`, and continues the line after `\`; an unclosed
//! string or bracket makes the whole file fail to import. Each of those is
//! refused. Inside brackets, `=` is a keyword argument and `;` a syntax error
//! that Python reports, so both are left alone there. The real-parser tests
//! check every case against Python's own `ast.parse`.

/// What makes a text more, or less, than one expression.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExpressionProblem {
    /// Nothing but blanks.
    #[error("is empty")]
    Empty,
    /// `;` outside strings and brackets would start another statement.
    #[error("contains ';' outside strings and brackets, which would start another statement")]
    Semicolon,
    /// `=` outside strings and brackets would assign another name.
    #[error(
        "contains '=' outside strings and brackets, which would assign another name; \
         put keyword arguments and lambda defaults inside parentheses"
    )]
    Assignment,
    /// `\` outside strings would continue onto the next line of the file.
    #[error("contains '\\' outside strings, which would continue onto the next line")]
    LineContinuation,
    /// A string literal is not closed.
    #[error("has a string literal that is not closed")]
    UnclosedString,
    /// Brackets do not pair up.
    #[error("has brackets that do not pair up")]
    UnbalancedBrackets,
}

/// A string literal being read: its quote, whether it is triple-quoted.
#[derive(Clone, Copy)]
struct Literal {
    quote: char,
    triple: bool,
}

/// Checks that `text` is one Python expression as far as statement
/// boundaries go; Python itself still reports other syntax errors.
pub fn check(text: &str) -> Result<(), ExpressionProblem> {
    if text.trim().is_empty() {
        return Err(ExpressionProblem::Empty);
    }
    let chars: Vec<char> = text.chars().collect();
    let mut depth: i64 = 0;
    let mut literal: Option<Literal> = None;
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        if let Some(open) = literal {
            if c == '\\' {
                // Escapes a quote even in raw strings, as far as where the
                // literal ends is concerned.
                index += 2;
                continue;
            }
            if c == open.quote {
                if !open.triple {
                    literal = None;
                } else if chars.get(index + 1) == Some(&open.quote)
                    && chars.get(index + 2) == Some(&open.quote)
                {
                    literal = None;
                    index += 2;
                }
            }
            index += 1;
            continue;
        }
        match c {
            '\'' | '"' => {
                let triple = chars.get(index + 1) == Some(&c) && chars.get(index + 2) == Some(&c);
                literal = Some(Literal { quote: c, triple });
                if triple {
                    index += 2;
                }
            }
            '#' => break,
            '\\' => return Err(ExpressionProblem::LineContinuation),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth -= 1;
                if depth < 0 {
                    return Err(ExpressionProblem::UnbalancedBrackets);
                }
            }
            ';' if depth == 0 => return Err(ExpressionProblem::Semicolon),
            '=' if depth == 0 => {
                let before = index.checked_sub(1).map(|at| chars[at]);
                let after = chars.get(index + 1).copied();
                let comparison =
                    after == Some('=') || matches!(before, Some('=' | '!' | '<' | '>'));
                if !comparison {
                    return Err(ExpressionProblem::Assignment);
                }
                if after == Some('=') {
                    index += 1;
                }
            }
            _ => {}
        }
        index += 1;
    }
    if literal.is_some() {
        return Err(ExpressionProblem::UnclosedString);
    }
    if depth != 0 {
        return Err(ExpressionProblem::UnbalancedBrackets);
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use rstest::rstest;

    use super::*;

    /// Expressions that are exactly one expression.
    pub(crate) const ACCEPTED: &[&str] = &[
        "timedelta(days=1)",
        "os.environ.get(\"SUPERSET_SECRET\", \"x;y=z\")",
        "'a;b' + \"c=d\"",
        "{\"key\": [1, 2, (3, 4)]}",
        "x == 1",
        "x != 1 and y <= 2 or z >= 3",
        "\"\"\"triple ; = \\\\ \"\"\"",
        "'it\\'s'",
        "r\"C:\\path\\file\"",
        "f\"{1 + 2}\"",
        "(lambda retries=3: retries)()",
        "[x for x in range(3) if x]",
        "1  # a comment; with = signs",
        "b'bytes' != b'other'",
    ];

    /// Texts that are not exactly one expression, and why.
    pub(crate) const REFUSED: &[(&str, ExpressionProblem)] = &[
        ("", ExpressionProblem::Empty),
        ("   ", ExpressionProblem::Empty),
        ("1; import os", ExpressionProblem::Semicolon),
        ("True; SECRET_KEY = 'known'", ExpressionProblem::Semicolon),
        ("OTHER = 1", ExpressionProblem::Assignment),
        ("a = b", ExpressionProblem::Assignment),
        ("lambda retries=3: retries", ExpressionProblem::Assignment),
        ("x += 1", ExpressionProblem::Assignment),
        ("1 + \\", ExpressionProblem::LineContinuation),
        ("\"unclosed", ExpressionProblem::UnclosedString),
        ("'''never closed", ExpressionProblem::UnclosedString),
        (
            "'escaped quote at the end\\'",
            ExpressionProblem::UnclosedString,
        ),
        (
            "r\"raw strings cannot end in one backslash\\\"",
            ExpressionProblem::UnclosedString,
        ),
        ("f(1", ExpressionProblem::UnbalancedBrackets),
        ("f(1))", ExpressionProblem::UnbalancedBrackets),
        ("]", ExpressionProblem::UnbalancedBrackets),
    ];

    #[test]
    fn one_expression_passes() {
        for text in ACCEPTED {
            assert_eq!(check(text), Ok(()), "{text}");
        }
    }

    #[test]
    fn anything_else_is_refused_with_its_reason() {
        for (text, problem) in REFUSED {
            assert_eq!(check(text).as_ref(), Err(problem), "{text}");
        }
    }

    #[rstest]
    #[case::semicolon(ExpressionProblem::Semicolon, "another statement")]
    #[case::assignment(ExpressionProblem::Assignment, "inside parentheses")]
    #[case::continuation(ExpressionProblem::LineContinuation, "next line")]
    fn each_refusal_says_what_it_would_do(
        #[case] problem: ExpressionProblem,
        #[case] expected: &str,
    ) {
        assert!(problem.to_string().contains(expected), "{problem}");
    }
}
