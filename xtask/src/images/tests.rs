#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pretty_assertions::assert_eq;
use rstest::rstest;

use super::*;
use crate::operators;

fn options(push: bool) -> ImageOptions {
    ImageOptions {
        registry: "registry.example/team/".to_owned(),
        tag: "1.2.3".to_owned(),
        push,
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|&item| item.to_owned()).collect()
}

/// The build of `operator`, tagged in the test registry.
fn build(operator: &str) -> Vec<String> {
    strings(&[
        "build",
        "--file",
        "docker/operator.Dockerfile",
        "--build-arg",
        &format!("OPERATOR={operator}"),
        "--build-arg",
        "VERSION=0.1.0",
        "--build-arg",
        "REVISION=abc123",
        "--tag",
        &format!("registry.example/team/{operator}:1.2.3"),
        ".",
    ])
}

#[rstest]
#[case::build_only(false)]
#[case::build_then_push(true)]
fn plan_builds_every_operator_from_the_one_dockerfile(#[case] push: bool) {
    let steps = plan(operators::registered(), &options(push), "0.1.0", "abc123");
    let args: Vec<Vec<String>> = steps.iter().map(|step| step.args.clone()).collect();
    let mut expected = Vec::new();
    for operator in operators::registered() {
        expected.push(build(operator.name));
        if push {
            expected.push(strings(&[
                "push",
                &format!("registry.example/team/{}:1.2.3", operator.name),
            ]));
        }
    }
    assert_eq!(args, expected);
    for step in &steps {
        assert!(step.args.contains(&step.image), "{step:?}");
    }
}

#[test]
fn default_repository_matches_the_chart_default() {
    assert_eq!(
        repository(DEFAULT_REGISTRY, "zookeeper-operator"),
        "ghcr.io/strata-dev/zookeeper-operator"
    );
}

/// A stand-in `docker` that runs `script` and logs its arguments to `calls.log`.
fn fake_docker(dir: &Path, script: &str) -> PathBuf {
    let path = dir.join("docker");
    let log = dir.join("calls.log");
    strata_testing::executable::write(
        &path,
        &format!(
            "#!/bin/sh\necho \"$* BUILDKIT=$DOCKER_BUILDKIT\" >> '{}'\n{script}\n",
            log.display()
        ),
    );
    path
}

fn calls(dir: &Path) -> Vec<String> {
    fs::read_to_string(dir.join("calls.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn without_an_engine_it_says_so_and_builds_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let docker = fake_docker(
        dir.path(),
        "echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock.' >&2; exit 1",
    );
    let steps = plan(operators::registered(), &options(false), "0.1.0", "abc");

    let error = run(dir.path(), &docker, &steps).expect_err("no engine");

    let message = format!("{error:#}");
    assert!(
        message.contains("no Docker engine is reachable, so no image was built"),
        "{message}"
    );
    assert!(
        message.contains("Cannot connect to the Docker daemon"),
        "{message}"
    );
    assert_eq!(
        calls(dir.path()),
        vec!["version --format {{.Server.Version}} BUILDKIT=".to_owned()]
    );
}

#[test]
fn with_an_engine_it_runs_every_step_with_buildkit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let docker = fake_docker(dir.path(), "echo 28.0.1");
    let steps = plan(operators::registered(), &options(true), "0.1.0", "abc");

    run(dir.path(), &docker, &steps).expect("runs");

    let log = calls(dir.path());
    assert_eq!(log.len(), 1 + steps.len(), "{log:#?}");
    assert!(
        log[1].starts_with("build --file docker/operator.Dockerfile"),
        "{log:#?}"
    );
    assert!(log[1].ends_with(" . BUILDKIT=1"), "{log:#?}");
    assert_eq!(
        log[2],
        "push registry.example/team/zookeeper-operator:1.2.3 BUILDKIT=1"
    );
}

#[test]
fn a_failing_build_names_the_image() {
    let dir = tempfile::tempdir().expect("tempdir");
    let docker = fake_docker(
        dir.path(),
        "if [ \"$1\" = version ]; then echo 28.0.1; else exit 2; fi",
    );
    let steps = plan(operators::registered(), &options(true), "0.1.0", "abc");

    let error = run(dir.path(), &docker, &steps).expect_err("build fails");

    assert!(
        format!("{error:#}")
            .contains("building or pushing registry.example/team/zookeeper-operator:1.2.3 failed"),
        "{error:#}"
    );
    assert_eq!(calls(dir.path()).len(), 2, "stops at the failed build");
}

#[test]
fn dockerfiles_finds_the_committed_dockerfile() {
    let workspace = crate::commands::workspace_root();
    assert_eq!(
        dockerfiles(&workspace).expect("lists"),
        vec![workspace.join(DOCKERFILE)]
    );
}

#[test]
fn dockerfiles_fails_on_an_empty_directory() {
    let workspace = tempfile::tempdir().expect("tempdir");
    fs::create_dir(workspace.path().join(DOCKER_DIR)).expect("mkdir");
    fs::write(workspace.path().join(DOCKER_DIR).join("notes.txt"), "x").expect("write");
    let error = dockerfiles(workspace.path()).expect_err("none");
    assert!(error.to_string().starts_with("no Dockerfile in"), "{error}");
}
