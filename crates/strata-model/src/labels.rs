//! The Kubernetes recommended labels on every object Strata creates.
//!
//! | key | value | on |
//! | --- | --- | --- |
//! | `app.kubernetes.io/name` | product, e.g. `zookeeper` | all objects |
//! | `app.kubernetes.io/instance` | cluster object name, e.g. `simple-zk` | all objects |
//! | `app.kubernetes.io/component` | role, e.g. `server` | role and role group objects |
//! | `app.kubernetes.io/role-group` | role group, e.g. `default` | role group objects |
//! | `app.kubernetes.io/managed-by` | operator name, e.g. `zookeeper-operator` | all objects |
//! | `app.kubernetes.io/version` | product version, e.g. `3.9.4` (sanitised) | all objects |
//!
//! Selectors use only the identifying subset (name, instance and, as applicable,
//! component and role group): the version changes on upgrade and a selector of a
//! StatefulSet is immutable, so it must never contain the version.

use std::collections::BTreeMap;

/// Label key for the product name.
pub const NAME_LABEL: &str = "app.kubernetes.io/name";
/// Label key for the cluster object's name.
pub const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
/// Label key for the role.
pub const COMPONENT_LABEL: &str = "app.kubernetes.io/component";
/// Label key for the role group.
pub const ROLE_GROUP_LABEL: &str = "app.kubernetes.io/role-group";
/// Label key for the managing operator; the apply step finds its objects by it.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Label key for the product version.
pub const VERSION_LABEL: &str = "app.kubernetes.io/version";

/// Kubernetes' maximum length of a label value.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;

/// A label value Kubernetes would reject.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LabelError {
    /// `value` cannot be the value of label `key`.
    #[error("value {value:?} of label {key} is invalid: {reason}")]
    InvalidValue {
        /// The label key.
        key: String,
        /// The rejected value.
        value: String,
        /// The rule it breaks.
        reason: &'static str,
    },
}

/// Checks `value` against Kubernetes' label value rules: at most 63 characters, empty or
/// matching `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`. The error names `key`.
pub fn validate_label_value(key: &str, value: &str) -> Result<(), LabelError> {
    let invalid = |reason| LabelError::InvalidValue {
        key: key.to_owned(),
        value: value.to_owned(),
        reason,
    };
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        return Err(invalid("it is longer than 63 characters"));
    }
    if !value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(invalid(
            "only letters, digits, '-', '_' and '.' are allowed",
        ));
    }
    let starts_and_ends_alphanumeric = |v: &str| {
        v.chars().next().is_none_or(|c| c.is_ascii_alphanumeric())
            && v.chars().last().is_none_or(|c| c.is_ascii_alphanumeric())
    };
    if !starts_and_ends_alphanumeric(value) {
        return Err(invalid("it must start and end with a letter or digit"));
    }
    Ok(())
}

/// Turns a product version into a label value: characters a label cannot hold become
/// `-`, the result is cut to 63 characters and stripped of leading and trailing
/// non-alphanumerics. `3.9.4` stays `3.9.4`; `3.9.4+build.7` becomes `3.9.4-build.7`.
pub fn sanitize_version(product_version: &str) -> String {
    let replaced: String = product_version
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(LABEL_VALUE_MAX_LENGTH)
        .collect();
    replaced
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_owned()
}

/// The recommended labels of one scope: the whole cluster, one role or one role group.
///
/// Build the cluster scope once with [`RecommendedLabels::new`], then derive role and
/// role group scopes from it; every value is validated on the way in, so
/// [`labels`](Self::labels) and [`selector`](Self::selector) cannot fail.
///
/// ```
/// use strata_model::labels::RecommendedLabels;
///
/// let cluster = RecommendedLabels::new("zookeeper", "simple-zk", "zookeeper-operator", "3.9.4").unwrap();
/// let group = cluster.for_role_group("server", "default").unwrap();
/// assert_eq!(group.selector().len(), 4);
/// assert_eq!(group.labels()["app.kubernetes.io/managed-by"], "zookeeper-operator");
/// assert_eq!(group.labels()["app.kubernetes.io/version"], "3.9.4");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecommendedLabels {
    app_name: String,
    instance: String,
    component: Option<String>,
    role_group: Option<String>,
    managed_by: String,
    version: String,
}

impl RecommendedLabels {
    /// Cluster-scoped labels.
    ///
    /// `operator_name` becomes `app.kubernetes.io/managed-by`; by convention it is
    /// `<product>-operator` (e.g. `zookeeper-operator`), the same name the operator uses
    /// as its server-side apply field manager. `product_version` is sanitised with
    /// [`sanitize_version`] before validation.
    pub fn new(
        app_name: &str,
        instance: &str,
        operator_name: &str,
        product_version: &str,
    ) -> Result<Self, LabelError> {
        let version = sanitize_version(product_version);
        validate_non_empty(NAME_LABEL, app_name)?;
        validate_non_empty(INSTANCE_LABEL, instance)?;
        validate_non_empty(MANAGED_BY_LABEL, operator_name)?;
        validate_non_empty(VERSION_LABEL, &version)?;
        Ok(Self {
            app_name: app_name.to_owned(),
            instance: instance.to_owned(),
            component: None,
            role_group: None,
            managed_by: operator_name.to_owned(),
            version,
        })
    }

    /// Labels for objects of one role (e.g. its PodDisruptionBudget).
    pub fn for_role(&self, component: &str) -> Result<Self, LabelError> {
        validate_non_empty(COMPONENT_LABEL, component)?;
        Ok(Self {
            component: Some(component.to_owned()),
            role_group: None,
            ..self.clone()
        })
    }

    /// Labels for objects of one role group (its StatefulSet, Pods, ConfigMap, Service).
    pub fn for_role_group(&self, component: &str, role_group: &str) -> Result<Self, LabelError> {
        validate_non_empty(ROLE_GROUP_LABEL, role_group)?;
        Ok(Self {
            role_group: Some(role_group.to_owned()),
            ..self.for_role(component)?
        })
    }

    /// The identifying labels, for selectors: name, instance and, as scoped, component
    /// and role group.
    pub fn selector(&self) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::from([
            (NAME_LABEL.to_owned(), self.app_name.clone()),
            (INSTANCE_LABEL.to_owned(), self.instance.clone()),
        ]);
        if let Some(component) = &self.component {
            labels.insert(COMPONENT_LABEL.to_owned(), component.clone());
        }
        if let Some(role_group) = &self.role_group {
            labels.insert(ROLE_GROUP_LABEL.to_owned(), role_group.clone());
        }
        labels
    }

    /// `app.kubernetes.io/name`: the product.
    pub fn app_name(&self) -> &str {
        &self.app_name
    }

    /// All recommended labels, for object metadata: the selector plus managed-by and
    /// version.
    pub fn labels(&self) -> BTreeMap<String, String> {
        let mut labels = self.selector();
        labels.insert(MANAGED_BY_LABEL.to_owned(), self.managed_by.clone());
        labels.insert(VERSION_LABEL.to_owned(), self.version.clone());
        labels
    }
}

/// Like [`validate_label_value`], but an empty value is an error too: every recommended
/// label Strata sets must identify something.
fn validate_non_empty(key: &str, value: &str) -> Result<(), LabelError> {
    if value.is_empty() {
        return Err(LabelError::InvalidValue {
            key: key.to_owned(),
            value: String::new(),
            reason: "it is empty",
        });
    }
    validate_label_value(key, value)
}

#[cfg(test)]
mod tests;
