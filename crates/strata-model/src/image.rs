//! Which container image a product runs, and with which pull settings.
//!
//! Strata runs the products' official upstream images (`zookeeper`, `apache/hadoop`, ...).
//! Users pick a product version; the operator renders config for that version. A custom
//! image (a mirror, a patched build) replaces the whole image reference but does not
//! change which version the operator renders config for.

use k8s_openapi::api::core::v1::LocalObjectReference;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Longest tag a registry accepts (OCI distribution spec).
const MAX_TAG_LENGTH: usize = 128;

/// `spec.image`: the product version and how to pull its image.
///
/// ```
/// use strata_model::image::ProductImage;
///
/// let image = ProductImage { product_version: Some("3.9.4".into()), ..Default::default() };
/// let resolved = image.resolve("zookeeper", "3.9.3").unwrap();
/// assert_eq!(resolved.image, "zookeeper:3.9.4");
/// assert_eq!(resolved.product_version, "3.9.4");
/// ```
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProductImage {
    /// Product version to run, such as `3.9.4`; it is the tag of the official image.
    /// Defaults to the version this operator release was tested with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product_version: Option<String>,

    /// A full image reference (e.g. `registry.example.com/zookeeper:3.9.4-patched`) used
    /// instead of the official image. Set `productVersion` to the version it contains,
    /// because the operator renders config for `productVersion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<String>,

    /// When the kubelet pulls the image. Defaults to `IfNotPresent`.
    #[serde(default)]
    pub pull_policy: PullPolicy,

    /// Secrets with credentials for private registries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_secrets: Option<Vec<LocalObjectReference>>,
}

/// The Kubernetes image pull policy, as a closed set so typos fail validation.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    Deserialize,
    Serialize,
    JsonSchema,
    PartialEq,
    Eq,
    strum::Display,
    strum::AsRefStr,
)]
pub enum PullPolicy {
    /// Pull only if the node does not have the image (Kubernetes' default for tags).
    #[default]
    IfNotPresent,
    /// Pull on every container start.
    Always,
    /// Never pull; the image must already be on the node.
    Never,
}

/// A [`ProductImage`] with every default applied, ready for a container spec.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedImage {
    /// The image reference for the container.
    pub image: String,
    /// The product version the operator renders config for (and reports in status).
    pub product_version: String,
    /// Pull policy for the container.
    pub pull_policy: PullPolicy,
    /// Pull secrets for the Pod.
    pub pull_secrets: Option<Vec<LocalObjectReference>>,
}

/// Why an image setting cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ImageError {
    /// The product version cannot be an image tag.
    #[error("productVersion {version:?} is not a valid image tag: {reason}")]
    InvalidProductVersion {
        /// The rejected version.
        version: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The custom image reference is unusable.
    #[error("custom image {image:?} is invalid: {reason}")]
    InvalidCustomImage {
        /// The rejected reference.
        image: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

impl ProductImage {
    /// Applies defaults: `<upstream_repository>:<productVersion>` unless a custom image is
    /// set, `default_version` when no version is given.
    ///
    /// Errors when the version is not a valid tag (empty, over 128 characters, or
    /// characters outside `[A-Za-z0-9_.-]`, or starting with `.` or `-`), or when the custom
    /// reference is empty or contains whitespace.
    pub fn resolve(
        &self,
        upstream_repository: &str,
        default_version: &str,
    ) -> Result<ResolvedImage, ImageError> {
        let product_version = self.product_version.as_deref().unwrap_or(default_version);
        validate_tag(product_version)?;
        let image = match &self.custom {
            Some(custom) => {
                validate_custom(custom)?;
                custom.clone()
            }
            None => format!("{upstream_repository}:{product_version}"),
        };
        Ok(ResolvedImage {
            image,
            product_version: product_version.to_owned(),
            pull_policy: self.pull_policy,
            pull_secrets: self.pull_secrets.clone(),
        })
    }
}

/// Checks the OCI tag grammar `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`.
fn validate_tag(version: &str) -> Result<(), ImageError> {
    let invalid = |reason| ImageError::InvalidProductVersion {
        version: version.to_owned(),
        reason,
    };
    let Some(first) = version.chars().next() else {
        return Err(invalid("it is empty"));
    };
    if version.len() > MAX_TAG_LENGTH {
        return Err(invalid("it is longer than 128 characters"));
    }
    if !(first.is_ascii_alphanumeric() || first == '_') {
        return Err(invalid("it must start with a letter, digit or '_'"));
    }
    if !version
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
    {
        return Err(invalid(
            "only letters, digits, '_', '.' and '-' are allowed",
        ));
    }
    Ok(())
}

/// Rejects custom references that can never be pulled.
fn validate_custom(image: &str) -> Result<(), ImageError> {
    let invalid = |reason| ImageError::InvalidCustomImage {
        image: image.to_owned(),
        reason,
    };
    if image.is_empty() {
        return Err(invalid("it is empty"));
    }
    if image.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid("it contains whitespace or control characters"));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use rstest::rstest;
    use serde_json::json;

    use super::*;

    fn image(version: Option<&str>, custom: Option<&str>) -> ProductImage {
        ProductImage {
            product_version: version.map(str::to_owned),
            custom: custom.map(str::to_owned),
            ..ProductImage::default()
        }
    }

    #[rstest]
    #[case::default_version(image(None, None), "zookeeper:3.9.3", "3.9.3")]
    #[case::user_version(image(Some("3.9.4"), None), "zookeeper:3.9.4", "3.9.4")]
    #[case::custom_keeps_default_version(
        image(None, Some("mirror.example/zk:x")),
        "mirror.example/zk:x",
        "3.9.3"
    )]
    #[case::custom_with_version(
        image(Some("3.8.4"), Some("mirror.example/zk@sha256:abc")),
        "mirror.example/zk@sha256:abc",
        "3.8.4"
    )]
    #[case::underscore_and_dashes(
        image(Some("_3.9.4-rc_1"), None),
        "zookeeper:_3.9.4-rc_1",
        "_3.9.4-rc_1"
    )]
    #[case::longest_tag(image(Some(&"9".repeat(128)), None), &format!("zookeeper:{}", "9".repeat(128)), &"9".repeat(128))]
    fn resolves(
        #[case] input: ProductImage,
        #[case] expected_image: &str,
        #[case] expected_version: &str,
    ) {
        let resolved = input.resolve("zookeeper", "3.9.3").unwrap();
        assert_eq!(resolved.image, expected_image);
        assert_eq!(resolved.product_version, expected_version);
    }

    #[rstest]
    #[case::empty_version(
        image(Some(""), None),
        "productVersion \"\" is not a valid image tag: it is empty"
    )]
    #[case::leading_dot(
        image(Some(".3"), None),
        "productVersion \".3\" is not a valid image tag: it must start with a letter, digit or '_'"
    )]
    #[case::leading_dash(
        image(Some("-3"), None),
        "productVersion \"-3\" is not a valid image tag: it must start with a letter, digit or '_'"
    )]
    #[case::plus_sign(
        image(Some("3.9.4+1"), None),
        "productVersion \"3.9.4+1\" is not a valid image tag: only letters, digits, '_', '.' and '-' are allowed"
    )]
    #[case::colon(
        image(Some("3:9"), None),
        "productVersion \"3:9\" is not a valid image tag: only letters, digits, '_', '.' and '-' are allowed"
    )]
    #[case::too_long(image(Some(&"9".repeat(129)), None), &format!("productVersion {:?} is not a valid image tag: it is longer than 128 characters", "9".repeat(129)))]
    #[case::empty_custom(image(None, Some("")), "custom image \"\" is invalid: it is empty")]
    #[case::custom_with_space(
        image(None, Some("zk :1")),
        "custom image \"zk :1\" is invalid: it contains whitespace or control characters"
    )]
    #[case::bad_version_with_custom(
        image(Some("a b"), Some("zk:1")),
        "productVersion \"a b\" is not a valid image tag: only letters, digits, '_', '.' and '-' are allowed"
    )]
    fn rejects(#[case] input: ProductImage, #[case] message: &str) {
        let error = input.resolve("zookeeper", "3.9.3").unwrap_err();
        assert_eq!(error.to_string(), message);
    }

    #[test]
    fn invalid_default_version_is_rejected_too() {
        assert!(image(None, None).resolve("zookeeper", "").is_err());
    }

    #[test]
    fn pull_settings_pass_through() {
        let input: ProductImage = serde_json::from_value(json!({
            "pullPolicy": "Always",
            "pullSecrets": [{"name": "registry"}]
        }))
        .unwrap();
        let resolved = input.resolve("trinodb/trino", "476").unwrap();
        assert_eq!(resolved.image, "trinodb/trino:476");
        assert_eq!(resolved.pull_policy, PullPolicy::Always);
        assert_eq!(resolved.pull_policy.to_string(), "Always");
        assert_eq!(
            resolved.pull_secrets,
            Some(vec![LocalObjectReference {
                name: "registry".to_owned()
            }])
        );
    }

    #[rstest]
    #[case::if_not_present("IfNotPresent", PullPolicy::IfNotPresent)]
    #[case::always("Always", PullPolicy::Always)]
    #[case::never("Never", PullPolicy::Never)]
    fn pull_policy_round_trips(#[case] text: &str, #[case] policy: PullPolicy) {
        assert_eq!(
            serde_json::from_value::<PullPolicy>(json!(text)).unwrap(),
            policy
        );
        assert_eq!(policy.as_ref(), text);
    }

    #[test]
    fn empty_object_is_the_default() {
        let parsed: ProductImage = serde_json::from_value(json!({})).unwrap();
        assert_eq!(parsed, ProductImage::default());
        assert_eq!(parsed.pull_policy, PullPolicy::IfNotPresent);
        assert!(serde_json::from_value::<PullPolicy>(json!("ifnotpresent")).is_err());
    }
}
