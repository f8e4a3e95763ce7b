//! The deployed product version moves only after a full rollout.

use k8s_openapi::api::core::v1::Pod;
use rstest::rstest;
use strata_status::{WorkloadObservation, next_deployed_version};

use crate::fixtures::{Kind, Workload, pod, running, with_version, workload};

const OLD: &str = "3.8.4";
const NEW: &str = "3.9.3";

fn at_version(pods: Vec<Pod>, version: &str) -> Vec<Pod> {
    pods.into_iter()
        .map(|p| with_version(p, Some(version)))
        .collect()
}

fn observe(workload: Workload, pods: Vec<Pod>) -> WorkloadObservation {
    workload.observe(&pods)
}

#[rstest]
#[case::first_deploy_done(None, vec![observe(workload(Kind::StatefulSet, 3, 3), at_version(running(3), NEW))], Some(NEW))]
#[case::first_deploy_not_done_keeps_none(None, vec![observe(workload(Kind::StatefulSet, 3, 1).updated(1), at_version(running(1), NEW))], None)]
#[case::upgrade_done_moves(Some(OLD), vec![observe(workload(Kind::StatefulSet, 3, 3), at_version(running(3), NEW))], Some(NEW))]
#[case::mixed_versions_keep_previous(Some(OLD), vec![observe(workload(Kind::StatefulSet, 3, 3), vec![
    with_version(pod("a", "Running"), Some(NEW)), with_version(pod("b", "Running"), Some(NEW)), with_version(pod("c", "Running"), Some(OLD))])], Some(OLD))]
#[case::unlabelled_pod_keeps_previous(Some(OLD), vec![observe(workload(Kind::StatefulSet, 2, 2), vec![
    with_version(pod("a", "Running"), Some(NEW)), with_version(pod("b", "Running"), None)])], Some(OLD))]
#[case::rollout_in_progress_keeps_previous(Some(OLD), vec![observe(workload(Kind::StatefulSet, 3, 3).revisions("r1", "r2"), at_version(running(3), NEW))], Some(OLD))]
#[case::observed_generation_behind_keeps_previous(Some(OLD), vec![observe(workload(Kind::Deployment, 3, 3).observed_generation(Some(1)), at_version(running(3), NEW))], Some(OLD))]
#[case::missing_replica_keeps_previous(Some(OLD), vec![observe(workload(Kind::StatefulSet, 3, 2), at_version(running(2), NEW))], Some(OLD))]
#[case::one_workload_behind_keeps_previous(Some(OLD), vec![
    observe(workload(Kind::StatefulSet, 2, 2).named("a"), at_version(running(2), NEW)),
    observe(workload(Kind::DaemonSet, 2, 2).named("b"), at_version(running(2), OLD))], Some(OLD))]
#[case::all_kinds_done_moves(Some(OLD), vec![
    observe(workload(Kind::StatefulSet, 2, 2).named("a"), at_version(running(2), NEW)),
    observe(workload(Kind::Deployment, 1, 1).named("b"), at_version(running(1), NEW)),
    observe(workload(Kind::DaemonSet, 3, 3).named("c"), at_version(running(3), NEW))], Some(NEW))]
#[case::partitioned_rollout_done_with_old_pods_below_partition_keeps_previous(Some(OLD), vec![
    observe(workload(Kind::StatefulSet, 3, 3).partition(1).updated(2).revisions("r1", "r2"), vec![
    with_version(pod("a-0", "Running"), Some(OLD)), with_version(pod("a-1", "Running"), Some(NEW)), with_version(pod("a-2", "Running"), Some(NEW))])], Some(OLD))]
#[case::partition_left_after_full_rollout_moves(Some(OLD), vec![
    observe(workload(Kind::StatefulSet, 3, 3).partition(1), at_version(running(3), NEW))], Some(NEW))]
#[case::no_workloads_keeps_previous(Some(OLD), vec![], Some(OLD))]
#[case::stopped_cluster_keeps_previous(Some(OLD), vec![observe(workload(Kind::StatefulSet, 0, 0), vec![])], Some(OLD))]
#[case::stopping_cluster_with_old_pods_keeps_previous(Some(OLD), vec![observe(workload(Kind::StatefulSet, 0, 0), at_version(running(2), OLD))], Some(OLD))]
#[case::crash_looping_new_version_is_deployed(Some(OLD), vec![observe(workload(Kind::StatefulSet, 1, 0), vec![
    with_version(crate::fixtures::waiting_pod("a", "Running", "CrashLoopBackOff"), Some(NEW))])], Some(NEW))]
fn deployed_version(
    #[case] previous: Option<&str>,
    #[case] workloads: Vec<WorkloadObservation>,
    #[case] expected: Option<&str>,
) {
    assert_eq!(
        next_deployed_version(previous, NEW, &workloads).as_deref(),
        expected
    );
}
