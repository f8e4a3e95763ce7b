//! Roles and role groups: the shape every Strata cluster spec shares.
//!
//! A product has roles (ZooKeeper `servers`, HDFS `dataNodes`, ...). Each role holds
//! settings for all of its Pods and one or more role groups, each of which becomes one
//! StatefulSet. Settings can be given at role and at role group level; the role group
//! wins, field by field (see [`Role::merged_role_groups`]).
//!
//! ```yaml
//! servers:
//!   config: {...}            # C, merged field by field
//!   configOverrides:         # file name -> key -> value
//!     zoo.cfg: {tickTime: "3000"}
//!   envOverrides: {JVM_OPTS: "-Xmx1g"}
//!   podOverrides: {...}      # a PodTemplateSpec, deep-merged
//!   roleConfig:              # role-only settings, never per role group
//!     podDisruptionBudget: {enabled: true, maxUnavailable: 1}
//!   roleGroups:
//!     default:
//!       replicas: 3
//!       config: {...}
//! ```

use std::collections::BTreeMap;

use crate::pdb::PdbConfig;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

use crate::merge::Merge;

/// Replicas of a role group whose `replicas` field is absent.
///
/// One Pod is the least surprising choice: the group exists, so the user wants it to run,
/// and scaling up is explicit.
pub const DEFAULT_REPLICAS: u16 = 1;

/// Per config file (e.g. `zoo.cfg`), the properties to set after the operator rendered
/// the file. They win over everything the operator computes.
///
/// This untyped map is the default; product operators use a struct with one field per
/// file they render ([`FileOverrides`] per field), with `deny_unknown_fields`, so the
/// CRD schema lists the files and the API server refuses a file the product does not
/// have, instead of the operator finding out later.
pub type ConfigOverrides = BTreeMap<String, BTreeMap<String, String>>;

/// The overrides of one file: key to value, merged per key (role group wins).
pub type FileOverrides = BTreeMap<String, String>;

/// Environment variables to set on the product container, winning over the operator's.
pub type EnvOverrides = BTreeMap<String, String>;

/// One role of a product cluster.
///
/// `C` is the product's config fragment: a struct of `Option` fields implementing
/// [`Merge`], each with `#[serde(skip_serializing_if = "Option::is_none")]` so the schema
/// default of `config` is `{}` rather than an object full of nulls. `RC` holds settings
/// that only make sense once per role, such as the PodDisruptionBudget (ADR030 option 1).
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(
    bound = "C: JsonSchema + Default + Serialize, RC: JsonSchema + Default + Serialize, O: JsonSchema + Default + Serialize",
    description = "A role: settings shared by all of its role groups, role-wide settings, and the role groups."
)]
pub struct Role<C, RC = GenericRoleConfig, O = ConfigOverrides> {
    /// Product settings for every role group of this role.
    #[serde(default)]
    pub config: C,

    /// Per config file, properties that override the rendered file for every role group.
    #[serde(default)]
    pub config_overrides: O,

    /// Environment variables for the product container of every role group.
    #[serde(default)]
    pub env_overrides: EnvOverrides,

    /// A partial Pod template deep-merged over the generated one, for every role group.
    /// Containers merge by name. Not validated by the operator: the API server validates
    /// the resulting StatefulSet.
    // Boxed: a PodTemplateSpec is 1.8 KB even when empty, and every cached custom
    // resource would carry it inline, per role and per role group.
    #[serde(default)]
    #[schemars(schema_with = "pod_overrides_schema")]
    pub pod_overrides: Box<PodTemplateSpec>,

    /// Settings that apply to the role as a whole and cannot be set per role group.
    #[serde(default)]
    pub role_config: RC,

    /// The role groups of this role, by name. Each becomes one StatefulSet.
    pub role_groups: BTreeMap<String, RoleGroup<C, O>>,
}

/// One role group: a set of identically configured Pods (one StatefulSet).
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(
    bound = "C: JsonSchema + Default + Serialize, O: JsonSchema + Default + Serialize",
    description = "A role group: identically configured Pods, run as one StatefulSet."
)]
pub struct RoleGroup<C, O = ConfigOverrides> {
    /// Number of Pods; defaults to 1 ([`DEFAULT_REPLICAS`]).
    #[schemars(description = "Number of Pods. Defaults to 1.")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<u16>,

    /// Product settings for this role group; unset fields come from the role.
    #[serde(default)]
    pub config: C,

    /// Per config file, properties that override the rendered file; wins over the role's.
    #[serde(default)]
    pub config_overrides: O,

    /// Environment variables for the product container; win over the role's.
    #[serde(default)]
    pub env_overrides: EnvOverrides,

    /// A partial Pod template deep-merged over the role's and the generated one.
    // Boxed, as the role's: role groups sit in a map whose nodes hold eleven inline.
    #[serde(default)]
    #[schemars(schema_with = "pod_overrides_schema")]
    pub pod_overrides: Box<PodTemplateSpec>,
}

/// Role-level settings shared by every product (`spec.<role>.roleConfig`).
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct GenericRoleConfig {
    /// The PodDisruptionBudget the operator maintains for this role.
    #[serde(default)]
    pub pod_disruption_budget: PdbConfig,
}

/// A role group with every layer applied: what the build step renders from.
#[derive(Clone, Debug, PartialEq)]
pub struct MergedRoleGroup<C, O = ConfigOverrides> {
    /// The role group's name, the key in `roleGroups`.
    pub name: String,
    /// Replicas, [`DEFAULT_REPLICAS`] when the user gave none.
    pub replicas: u16,
    /// Product default < role < role group, field by field.
    pub config: C,
    /// Role < role group, per file and per key.
    pub config_overrides: O,
    /// Role < role group, per variable.
    pub env_overrides: EnvOverrides,
    /// Role < role group, by Kubernetes' deep merge.
    pub pod_overrides: PodTemplateSpec,
}

impl<C: Merge + Clone, RC, O: Merge + Clone> Role<C, RC, O> {
    /// Every role group with the role's settings and the product defaults merged in.
    ///
    /// Precedence, lowest first: `product_defaults`, the role, the role group. Each field
    /// is resolved on its own, so a role group overriding one setting keeps the role's
    /// other settings. Overrides have no product layer: they exist to beat the operator.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use strata_model::role::{Role, RoleGroup};
    ///
    /// #[derive(Clone, Debug, Default, PartialEq)]
    /// struct Config { tick_time: Option<u32>, init_limit: Option<u32> }
    /// strata_model::merge_struct!(Config { tick_time, init_limit });
    ///
    /// let role: Role<Config> = Role {
    ///     config: Config { tick_time: Some(3000), init_limit: None },
    ///     role_groups: BTreeMap::from([(
    ///         "default".to_owned(),
    ///         RoleGroup { config: Config { init_limit: Some(10), ..Default::default() }, ..Default::default() },
    ///     )]),
    ///     ..Default::default()
    /// };
    /// let defaults = Config { tick_time: Some(2000), init_limit: Some(5) };
    /// let merged = role.merged_role_groups(&defaults);
    /// assert_eq!(merged["default"].config, Config { tick_time: Some(3000), init_limit: Some(10) });
    /// assert_eq!(merged["default"].replicas, 1);
    /// ```
    pub fn merged_role_groups(
        &self,
        product_defaults: &C,
    ) -> BTreeMap<String, MergedRoleGroup<C, O>> {
        self.role_groups
            .iter()
            .map(|(name, group)| {
                (
                    name.clone(),
                    self.merge_role_group(name, group, product_defaults),
                )
            })
            .collect()
    }

    /// Applies the role and the product defaults under one role group.
    fn merge_role_group(
        &self,
        name: &str,
        group: &RoleGroup<C, O>,
        product_defaults: &C,
    ) -> MergedRoleGroup<C, O> {
        let mut config = group.config.clone();
        config.merge_from(&self.config);
        config.merge_from(product_defaults);

        let mut config_overrides = group.config_overrides.clone();
        config_overrides.merge_from(&self.config_overrides);

        let mut env_overrides = group.env_overrides.clone();
        env_overrides.merge_from(&self.env_overrides);

        let mut pod_overrides = PodTemplateSpec::clone(&group.pod_overrides);
        pod_overrides.merge_from(&self.pod_overrides);

        MergedRoleGroup {
            name: name.to_owned(),
            replicas: group.replicas.unwrap_or(DEFAULT_REPLICAS),
            config,
            config_overrides,
            env_overrides,
            pod_overrides,
        }
    }
}

/// Schema for `podOverrides`: any object, kept as given.
///
/// Inlining the full PodTemplateSpec schema would add hundreds of kilobytes to every
/// CRD, twice per role, and push CRDs towards the API server's size limits. The API server
/// still validates the merged template when the StatefulSet is applied.
fn pod_overrides_schema(_generator: &mut SchemaGenerator) -> Schema {
    let mut schema = serde_json::Map::new();
    schema.insert("type".to_owned(), "object".into());
    schema.insert(
        "x-kubernetes-preserve-unknown-fields".to_owned(),
        true.into(),
    );
    Schema::from(schema)
}

#[cfg(test)]
mod tests;
