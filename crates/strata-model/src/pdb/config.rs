//! The user-facing PDB settings of one role.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `spec.<role>.roleConfig.podDisruptionBudget`: whether the operator manages a
/// PodDisruptionBudget for the role, and how many Pods it may take down at once.
///
/// Missing fields mean "enabled, with the product's default `maxUnavailable`", so an
/// empty object and an absent one behave the same. `enabled: false` exists for users who
/// want to write their own budgets (for example across roles) without overlapping ours.
///
/// ```
/// use strata_model::pdb::PdbConfig;
///
/// let config: PdbConfig = serde_json::from_str("{}").unwrap();
/// assert_eq!(config, PdbConfig::default());
/// assert!(config.enabled);
/// ```
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(default, rename_all = "camelCase")]
pub struct PdbConfig {
    /// Whether the operator creates a PodDisruptionBudget for this role. Defaults to
    /// `true`. Set it to `false` to remove the operator's budget and define your own.
    pub enabled: bool,

    /// How many Pods of this role may be voluntarily disrupted at the same time.
    /// Defaults to a product-specific value that keeps the role available.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<u16>,
}

impl Default for PdbConfig {
    /// Enabled with the product default, matching what serde produces for `{}`.
    fn default() -> Self {
        Self {
            enabled: true,
            max_unavailable: None,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::empty_object("{}", PdbConfig { enabled: true, max_unavailable: None })]
    #[case::only_disabled(r#"{"enabled":false}"#, PdbConfig { enabled: false, max_unavailable: None })]
    #[case::only_max_unavailable(r#"{"maxUnavailable":3}"#, PdbConfig { enabled: true, max_unavailable: Some(3) })]
    #[case::both_fields(
        r#"{"enabled":false,"maxUnavailable":2}"#,
        PdbConfig { enabled: false, max_unavailable: Some(2) }
    )]
    fn deserializes_with_defaults(#[case] json: &str, #[case] expected: PdbConfig) {
        let parsed: PdbConfig = serde_json::from_str(json).unwrap();
        assert_eq!(parsed, expected);
    }

    #[test]
    fn default_matches_serde_default_of_empty_object() {
        let parsed: PdbConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(PdbConfig::default(), parsed);
    }

    #[test]
    fn serializes_in_camel_case_without_absent_max_unavailable() {
        let json = serde_json::to_value(PdbConfig {
            enabled: true,
            max_unavailable: Some(4),
        })
        .unwrap();
        assert_eq!(
            json,
            serde_json::json!({"enabled": true, "maxUnavailable": 4})
        );
        let json = serde_json::to_value(PdbConfig::default()).unwrap();
        assert_eq!(json, serde_json::json!({"enabled": true}));
    }

    #[test]
    fn negative_max_unavailable_is_rejected() {
        let parsed = serde_json::from_str::<PdbConfig>(r#"{"maxUnavailable":-1}"#);
        assert!(parsed.is_err());
    }

    #[test]
    fn schema_documents_both_fields_and_requires_none() {
        let schema = serde_json::to_value(schemars::schema_for!(PdbConfig)).unwrap();
        let properties = &schema["properties"];
        assert_eq!(properties["enabled"]["type"], "boolean");
        assert_eq!(properties["enabled"]["default"], true);
        assert!(properties["maxUnavailable"].is_object());
        assert!(schema.get("required").is_none(), "{schema}");
    }
}
