//! `spec.clusterOperation`: the user's switches for pausing and stopping a cluster.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `spec.clusterOperation`, in the same place in every Strata cluster kind.
///
/// - `reconciliationPaused: true` freezes the cluster as it is: the operator stops
///   changing its objects (useful for manual maintenance).
/// - `stopped: true` scales every workload to zero while keeping config, Services and
///   PersistentVolumeClaims, so starting again resumes with the same data.
///
/// Both default to `false`. How they combine with the `operator-command` annotation and
/// into the `Paused`/`Stopped` conditions is decided by the status layer.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterOperation {
    /// Stop reconciling: the operator leaves all objects of this cluster unchanged.
    #[serde(default)]
    pub reconciliation_paused: bool,

    /// Scale all workloads of this cluster to zero Pods; data volumes are kept.
    #[serde(default)]
    pub stopped: bool,
}

impl ClusterOperation {
    /// The effective operation: these spec switches combined with the
    /// ADR027 `operator-command` annotation (either one switches an operation
    /// on), as the status layer documents.
    pub fn state(
        &self,
        annotations: &std::collections::BTreeMap<String, String>,
    ) -> strata_status::OperationState {
        strata_status::OperationState::resolve(
            self.reconciliation_paused,
            self.stopped,
            annotations,
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use rstest::rstest;
    use serde_json::{Value, json};

    use super::*;

    #[rstest]
    #[case::empty(json!({}), false, false)]
    #[case::paused(json!({"reconciliationPaused": true}), true, false)]
    #[case::stopped(json!({"stopped": true}), false, true)]
    #[case::both(json!({"reconciliationPaused": true, "stopped": true}), true, true)]
    fn deserializes(#[case] value: Value, #[case] paused: bool, #[case] stopped: bool) {
        let operation: ClusterOperation = serde_json::from_value(value).unwrap();
        assert_eq!(
            operation,
            ClusterOperation {
                reconciliation_paused: paused,
                stopped
            }
        );
    }

    #[test]
    fn default_is_running() {
        assert_eq!(
            ClusterOperation::default(),
            ClusterOperation {
                reconciliation_paused: false,
                stopped: false
            }
        );
        assert_eq!(
            serde_json::to_value(ClusterOperation::default()).unwrap(),
            json!({"reconciliationPaused": false, "stopped": false})
        );
    }
}
