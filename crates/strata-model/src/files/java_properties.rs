//! Java `.properties` files, as `java.util.Properties.load` reads them.
//!
//! Decisions:
//! - **Line breaks in values are escaped** (`\n`, `\r`), never written raw: an escaped
//!   break stays inside its value, so no value can start another entry. Products that
//!   want no line breaks at all refuse them in their own validation.
//! - **Non-ASCII is written as `\uXXXX`** (UTF-16 units), because `Properties.load` on
//!   a byte stream (how ZooKeeper, Trino and log4j open their files) decodes ISO-8859-1.
//! - **Keys** escape the separators (`=`, `:`, blanks) and the comment starters (`#`,
//!   `!`) that would otherwise change their meaning; an empty key is refused.
//! - **Order** is the caller's: entries are written as given, one `key=value` per line,
//!   after an optional `#` header, ending in a newline.

/// Why a properties file could not be written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PropertiesError {
    /// `Properties.load` cannot tell an empty key from a blank line.
    #[error("a property key is empty")]
    EmptyKey,
}

/// Escapes one character the way `Properties.store` would; `in_key` adds the
/// separators and comment starters, `leading` escapes a blank at the start.
fn escape(out: &mut String, c: char, in_key: bool, leading: bool) {
    match c {
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{c}' => out.push_str("\\f"),
        ' ' if in_key || leading => out.push_str("\\ "),
        '=' | ':' | '#' | '!' if in_key => {
            out.push('\\');
            out.push(c);
        }
        ' '..='~' => out.push(c),
        _ => {
            let mut units = [0_u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04X}"));
            }
        }
    }
}

fn escaped(text: &str, in_key: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for (index, c) in text.chars().enumerate() {
        escape(&mut out, c, in_key, index == 0);
    }
    out
}

/// The file with `header` (each line prefixed with `# `, none when empty) and
/// `entries` in the given order.
pub fn write<'a>(
    header: &str,
    entries: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<String, PropertiesError> {
    let mut out = String::new();
    for line in header.lines() {
        out.push_str("# ");
        out.push_str(&escaped(line, false).replace("\\ ", " "));
        out.push('\n');
    }
    for (key, value) in entries {
        if key.is_empty() {
            return Err(PropertiesError::EmptyKey);
        }
        out.push_str(&escaped(key, true));
        out.push('=');
        out.push_str(&escaped(value, false));
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use rstest::rstest;

    use super::*;

    /// Tricky keys and values: every one must come back from `Properties.load` intact.
    pub(crate) fn tricky() -> Vec<(&'static str, &'static str)> {
        vec![
            ("plain", "value"),
            ("with space", "a b"),
            ("eq=uals", "x=y"),
            ("colon:key", "c:d"),
            ("#not-a-comment", "!bang"),
            ("!also", "#hash"),
            ("back\\slash", "C:\\path\\to"),
            ("leading", "  two blanks"),
            ("trailing", "blank "),
            ("newline", "first\nsecond=injected"),
            ("carriage", "a\r\nb"),
            ("tab", "a\tb"),
            ("unicode", "grüße ✓ 😀"),
            ("empty", ""),
            ("ümlaut-key", "v"),
        ]
    }

    #[rstest]
    #[case::plain("a", "b", "a=b\n")]
    #[case::separators_in_key("a=b:c d", "v", "a\\=b\\:c\\ d=v\n")]
    #[case::comment_starter_in_key("#a", "v", "\\#a=v\n")]
    #[case::leading_blank_value("k", " v", "k=\\ v\n")]
    #[case::inner_blank_value("k", "a b", "k=a b\n")]
    #[case::newline_stays_inside("k", "a\nb=c", "k=a\\nb=c\n")]
    #[case::backslash("k", "a\\b", "k=a\\\\b\n")]
    #[case::non_ascii("k", "é", "k=\\u00E9\n")]
    #[case::astral("k", "😀", "k=\\uD83D\\uDE00\n")]
    fn escaping(#[case] key: &str, #[case] value: &str, #[case] expected: &str) {
        assert_eq!(write("", [(key, value)]), Ok(expected.to_owned()));
    }

    #[test]
    fn header_lines_are_comments_and_order_is_kept() {
        assert_eq!(
            write("Rendered by Strata\nline two", [("b", "1"), ("a", "2")]),
            Ok("# Rendered by Strata\n# line two\nb=1\na=2\n".to_owned())
        );
    }

    #[test]
    fn an_empty_key_is_refused() {
        assert_eq!(write("", [("", "v")]), Err(PropertiesError::EmptyKey));
    }

    #[test]
    fn no_value_can_start_a_line() {
        let text = write("", tricky()).unwrap_or_default();
        assert_eq!(text.lines().count(), tricky().len());
    }
}
