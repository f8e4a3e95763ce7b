//! The chart skeleton: the files every operator's chart has, with `@PLACEHOLDER@`s.
//!
//! The files live next to this module as plain Helm templates so they read (and diff)
//! like any chart. `@` never occurs in Helm template syntax, so the placeholders cannot
//! collide with it.

use super::example::Example;

/// Every skeleton file, by its path in the chart.
const FILES: [(&str, &str); 9] = [
    ("Chart.yaml", include_str!("skeleton/Chart.yaml")),
    ("values.yaml", include_str!("skeleton/values.yaml")),
    (
        "templates/_helpers.tpl",
        include_str!("skeleton/templates/_helpers.tpl"),
    ),
    (
        "templates/_rules.tpl",
        include_str!("skeleton/templates/_rules.tpl"),
    ),
    (
        "templates/deployment.yaml",
        include_str!("skeleton/templates/deployment.yaml"),
    ),
    (
        "templates/serviceaccount.yaml",
        include_str!("skeleton/templates/serviceaccount.yaml"),
    ),
    (
        "templates/rbac.yaml",
        include_str!("skeleton/templates/rbac.yaml"),
    ),
    (
        "templates/service.yaml",
        include_str!("skeleton/templates/service.yaml"),
    ),
    (
        "templates/NOTES.txt",
        include_str!("skeleton/templates/NOTES.txt"),
    ),
];

/// What fills the placeholders of one chart.
#[derive(Debug, Clone)]
pub struct Values {
    /// `@NAME@`: chart, image and template-helper name.
    pub name: &'static str,
    /// `@VERSION@`: chart version and appVersion.
    pub version: &'static str,
    /// `@SOURCE@`: the project's repository URL.
    pub source: &'static str,
    /// `@REPOSITORY@`: the default image repository.
    pub repository: String,
    /// `@RULES@`: the RBAC rules as a YAML sequence at column 0.
    pub rules: String,
    /// `@LEASE_RULES@`: the leader-election Role's rules, as `@RULES@`.
    pub lease_rules: String,
    /// `@CRD_RULES@`: the CRD ClusterRole's rules, as `@RULES@`.
    pub crd_rules: String,
    /// `@KINDS@`: the CRD names, comma-separated.
    pub kinds: String,
    /// `@KIND@`, `@OBJECT@`, `@EXAMPLE@`: the first-cluster example.
    pub example: Example,
}

/// A placeholder left in a file after every known one was replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownPlaceholder {
    /// The skeleton file.
    pub file: &'static str,
    /// The placeholder, with its `@`s.
    pub name: String,
}

/// Every chart file of the skeleton with the placeholders filled, in a fixed order.
pub fn render(values: &Values) -> Result<Vec<(String, String)>, UnknownPlaceholder> {
    let replacements = [
        ("@NAME@", values.name.to_owned()),
        ("@VERSION@", values.version.to_owned()),
        ("@SOURCE@", values.source.to_owned()),
        ("@REPOSITORY@", values.repository.clone()),
        ("@LEASE_RULES@", values.lease_rules.clone()),
        ("@CRD_RULES@", values.crd_rules.clone()),
        ("@RULES@", values.rules.clone()),
        ("@KINDS@", values.kinds.clone()),
        ("@KIND@", values.example.kind.clone()),
        ("@OBJECT@", values.example.object()),
        ("@EXAMPLE@", values.example.manifest.clone()),
    ];
    FILES
        .iter()
        .map(|(file, text)| {
            let mut filled = (*text).to_owned();
            for (placeholder, value) in &replacements {
                filled = filled.replace(placeholder, value);
            }
            match leftover_placeholder(&filled) {
                Some(name) => Err(UnknownPlaceholder { file, name }),
                None => Ok(((*file).to_owned(), filled)),
            }
        })
        .collect()
}

/// The first `@WORD@` of upper-case letters and underscores in `text`, if any.
fn leftover_placeholder(text: &str) -> Option<String> {
    let parts: Vec<&str> = text.split('@').collect();
    let between_ats = parts.get(1..parts.len().saturating_sub(1))?;
    between_ats
        .iter()
        .find(|inner| {
            !inner.is_empty() && inner.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        })
        .map(|inner| format!("@{inner}@"))
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::none("plain text", None)]
    #[case::one("a @NAME@ b", Some("@NAME@"))]
    #[case::email_is_not_one("mail me@example.com", None)]
    #[case::lower_case_is_not_one("x @name@ y", None)]
    #[case::after_a_lone_at("me@host and @KIND@", Some("@KIND@"))]
    fn finds_leftover_placeholders(#[case] text: &str, #[case] expected: Option<&str>) {
        assert_eq!(leftover_placeholder(text).as_deref(), expected);
    }
}
