//! The pod runner's pure rules, as the kubelet has them: `$(VAR)` expansion, the
//! command line, who a container runs as, probe defaults and named ports, the pods of
//! a StatefulSet, the API status of a pod, and the atomic layout of projected volumes.
//! No root needed.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use rstest::rstest;
use serde_json::json;
use strata_pod_runner::env::{command_line, expand};
use strata_pod_runner::image::{Image, Manifest};
use strata_pod_runner::launch::Credentials;
use strata_pod_runner::probe::{Check, ProbeSpec, port};
use strata_pod_runner::spec::credentials;
use strata_pod_runner::statefulset;
use strata_pod_runner::status::{ContainerStatus, PodStatus, State};
use strata_pod_runner::volume::{Sources, VolumeRoots, prepare, refresh};

fn env() -> Vec<(String, String)> {
    vec![
        ("A".to_owned(), "1".to_owned()),
        ("B".to_owned(), "two".to_owned()),
    ]
}

#[rstest]
#[case::a_reference("$(A)", "1")]
#[case::two_references("$(A)-$(B)", "1-two")]
#[case::an_escaped_reference("$$(A)", "$(A)")]
#[case::an_unknown_reference_stays("$(MISSING)", "$(MISSING)")]
#[case::a_shell_variable_stays("$A and ${B}", "$A and ${B}")]
#[case::an_unclosed_reference_stays("$(A", "$(A")]
fn references_expand_as_the_kubelet_expands_them(#[case] text: &str, #[case] expected: &str) {
    assert_eq!(expand(text, &env()), expected);
}

fn container(mut value: serde_json::Value) -> Container {
    value["name"] = json!("main");
    serde_json::from_value(value).unwrap()
}

#[rstest]
#[case::command_and_args(json!({"command": ["run", "$(A)"], "args": ["--b=$(B)"]}), &["run", "1", "--b=two"])]
#[case::args_after_the_entrypoint(json!({"args": ["x"]}), &["entry", "x"])]
#[case::the_entrypoint_alone(json!({}), &["entry"])]
fn the_command_line_is_command_then_args(
    #[case] spec: serde_json::Value,
    #[case] expected: &[&str],
) {
    assert_eq!(
        command_line(&container(spec), &["entry".to_owned()], &env()),
        expected
    );
}

fn image() -> Image {
    Image {
        root: "/nonexistent".into(),
        manifest: Manifest {
            references: vec!["example:1".to_owned()],
            paths: Vec::new(),
            env: Vec::new(),
            working_dir: "/".into(),
            user: (1000, 100),
            entrypoint: Vec::new(),
        },
    }
}

#[rstest]
#[case::the_image_user(json!({}), json!({}), Credentials { uid: 1000, gid: 100, groups: vec![100] })]
#[case::the_pod_over_the_image(json!({"runAsUser": 2000, "runAsGroup": 3000, "fsGroup": 4000}), json!({}), Credentials { uid: 2000, gid: 3000, groups: vec![3000, 4000] })]
#[case::the_container_over_the_pod(json!({"runAsUser": 2000, "fsGroup": 100}), json!({"runAsUser": 5000}), Credentials { uid: 5000, gid: 100, groups: vec![100] })]
#[case::supplemental_groups(json!({"supplementalGroups": [7, 8]}), json!({}), Credentials { uid: 1000, gid: 100, groups: vec![100, 7, 8] })]
fn a_container_runs_as_its_own_then_the_pods_then_the_images_user(
    #[case] pod_context: serde_json::Value,
    #[case] container_context: serde_json::Value,
    #[case] expected: Credentials,
) {
    let pod: Pod =
        serde_json::from_value(json!({"spec": {"securityContext": pod_context, "containers": []}}))
            .unwrap();
    let container = container(json!({"securityContext": container_context}));
    assert_eq!(credentials(&pod, &container, &image()), expected);
}

#[rstest]
#[case::a_number(IntOrString::Int(8080), Ok(8080))]
#[case::a_name(IntOrString::String("http".to_owned()), Ok(9870))]
#[case::an_unknown_name(IntOrString::String("rpc".to_owned()), Err(()))]
fn probe_ports_are_numbers_or_names_of_the_containers_ports(
    #[case] given: IntOrString,
    #[case] expected: Result<u16, ()>,
) {
    let container = container(json!({"ports": [{"name": "http", "containerPort": 9870}]}));
    assert_eq!(port(&given, &container).map_err(drop), expected);
}

#[test]
fn a_probe_gets_the_kubelets_defaults() {
    let probe: Probe = serde_json::from_value(json!({"tcpSocket": {"port": 8020}})).unwrap();
    let spec = ProbeSpec::from_probe(&probe, &container(json!({}))).unwrap();
    assert_eq!(spec.check, Check::Tcp(8020));
    assert_eq!(
        (
            spec.period.as_secs(),
            spec.timeout.as_secs(),
            spec.success_threshold,
            spec.failure_threshold
        ),
        (10, 1, 1, 3)
    );
    let https: Probe =
        serde_json::from_value(json!({"httpGet": {"port": 443, "scheme": "HTTPS"}})).unwrap();
    assert!(
        ProbeSpec::from_probe(&https, &container(json!({}))).is_err(),
        "HTTPS probes are refused, not run as HTTP"
    );
}

#[test]
fn a_statefulsets_pods_are_named_and_claimed_as_the_controller_names_them() {
    let set: StatefulSet = serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {
            "replicas": 2,
            "serviceName": "web-headless",
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "main"}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}}]
        }
    }))
    .unwrap();
    let pods = statefulset::pods(&set);
    let names: Vec<_> = pods
        .iter()
        .map(|pod| pod.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["web-0", "web-1"]);
    let pod = &pods[1];
    let spec = pod.spec.as_ref().unwrap();
    assert_eq!(
        (spec.hostname.as_deref(), spec.subdomain.as_deref()),
        (Some("web-1"), Some("web-headless"))
    );
    assert_eq!(pod.metadata.namespace.as_deref(), Some("shop"));
    assert_eq!(
        pod.metadata
            .labels
            .as_ref()
            .unwrap()
            .get(statefulset::POD_NAME_LABEL)
            .map(String::as_str),
        Some("web-1")
    );
    let claim = spec.volumes.as_ref().unwrap()[0]
        .persistent_volume_claim
        .as_ref()
        .unwrap();
    assert_eq!(claim.claim_name, "data-web-1");
}

fn status(ready: [bool; 2], phase: &str) -> PodStatus {
    let container = |name: &str, ready: bool| ContainerStatus {
        ready,
        state: State::Running(Timestamp::UNIX_EPOCH),
        ..ContainerStatus::waiting(name, "example:1", "")
    };
    PodStatus {
        phase: phase.to_owned(),
        pod_ip: "10.244.0.2".to_owned(),
        init_containers: Vec::new(),
        containers: vec![container("a", ready[0]), container("b", ready[1])],
        started_at: Timestamp::UNIX_EPOCH,
        unrunnable: None,
    }
}

#[rstest]
#[case::every_container_ready([true, true], "Running", "True")]
#[case::one_container_not_ready([true, false], "Running", "False")]
#[case::a_failed_pod([true, true], "Failed", "False")]
fn a_pod_is_ready_when_it_runs_and_every_container_is(
    #[case] ready: [bool; 2],
    #[case] phase: &str,
    #[case] expected: &str,
) {
    let api = status(ready, phase).to_api("10.244.0.1");
    let conditions: BTreeMap<String, String> = api
        .conditions
        .unwrap()
        .into_iter()
        .map(|condition| (condition.type_, condition.status))
        .collect();
    assert_eq!(conditions["Ready"], expected);
    assert_eq!(api.pod_ip.as_deref(), Some("10.244.0.2"));
}

#[test]
fn a_projected_config_map_is_swapped_atomically_and_refreshed_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p"},
        "spec": {"containers": [], "volumes": [{"name": "config", "configMap": {"name": "settings"}}]}
    }))
    .unwrap();
    let config_map = |value: &str| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": "settings"}, "data": {"key": value}}))
            .unwrap()
    };
    let mut sources = Sources::default();
    sources
        .config_maps
        .insert("settings".to_owned(), config_map("first"));
    let roots = VolumeRoots {
        pod: dir.path().join("pod"),
        claims: dir.path().join("claims"),
    };
    let volumes = prepare(&pod, &sources, &roots).unwrap();
    let volume = &volumes["config"];
    assert_eq!(
        std::fs::read_to_string(volume.join("key")).unwrap(),
        "first"
    );
    assert_eq!(
        std::fs::read_link(volume.join("key")).unwrap(),
        std::path::Path::new("..data/key")
    );

    sources
        .config_maps
        .insert("settings".to_owned(), config_map("second"));
    refresh(&pod, &sources, &roots).unwrap();
    assert_eq!(
        std::fs::read_to_string(volume.join("key")).unwrap(),
        "second"
    );
    let generations: Vec<_> = std::fs::read_dir(volume)
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.starts_with("..gen"))
        .collect();
    assert_eq!(
        generations,
        ["..gen1"],
        "the previous generation is removed"
    );

    sources.config_maps.clear();
    assert!(
        prepare(&pod, &sources, &roots).is_err(),
        "a missing ConfigMap that is not optional is refused"
    );
}
