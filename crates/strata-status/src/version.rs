//! The deployed product version (seed 003: report a new version only once
//! it runs everywhere).
//!
//! `status.deployedProductVersion` moves to the desired version only when
//! **all** of these hold:
//!
//! - at least one workload and at least one pod exist (an empty or stopped
//!   cluster runs nothing, so it proves nothing);
//! - no workload has a rollout in progress
//!   ([`WorkloadObservation::rollout_in_progress`]);
//! - every workload has at least its desired number of pods;
//! - every pod of every workload carries the label
//!   [`VERSION_LABEL`](crate::VERSION_LABEL) equal to the desired version
//!   (a terminating old pod still counts: it still runs the old version).
//!
//! Otherwise the previous value is kept (`None` on a first deployment that
//! has not finished). Availability is not required: a version that is fully
//! rolled out but crash-looping is deployed, and Available/Degraded say it
//! does not work.

use crate::workload::WorkloadObservation;

/// The deployed product version after this reconcile, see the
/// module docs.
#[must_use]
pub fn next_deployed_version(
    previous: Option<&str>,
    desired: &str,
    workloads: &[WorkloadObservation],
) -> Option<String> {
    if fully_rolled_out(desired, workloads) {
        Some(desired.to_owned())
    } else {
        previous.map(str::to_owned)
    }
}

fn fully_rolled_out(desired: &str, workloads: &[WorkloadObservation]) -> bool {
    let any_pod = workloads.iter().any(|w| !w.pods.is_empty());
    any_pod
        && workloads.iter().all(|workload| {
            workload.rollout_in_progress().is_none()
                && usize::try_from(workload.desired_replicas)
                    .is_ok_and(|desired_pods| workload.pods.len() >= desired_pods)
                && workload
                    .pods
                    .iter()
                    .all(|pod| pod.version.as_deref() == Some(desired))
        })
}
