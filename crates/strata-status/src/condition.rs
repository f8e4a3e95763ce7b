//! The condition types of ADR027 and the stored condition shape.

use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::reason::Reason;

/// The six condition types of ADR027.
///
/// The declaration order is the display order (`Ord`): the four
/// OpenShift-inspired types first, then the two operational ones. Status
/// lists are sorted by it, so the stored status is stable between reconciles.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::Display,
    strum::EnumIter,
    strum::AsRefStr,
    strum::EnumString,
)]
pub enum ConditionType {
    /// The product has its desired replicas and serves requests.
    Available,
    /// The cluster is moving from one state to another (scaling, rolling out).
    Progressing,
    /// Something is wrong that lowers the quality of service or blocks the operator.
    Degraded,
    /// A product version change may start now.
    Upgradable,
    /// The operator does not reconcile the cluster by request.
    Paused,
    /// All replicas are set to 0 by request.
    Stopped,
    /// The spec is valid but unwise: it runs, with less safety than the user
    /// may think (one HDFS namenode, an even number of journalnodes). Not part
    /// of ADR027's six; the reason names the first warning, the message all.
    Warning,
}

/// The `type` of a stored condition: one of the six [`ConditionType`]s, or a
/// type this operator version does not know.
///
/// Unknown types come from a newer operator version that wrote its status
/// before a rollback. Reading them must not fail: one unknown entry would
/// make the whole custom resource undeserializable, and with it the watch of
/// every object of the kind. [`apply_updates`](crate::apply_updates) drops
/// them from the next status, because this operator does not own them and
/// cannot keep them up to date.
///
/// It serializes as the plain string, so known types keep the JSON shape of
/// [`ConditionType`]. Build it with `From<String>` (or deserialize it), which
/// turns a known name into [`Known`](Self::Known); `Other` never holds one of
/// the six names then.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum StoredConditionType {
    /// One of the condition types this operator computes.
    Known(ConditionType),
    /// A type this operator version does not know, exactly as stored.
    Other(String),
}

impl StoredConditionType {
    /// The known type, `None` for [`Other`](Self::Other).
    #[must_use]
    pub fn known(&self) -> Option<ConditionType> {
        match self {
            Self::Known(condition_type) => Some(*condition_type),
            Self::Other(_) => None,
        }
    }

    /// The type as written into the condition.
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            Self::Known(condition_type) => condition_type.as_ref(),
            Self::Other(name) => name,
        }
    }
}

impl From<ConditionType> for StoredConditionType {
    fn from(condition_type: ConditionType) -> Self {
        Self::Known(condition_type)
    }
}

impl From<String> for StoredConditionType {
    fn from(name: String) -> Self {
        name.parse().map_or(Self::Other(name), Self::Known)
    }
}

impl From<StoredConditionType> for String {
    fn from(condition_type: StoredConditionType) -> Self {
        match condition_type {
            StoredConditionType::Known(known) => known.to_string(),
            StoredConditionType::Other(name) => name,
        }
    }
}

impl fmt::Display for StoredConditionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<ConditionType> for StoredConditionType {
    fn eq(&self, other: &ConditionType) -> bool {
        self.known() == Some(*other)
    }
}

impl PartialEq<StoredConditionType> for ConditionType {
    fn eq(&self, other: &StoredConditionType) -> bool {
        other == self
    }
}

/// How conditions of one type from several sources (workloads) combine.
///
/// Each type has its own polarity; there is deliberately no single "worst
/// status wins" order, because True is good for Available and bad for
/// Degraded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregation {
    /// True only when every source is True (three-valued AND).
    All,
    /// True when any source is True (three-valued OR).
    Any,
}

impl ConditionType {
    /// The aggregation rule of this type, see [`Aggregation`].
    #[must_use]
    pub const fn aggregation(self) -> Aggregation {
        match self {
            Self::Available | Self::Upgradable => Aggregation::All,
            Self::Progressing | Self::Degraded | Self::Paused | Self::Stopped | Self::Warning => {
                Aggregation::Any
            }
        }
    }
}

/// The status of a condition, serialized exactly as Kubernetes expects.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::Display,
    strum::EnumIter,
    strum::AsRefStr,
)]
pub enum ConditionStatus {
    /// The condition holds.
    True,
    /// The condition does not hold.
    False,
    /// The operator cannot tell, for example because a node stopped reporting.
    Unknown,
}

impl From<bool> for ConditionStatus {
    fn from(value: bool) -> Self {
        if value { Self::True } else { Self::False }
    }
}

/// A condition as stored in a custom resource's status.
///
/// The field names follow `metav1.Condition` so `kubectl wait
/// --for=condition=Available` and generic tooling work.
// This doc comment becomes the CRD's description, so it holds no rustdoc
// links. `reason` is a plain string so that any stored value deserializes;
// new values are always produced from a validated `Reason`. `type` reads any
// string for the same reason (see `StoredConditionType`), but the schema
// keeps the enum of `ConditionType`: it says what this version writes, and
// Helm installs CRDs from `crds/`, which a rollback leaves at the newer
// version, so a newer operator's types stay valid for the API server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterCondition {
    /// Which aspect of the resource this condition describes.
    #[serde(rename = "type")]
    #[schemars(with = "ConditionType")]
    pub type_: StoredConditionType,
    /// Whether the condition holds.
    pub status: ConditionStatus,
    /// One CamelCase word for machines; always set (`AsExpected` when happy).
    #[serde(default)]
    pub reason: String,
    /// A sentence for humans.
    #[serde(default)]
    pub message: String,
    /// When `status` last changed (or the condition first appeared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// The `metadata.generation` this condition was computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// What a reconcile computes for one condition: no timestamps and no
/// generation, those are added by [`apply_updates`](crate::apply_updates).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionUpdate {
    /// The condition type this update sets.
    pub type_: ConditionType,
    /// The computed status.
    pub status: ConditionStatus,
    /// The computed reason.
    pub reason: Reason,
    /// The computed human sentence.
    pub message: String,
}

impl ConditionUpdate {
    /// Builds an update; a shorthand used by every rule in this crate.
    #[must_use]
    pub fn new(
        type_: ConditionType,
        status: ConditionStatus,
        reason: Reason,
        message: impl Into<String>,
    ) -> Self {
        Self {
            type_,
            status,
            reason,
            message: message.into(),
        }
    }

    /// True when the status is [`ConditionStatus::True`].
    #[must_use]
    pub fn is_true(&self) -> bool {
        self.status == ConditionStatus::True
    }

    /// True when the status is [`ConditionStatus::False`].
    #[must_use]
    pub fn is_false(&self) -> bool {
        self.status == ConditionStatus::False
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use k8s_openapi::jiff::Timestamp;
    use rstest::rstest;
    use strum::IntoEnumIterator;

    use super::*;

    #[test]
    fn display_order_follows_adr027() {
        let names: Vec<String> = ConditionType::iter().map(|t| t.to_string()).collect();
        assert_eq!(
            names,
            [
                "Available",
                "Progressing",
                "Degraded",
                "Upgradable",
                "Paused",
                "Stopped",
                "Warning"
            ]
        );
        let mut sorted: Vec<ConditionType> = ConditionType::iter().rev().collect();
        sorted.sort();
        assert_eq!(sorted, ConditionType::iter().collect::<Vec<_>>());
    }

    #[test]
    fn condition_serializes_like_metav1_condition() {
        let condition = ClusterCondition {
            type_: ConditionType::Available.into(),
            status: ConditionStatus::Unknown,
            reason: "PodPhaseUnknown".to_owned(),
            message: "Pod a has phase Unknown.".to_owned(),
            last_transition_time: Some(Time(Timestamp::from_second(1_700_000_000).unwrap())),
            observed_generation: Some(3),
        };
        let json = serde_json::to_value(&condition).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "type": "Available",
                "status": "Unknown",
                "reason": "PodPhaseUnknown",
                "message": "Pod a has phase Unknown.",
                "lastTransitionTime": "2023-11-14T22:13:20Z",
                "observedGeneration": 3,
            })
        );
        let back: ClusterCondition = serde_json::from_value(json).unwrap();
        assert_eq!(back, condition);
    }

    #[test]
    fn condition_without_optional_fields_deserializes() {
        let condition: ClusterCondition =
            serde_json::from_value(serde_json::json!({"type": "Paused", "status": "False"}))
                .unwrap();
        assert_eq!(condition.reason, "");
        assert_eq!(condition.last_transition_time, None);
    }

    #[rstest]
    #[case::available("Available", Some(ConditionType::Available))]
    #[case::stopped("Stopped", Some(ConditionType::Stopped))]
    #[case::unknown_type("Foo", None)]
    #[case::different_case("available", None)]
    #[case::empty("", None)]
    fn stored_type_reads_any_string_and_writes_it_back(
        #[case] name: &str,
        #[case] known: Option<ConditionType>,
    ) {
        let stored: StoredConditionType = serde_json::from_value(serde_json::json!(name)).unwrap();
        assert_eq!(stored.known(), known);
        assert_eq!(stored.as_str(), name);
        assert_eq!(stored.to_string(), name);
        assert_eq!(
            serde_json::to_value(&stored).unwrap(),
            serde_json::json!(name)
        );
        if known.is_none() {
            assert_eq!(stored, StoredConditionType::Other(name.to_owned()));
        }
    }

    #[test]
    fn stored_type_compares_with_condition_type() {
        let available = StoredConditionType::from(ConditionType::Available);
        assert_eq!(available, ConditionType::Available);
        assert_eq!(ConditionType::Available, available);
        assert_ne!(available, ConditionType::Degraded);
        assert_ne!(
            StoredConditionType::Other("Foo".to_owned()),
            ConditionType::Available
        );
        assert_eq!(StoredConditionType::from("Available".to_owned()), available);
    }

    #[test]
    fn condition_of_unknown_type_round_trips() {
        let json = serde_json::json!({
            "type": "Foo",
            "status": "True",
            "reason": "Newer",
            "message": "Written by a newer operator.",
            "lastTransitionTime": "2023-11-14T22:13:20Z",
        });
        let condition: ClusterCondition = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(
            condition.type_,
            StoredConditionType::Other("Foo".to_owned())
        );
        assert_eq!(serde_json::to_value(&condition).unwrap(), json);
    }

    #[test]
    fn type_parses_from_its_display_name() {
        for condition_type in ConditionType::iter() {
            let parsed: ConditionType = condition_type.as_ref().parse().unwrap();
            assert_eq!(parsed, condition_type);
        }
    }
}
