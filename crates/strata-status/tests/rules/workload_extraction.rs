//! How the three kinds are read into one observation.

use k8s_openapi::{
    api::apps::v1::{DaemonSet, Deployment, StatefulSet},
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use rstest::rstest;
use strata_status::{
    FailingContainer, PodObservation, PodPhase, WorkloadKind, WorkloadObservation,
};

use crate::fixtures::{Kind, VERSION, pod, waiting_init_pod, waiting_pod, with_version, workload};

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        ..ObjectMeta::default()
    }
}

#[rstest]
#[case::stateful_set_without_spec_defaults_to_one_replica(
    WorkloadObservation::from_stateful_set(&StatefulSet { metadata: meta("s"), ..StatefulSet::default() }, &[]),
    WorkloadKind::StatefulSet, 1)]
#[case::deployment_without_spec_defaults_to_one_replica(
    WorkloadObservation::from_deployment(&Deployment { metadata: meta("d"), ..Deployment::default() }, &[]),
    WorkloadKind::Deployment, 1)]
#[case::daemon_set_without_status_desires_nothing_yet(
    WorkloadObservation::from_daemon_set(&DaemonSet { metadata: meta("ds"), ..DaemonSet::default() }, &[]),
    WorkloadKind::DaemonSet, 0)]
fn missing_fields_use_kubernetes_defaults(
    #[case] observation: WorkloadObservation,
    #[case] kind: WorkloadKind,
    #[case] desired: i32,
) {
    assert_eq!(observation.kind, kind);
    assert_eq!(observation.desired_replicas, desired);
    assert_eq!(observation.available_replicas, 0);
    assert_eq!(observation.updated_replicas, 0);
    assert!(!observation.revision_changing);
}

#[rstest]
#[case::stateful_set(Kind::StatefulSet, WorkloadKind::StatefulSet)]
#[case::deployment(Kind::Deployment, WorkloadKind::Deployment)]
#[case::daemon_set(Kind::DaemonSet, WorkloadKind::DaemonSet)]
fn counts_come_from_the_kind_specific_fields(#[case] kind: Kind, #[case] expected: WorkloadKind) {
    let observation = workload(kind, 5, 4)
        .updated(3)
        .observed_generation(Some(1))
        .observe(&[]);
    assert_eq!(observation.kind, expected);
    assert_eq!(
        (
            observation.desired_replicas,
            observation.available_replicas,
            observation.updated_replicas
        ),
        (5, 4, 3)
    );
    assert_eq!(
        (observation.generation, observation.observed_generation),
        (Some(2), Some(1))
    );
}

#[test]
fn pods_are_sorted_by_name() {
    let observation = workload(Kind::Deployment, 3, 3).observe(&[
        pod("c", "Running"),
        pod("a", "Running"),
        pod("b", "Running"),
    ]);
    let names: Vec<&str> = observation.pods.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
}

#[rstest]
#[case::crash_loop_back_off("CrashLoopBackOff", true)]
#[case::image_pull_back_off("ImagePullBackOff", true)]
#[case::err_image_pull("ErrImagePull", true)]
#[case::create_container_config_error("CreateContainerConfigError", true)]
#[case::create_container_error("CreateContainerError", true)]
#[case::invalid_image_name("InvalidImageName", true)]
#[case::container_creating("ContainerCreating", false)]
#[case::pod_initializing("PodInitializing", false)]
fn waiting_reason_classification(#[case] reason: &str, #[case] failing: bool) {
    let main = PodObservation::from_pod(&waiting_pod("p", "Pending", reason));
    let init = PodObservation::from_pod(&waiting_init_pod("p", reason));
    assert_eq!(main.is_failing(), failing, "container {reason}");
    assert_eq!(init.is_failing(), failing, "init container {reason}");
}

#[test]
fn init_container_failure_is_recorded_as_init() {
    let observed = PodObservation::from_pod(&waiting_init_pod("p", "CrashLoopBackOff"));
    assert_eq!(
        observed.failing_containers,
        [FailingContainer {
            name: "init".to_owned(),
            init: true,
            reason: "CrashLoopBackOff".to_owned(),
            reported: None,
            config_error: None,
        }]
    );
    assert_eq!(observed.phase, PodPhase::Pending);
}

/// `waiting_init_pod` whose init container last stopped with `message`.
fn init_pod_that_said(message: &str) -> k8s_openapi::api::core::v1::Pod {
    use k8s_openapi::api::core::v1::{ContainerState, ContainerStateTerminated};
    let mut pod = waiting_init_pod("p", "CrashLoopBackOff");
    if let Some(init) = pod
        .status
        .as_mut()
        .and_then(|status| status.init_container_statuses.as_mut())
        .and_then(|statuses| statuses.first_mut())
    {
        init.last_state = Some(ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code: 1,
                message: Some(message.to_owned()),
                ..ContainerStateTerminated::default()
            }),
            ..ContainerState::default()
        });
    }
    pod
}

#[rstest]
#[case::reason_and_sentence(
    "PartialFormat\nThe name directory holds VERSION but no fsimage.\n",
    Some(("PartialFormat", "The name directory holds VERSION but no fsimage."))
)]
#[case::blanks_around_are_trimmed(" ClusterIdMismatch \n  ids differ  ", Some(("ClusterIdMismatch", "ids differ")))]
#[case::a_log_tail_is_no_reason("Exception in thread main\njava.lang.NullPointerException", None)]
#[case::a_reason_without_a_sentence("PartialFormat\n", None)]
#[case::one_line("PartialFormat", None)]
#[case::empty("", None)]
fn a_container_that_says_why_it_stopped_is_believed_only_in_the_contract_form(
    #[case] message: &str,
    #[case] expected: Option<(&str, &str)>,
) {
    let observed = PodObservation::from_pod(&init_pod_that_said(message));
    let reported = observed.failing_containers[0]
        .reported
        .as_ref()
        .map(|stop| (stop.reason.as_str(), stop.message.as_str()));
    assert_eq!(reported, expected);
}

#[rstest]
#[case::failed("Failed", PodPhase::Failed, true)]
#[case::running("Running", PodPhase::Running, false)]
#[case::succeeded("Succeeded", PodPhase::Succeeded, false)]
#[case::unknown("Unknown", PodPhase::Unknown, false)]
fn pod_phase_parsing(#[case] phase: &str, #[case] expected: PodPhase, #[case] failing: bool) {
    let observed = PodObservation::from_pod(&pod("p", phase));
    assert_eq!(observed.phase, expected);
    assert_eq!(observed.is_failing(), failing);
}

#[rstest]
#[case::labelled(Some(VERSION))]
#[case::unlabelled(None)]
fn version_label_is_read(#[case] version: Option<&str>) {
    let observed = PodObservation::from_pod(&with_version(pod("p", "Running"), version));
    assert_eq!(observed.version.as_deref(), version);
}

/// Only a RollingUpdate has a partition; a negative one (rejected by the API
/// server anyway) counts as none.
#[rstest]
#[case::no_update_strategy(workload(Kind::StatefulSet, 3, 3), 0)]
#[case::partition_on_default_strategy(workload(Kind::StatefulSet, 3, 3).partition(2), 2)]
#[case::partition_on_rolling_update(workload(Kind::StatefulSet, 3, 3).update_strategy("RollingUpdate").partition(1), 1)]
#[case::partition_ignored_on_delete(workload(Kind::StatefulSet, 3, 3).update_strategy("OnDelete").partition(1), 0)]
#[case::negative_partition_is_none(workload(Kind::StatefulSet, 3, 3).partition(-1), 0)]
#[case::deployment_has_no_partition(workload(Kind::Deployment, 3, 3).partition(1), 0)]
fn partition_is_read(#[case] workload: crate::fixtures::Workload, #[case] expected: i32) {
    assert_eq!(workload.observe(&[]).partition, expected);
}

#[rstest]
#[case::deadline_exceeded(workload(Kind::Deployment, 3, 3).deployment_progressing("False", "ProgressDeadlineExceeded"),
    Some("ReplicaSet \"simple-server-default-abc\" has timed out progressing."))]
#[case::deadline_exceeded_for_an_older_generation(
    workload(Kind::Deployment, 3, 3).observed_generation(Some(1)).deployment_progressing("False", "ProgressDeadlineExceeded"), None)]
#[case::progressing(workload(Kind::Deployment, 3, 3).deployment_progressing("True", "ReplicaSetUpdated"), None)]
#[case::no_conditions(workload(Kind::Deployment, 3, 3), None)]
#[case::stateful_set(workload(Kind::StatefulSet, 3, 3), None)]
fn progress_deadline_is_read(
    #[case] workload: crate::fixtures::Workload,
    #[case] expected: Option<&str>,
) {
    assert_eq!(
        workload.observe(&[]).progress_deadline_exceeded.as_deref(),
        expected
    );
}

#[test]
fn a_reported_stop_names_the_degraded_reason_instead_of_the_crash_loop() {
    let pods = vec![
        crate::fixtures::pod("pod-0", "Running"),
        init_pod_that_said("PartialFormat\nmove the name directory aside"),
    ];
    let assessment = workload(Kind::StatefulSet, 2, 1)
        .named("nn")
        .observe(&pods)
        .assess();
    assert_eq!(
        (
            assessment.degraded.status,
            assessment.degraded.reason.as_str()
        ),
        (strata_status::ConditionStatus::True, "PartialFormat")
    );
    assert!(
        assessment.degraded.message.contains(
            "p (init container init CrashLoopBackOff: PartialFormat: move the name directory aside)"
        ),
        "{}",
        assessment.degraded.message
    );
}

#[test]
fn a_container_config_error_says_what_is_missing() {
    use k8s_openapi::api::core::v1::{ContainerState, ContainerStateWaiting};
    let mut pod = waiting_pod("web-0", "Pending", "CreateContainerConfigError");
    if let Some(container) = pod
        .status
        .as_mut()
        .and_then(|status| status.container_statuses.as_mut())
        .and_then(|statuses| statuses.first_mut())
    {
        container.state = Some(ContainerState {
            waiting: Some(ContainerStateWaiting {
                reason: Some("CreateContainerConfigError".to_owned()),
                message: Some("couldn't find key password in Secret default/db".to_owned()),
            }),
            ..ContainerState::default()
        });
    }
    let assessment = workload(Kind::StatefulSet, 1, 0)
        .named("web")
        .observe(&[pod])
        .assess();
    assert!(
        assessment.degraded.message.contains(
            "CreateContainerConfigError: couldn't find key password in Secret default/db"
        ),
        "{}",
        assessment.degraded.message
    );
}
