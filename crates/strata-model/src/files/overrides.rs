//! The checks every `configOverrides` entry of a line-based file passes, with one
//! condition reason for each problem in every operator.
//!
//! - A key the operator writes and builds other objects around (a port a Service
//!   points at, a directory a volume is mounted at, the nameservice) is refused as
//!   `ReservedConfigOverride`, saying what depends on it: overriding it in the file
//!   alone would break what was built for the operator's value. Every other override
//!   wins over the operator's value.
//! - An empty or blank key, or a line break in a key, is refused as
//!   `InvalidConfigOverride`; so is a line break in a value of a line-based file
//!   ([`check`]): the writers would escape it, but the product would then read a
//!   setting the user did not write. Hadoop XML values may span lines
//!   ([`check_multiline_values`]).
//!
//! Product rules on top (ZooKeeper's key characters, Hadoop's empty values, Trino's
//! `${ENV:...}`) stay with the product.

use std::collections::BTreeMap;

/// A key of a file the operator owns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnedKey {
    /// The key.
    pub key: &'static str,
    /// Whether the keys below it (`<key>.<anything>`) are owned too, as for a family of
    /// per-instance settings (`server.1`, `dfs.namenode.rpc-address.<ns>.<nn>`).
    pub with_subkeys: bool,
    /// What depends on the operator's value, or where the spec sets it instead.
    pub because: &'static str,
}

impl OwnedKey {
    /// Owns exactly `key`.
    pub const fn exact(key: &'static str, because: &'static str) -> Self {
        Self {
            key,
            with_subkeys: false,
            because,
        }
    }

    /// Owns `key` and every `<key>.<anything>`.
    pub const fn with_subkeys(key: &'static str, because: &'static str) -> Self {
        Self {
            key,
            with_subkeys: true,
            because,
        }
    }

    /// Whether an override of `key` would change what the operator owns.
    pub fn owns(&self, key: &str) -> bool {
        key == self.key
            || (self.with_subkeys
                && key
                    .strip_prefix(self.key)
                    .is_some_and(|rest| rest.starts_with('.')))
    }
}

/// Why an override is refused; each variant's name is the condition reason.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, strum::IntoStaticStr)]
pub enum OverrideError {
    /// The key is the operator's.
    #[error(
        "configOverrides.{file}: {key} is set by the operator ({because}); remove it from \
         configOverrides"
    )]
    ReservedConfigOverride {
        /// The file.
        file: String,
        /// The refused key.
        key: String,
        /// What depends on the operator's value.
        because: &'static str,
    },
    /// The key is empty or spans lines, or the value spans lines where the file's
    /// values cannot.
    #[error("configOverrides.{file}: {key:?}: {problem}")]
    InvalidConfigOverride {
        /// The file.
        file: String,
        /// The refused key.
        key: String,
        /// What is wrong with the entry.
        problem: &'static str,
    },
}

impl OverrideError {
    /// The condition reason: the variant's name.
    pub fn reason(&self) -> &'static str {
        self.into()
    }

    /// The refusal of an override of `key` in `file` for a product rule of its own.
    pub fn reserved(file: &str, key: &str, because: &'static str) -> Self {
        Self::ReservedConfigOverride {
            file: file.to_owned(),
            key: key.to_owned(),
            because,
        }
    }
}

/// Checks the `overrides` of a line-based `file` (Java properties) against the keys
/// in `owned`: every key and value must be one line.
pub fn check(
    file: &str,
    overrides: &BTreeMap<String, String>,
    owned: &[OwnedKey],
) -> Result<(), OverrideError> {
    check_entries(file, overrides, owned, Values::SingleLine)
}

/// Checks the `overrides` of a `file` whose values may span lines (Hadoop XML, where
/// `hadoop.security.auth_to_local` is a list of rules, one per line) against the
/// keys in `owned`. Keys must still be one line.
pub fn check_multiline_values(
    file: &str,
    overrides: &BTreeMap<String, String>,
    owned: &[OwnedKey],
) -> Result<(), OverrideError> {
    check_entries(file, overrides, owned, Values::MultiLine)
}

/// Whether a file's values may span lines.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Values {
    SingleLine,
    MultiLine,
}

fn check_entries(
    file: &str,
    overrides: &BTreeMap<String, String>,
    owned: &[OwnedKey],
    values: Values,
) -> Result<(), OverrideError> {
    let multi_line = |text: &str| text.contains(['\n', '\r']);
    for (key, value) in overrides {
        let problem = if key.trim().is_empty() || multi_line(key) {
            Some("a key must be non-empty and on one line")
        } else if values == Values::SingleLine && multi_line(value) {
            Some("a value in this file must be on one line")
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(OverrideError::InvalidConfigOverride {
                file: file.to_owned(),
                key: key.clone(),
                problem,
            });
        }
        if let Some(owned) = owned.iter().find(|owned| owned.owns(key)) {
            return Err(OverrideError::reserved(file, key, owned.because));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    const OWNED: [OwnedKey; 2] = [
        OwnedKey::exact("clientPort", "the client Service uses port 2181"),
        OwnedKey::with_subkeys("server", "the operator writes one line per pod"),
    ];

    #[rstest]
    #[case::another_key_wins("tickTime", "4000", None)]
    #[case::an_owned_key("clientPort", "2182", Some("ReservedConfigOverride"))]
    #[case::a_subkey_of_a_family("server.1", "x:2888:3888", Some("ReservedConfigOverride"))]
    #[case::the_family_key_itself("server", "x", Some("ReservedConfigOverride"))]
    #[case::a_key_that_only_starts_alike("serverCnxnFactory", "x", None)]
    #[case::a_subkey_of_an_exact_key("clientPort.extra", "1", None)]
    #[case::an_empty_key("", "1", Some("InvalidConfigOverride"))]
    #[case::a_blank_key("  ", "1", Some("InvalidConfigOverride"))]
    #[case::a_value_that_starts_a_line(
        "tickTime",
        "1\nserver.9=evil",
        Some("InvalidConfigOverride")
    )]
    #[case::a_carriage_return_in_a_key("a\rb", "1", Some("InvalidConfigOverride"))]
    fn an_override_is_refused_only_for_an_owned_key_or_a_second_line(
        #[case] key: &str,
        #[case] value: &str,
        #[case] reason: Option<&str>,
    ) {
        let overrides = BTreeMap::from([(key.to_owned(), value.to_owned())]);
        let result = check("zoo.cfg", &overrides, &OWNED);
        assert_eq!(result.as_ref().err().map(OverrideError::reason), reason);
    }

    #[rstest]
    #[case::a_list_of_rules("RULE:[1:$1]\nDEFAULT", None)]
    #[case::a_key_on_two_lines_still_is_not("", Some("InvalidConfigOverride"))]
    fn values_of_an_xml_file_may_span_lines(#[case] value: &str, #[case] reason: Option<&str>) {
        let key = if value.is_empty() {
            "a\nb"
        } else {
            "hadoop.security.auth_to_local"
        };
        let overrides = BTreeMap::from([(key.to_owned(), value.to_owned())]);
        let result = check_multiline_values("core-site.xml", &overrides, &[]);
        assert_eq!(result.as_ref().err().map(OverrideError::reason), reason);
    }

    #[test]
    fn a_refusal_names_the_file_the_key_and_what_depends_on_it() {
        let overrides = BTreeMap::from([("clientPort".to_owned(), "2182".to_owned())]);
        let message = check("zoo.cfg", &overrides, &OWNED).map_err(|error| error.to_string());
        assert_eq!(
            message,
            Err(
                "configOverrides.zoo.cfg: clientPort is set by the operator (the client \
                 Service uses port 2181); remove it from configOverrides"
                    .to_owned()
            )
        );
    }
}
