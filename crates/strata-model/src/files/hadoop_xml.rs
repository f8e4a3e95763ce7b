//! Hadoop `*-site.xml` files, as `org.apache.hadoop.conf.Configuration` reads them.
//!
//! `<configuration>` with one `<property><name/><value/></property>` per entry, in the
//! caller's order (a `BTreeMap` gives sorted, diffable files). Text is XML-escaped;
//! characters XML 1.0 cannot hold at all (control characters other than tab, line feed
//! and carriage return) are refused, since no escaping makes them legal.
//!
//! Two more refusals follow Hadoop's own parser (`Configuration.Parser`): it trims a
//! property's name, so `" fs.defaultFS"` would silently become, and override,
//! `fs.defaultFS`; and it drops a property whose value is empty, so setting one to `""`
//! would silently keep Hadoop's default. Both are refused with the name, so the user
//! learns what Hadoop would have done instead.

/// Why a Hadoop XML file could not be written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HadoopXmlError {
    /// Hadoop ignores a property without a name.
    #[error("a property name is empty")]
    EmptyName,
    /// Hadoop trims names, so this one would become another.
    #[error("property name {name:?} starts or ends with white space, which Hadoop trims away")]
    UntrimmedName {
        /// The property.
        name: String,
    },
    /// Hadoop ignores a property with an empty value.
    #[error(
        "property {name:?} has an empty value, which Hadoop ignores; remove it to keep \
         Hadoop's default"
    )]
    EmptyValue {
        /// The property.
        name: String,
    },
    /// XML 1.0 has no way to carry the character.
    #[error("property {name:?} contains the character U+{code:04X}, which XML 1.0 cannot hold")]
    InvalidCharacter {
        /// The property.
        name: String,
        /// The character's code point.
        code: u32,
    },
}

fn allowed(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | ' '..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}')
        || ('\u{10000}'..='\u{10FFFF}').contains(&c)
}

fn escaped(name: &str, text: &str) -> Result<String, HadoopXmlError> {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if !allowed(c) {
            return Err(HadoopXmlError::InvalidCharacter {
                name: name.to_owned(),
                code: u32::from(c),
            });
        }
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // A raw carriage return would be normalised to a line feed by the parser.
            '\r' => out.push_str("&#13;"),
            _ => out.push(c),
        }
    }
    Ok(out)
}

/// The file for `properties`, in the given order.
pub fn write<'a>(
    properties: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<String, HadoopXmlError> {
    let mut out = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- Rendered by Strata; edit the custom resource instead. -->\n<configuration>\n",
    );
    for (name, value) in properties {
        if name.is_empty() {
            return Err(HadoopXmlError::EmptyName);
        }
        if name.trim() != name {
            return Err(HadoopXmlError::UntrimmedName {
                name: name.to_owned(),
            });
        }
        if value.is_empty() {
            return Err(HadoopXmlError::EmptyValue {
                name: name.to_owned(),
            });
        }
        out.push_str("  <property>\n    <name>");
        out.push_str(&escaped(name, name)?);
        out.push_str("</name>\n    <value>");
        out.push_str(&escaped(name, value)?);
        out.push_str("</value>\n  </property>\n");
    }
    out.push_str("</configuration>\n");
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use rstest::rstest;

    use super::*;

    /// Names and values that must come back from a real XML parser intact.
    pub(crate) fn tricky() -> Vec<(&'static str, &'static str)> {
        vec![
            ("fs.defaultFS", "hdfs://simple-hdfs"),
            (
                "markup",
                "<value>injected</value></property><property><name>x",
            ),
            ("amp", "a&b&amp;"),
            ("quotes", "\"double\" 'single'"),
            ("lines", "one\ntwo\r\nthree"),
            ("unicode", "grüße ✓ 😀"),
            ("cdata", "]]> <![CDATA[ x ]]>"),
            ("blanks", "  kept as given  "),
        ]
    }

    #[rstest]
    #[case::markup("a<b>&c", "a&lt;b&gt;&amp;c")]
    #[case::quotes("\"'", "&quot;&apos;")]
    #[case::carriage_return("a\rb", "a&#13;b")]
    fn escaping(#[case] value: &str, #[case] expected: &str) {
        let text = write([("k", value)]).unwrap_or_default();
        assert!(
            text.contains(&format!("<value>{expected}</value>")),
            "{text}"
        );
    }

    #[rstest]
    #[case::nul("a\u{0}b", 0)]
    #[case::bell("\u{7}", 7)]
    #[case::non_character("\u{FFFE}", 0xFFFE)]
    fn characters_xml_cannot_hold_are_refused(#[case] value: &str, #[case] code: u32) {
        assert_eq!(
            write([("k", value)]),
            Err(HadoopXmlError::InvalidCharacter {
                name: "k".to_owned(),
                code
            })
        );
    }

    #[test]
    fn an_empty_name_is_refused() {
        assert_eq!(write([("", "v")]), Err(HadoopXmlError::EmptyName));
    }

    #[rstest]
    #[case::leading_blank(" fs.defaultFS")]
    #[case::trailing_blank("fs.defaultFS ")]
    #[case::trailing_line_feed("fs.defaultFS\n")]
    #[case::leading_tab("\tfs.defaultFS")]
    fn a_name_hadoop_would_trim_is_refused(#[case] name: &str) {
        assert_eq!(
            write([(name, "hdfs://x")]),
            Err(HadoopXmlError::UntrimmedName {
                name: name.to_owned()
            })
        );
    }

    #[test]
    fn an_empty_value_hadoop_would_ignore_is_refused_naming_the_property() {
        let error = write([("dfs.replication", "")]).unwrap_err();
        assert_eq!(
            error,
            HadoopXmlError::EmptyValue {
                name: "dfs.replication".to_owned()
            }
        );
        assert!(error.to_string().contains("remove it"), "{error}");
    }

    #[test]
    fn the_file_is_one_configuration_with_a_property_per_entry() {
        let text = write([("a", "1"), ("b", "2")]).unwrap_or_default();
        assert_eq!(text.matches("<property>").count(), 2);
        assert!(text.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"));
        assert!(text.ends_with("</configuration>\n"));
    }
}
