//! Status structs that custom resources embed, and the steady-state check.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    condition::{ClusterCondition, ConditionType, ConditionUpdate},
    transition::apply_updates,
};

/// The status of a cluster resource (`ZookeeperCluster`, `TrinoCluster`, ...).
// `P` holds what a product adds to the shared fields, such as the HDFS cluster
// ID; its fields appear next to the shared ones. Products with nothing to add
// use the default, `NoProductStatus`. (A comment, not documentation: the
// documentation becomes the CRD's description users read.)
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus<P = NoProductStatus> {
    /// The ADR027 conditions, sorted by type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ClusterCondition>,
    /// The `metadata.generation` this status was computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The product version that runs on every pod (ADR027). It moves to a new
    /// version only once every pod runs that version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployed_product_version: Option<String>,
    /// The product's own fields.
    #[serde(flatten)]
    pub product: P,
}

/// The product part of a [`ClusterStatus`] for products that add nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NoProductStatus {}

/// The status of a sub-resource (`ZookeeperZnode`, `TrinoCatalog`, ...):
/// conditions without a product version.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceStatus {
    /// The conditions that apply to the sub-resource, sorted by type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ClusterCondition>,
    /// The `metadata.generation` this status was computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// Finds a condition by type in a stored list.
#[must_use]
pub fn find_condition(
    conditions: &[ClusterCondition],
    condition_type: ConditionType,
) -> Option<&ClusterCondition> {
    conditions.iter().find(|c| c.type_ == condition_type)
}

impl<P: Clone + Default> ClusterStatus<P> {
    /// The next status: `updates` applied on top of the stored conditions,
    /// stamped with `generation`, and the given deployed version. Stored
    /// conditions of types this operator does not know are dropped (see
    /// [`apply_updates`]), so the next write removes them. The product part
    /// is kept as stored; the product's reconcile replaces it.
    #[must_use]
    pub fn next(
        stored: Option<&Self>,
        updates: impl IntoIterator<Item = ConditionUpdate>,
        now: Time,
        generation: Option<i64>,
        deployed_product_version: Option<String>,
    ) -> Self {
        let previous = stored.map_or(&[][..], |s| s.conditions.as_slice());
        Self {
            conditions: apply_updates(previous, updates, now, generation),
            observed_generation: generation,
            deployed_product_version,
            product: stored.map(|s| s.product.clone()).unwrap_or_default(),
        }
    }
}

impl<P> ClusterStatus<P> {
    /// The stored condition of a type.
    #[must_use]
    pub fn condition(&self, condition_type: ConditionType) -> Option<&ClusterCondition> {
        find_condition(&self.conditions, condition_type)
    }
}

impl ResourceStatus {
    /// The next status: `updates` applied on top of the stored conditions;
    /// conditions of unknown types are dropped as in [`ClusterStatus::next`].
    #[must_use]
    pub fn next(
        stored: Option<&Self>,
        updates: impl IntoIterator<Item = ConditionUpdate>,
        now: Time,
        generation: Option<i64>,
    ) -> Self {
        let previous = stored.map_or(&[][..], |s| s.conditions.as_slice());
        Self {
            conditions: apply_updates(previous, updates, now, generation),
            observed_generation: generation,
        }
    }

    /// The stored condition of a type.
    #[must_use]
    pub fn condition(&self, condition_type: ConditionType) -> Option<&ClusterCondition> {
        find_condition(&self.conditions, condition_type)
    }
}

/// Whether a status write is needed: only when the computed value differs
/// from the stored one (or nothing is stored). In steady state this is
/// false, so a reconcile that changes nothing writes nothing.
#[must_use]
pub fn needs_write<T: PartialEq>(stored: Option<&T>, computed: &T) -> bool {
    stored != Some(computed)
}
