//! What the StatefulSet controller, the kubelet and the volume provisioner would do, from
//! the shared test support, plus the claims still stored.

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
pub use strata_testing::workloads::{
    PodState, create_claims, run_group, set_pod, set_stateful_set_status,
};

use super::Harness;

/// Names of the claims still stored in the test namespace.
pub fn stored_claims(harness: &Harness) -> Vec<String> {
    super::stored_names::<PersistentVolumeClaim>(harness)
        .into_iter()
        .collect()
}
