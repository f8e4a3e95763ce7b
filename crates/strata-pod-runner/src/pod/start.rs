//! Starting one run of a container, and its `preStop` hook: what the kubelet and the
//! container runtime do around the process.

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::Container;

use super::{PodSetup, Shared};
use crate::container::{Running, termination_log_file};
use crate::env::{command_line, environment};
use crate::launch::Command;
use crate::probe::Target;
use crate::spec::{credentials, launch};

/// What the container runtime, the image and the kubelet set before the container's
/// own `env`: `HOSTNAME`, the image's `ENV`, then the API server's Service variables.
pub(super) fn base_environment(
    setup: &PodSetup,
    image: &crate::image::Image,
) -> Vec<(String, String)> {
    [("HOSTNAME".to_owned(), crate::spec::hostname(&setup.pod))]
        .into_iter()
        .chain(image.manifest.env.clone())
        .chain(setup.service_env.clone())
        .collect()
}

/// Starts one run of a container; on failure, the kubelet's waiting reason and message.
pub(super) fn start(
    shared: &Shared,
    container: &Container,
    attempt: i32,
) -> Result<(Running, Target, PathBuf), (String, String)> {
    let setup = &shared.setup;
    let reference = container.image.clone().unwrap_or_default();
    let image = setup
        .images
        .get(&reference)
        .map_err(|error| ("ErrImageNeverPull".to_owned(), error.to_string()))?;
    let config_error = |message: String| ("CreateContainerConfigError".to_owned(), message);
    let base = base_environment(setup, image);
    let env = {
        let sources = setup
            .sources
            .read()
            .map_err(|_| config_error("the runner's sources are poisoned".to_owned()))?;
        environment(&setup.pod, container, &base, &sources)
            .map_err(|error| config_error(error.to_string()))?
    };
    let command = Command {
        argv: command_line(container, &image.manifest.entrypoint, &env),
        env: env.clone(),
        working_dir: container
            .working_dir
            .clone()
            .map_or_else(|| image.manifest.working_dir.clone(), PathBuf::from),
    };
    let container_dir = setup.dir.join("containers").join(&container.name);
    let log = shared.log(&container.name, attempt);
    for dir in [
        &container_dir,
        &log.parent().map(PathBuf::from).unwrap_or_default(),
    ] {
        std::fs::create_dir_all(dir)
            .map_err(|error| config_error(format!("cannot create {}: {error}", dir.display())))?;
    }
    let spec = launch(
        &setup.pod,
        container,
        image,
        &setup.volumes,
        command,
        &setup.netns,
        &container_dir,
        &setup.files,
    )
    .map_err(config_error)?;
    termination_log_file(
        &spec.termination_log,
        &credentials(&setup.pod, container, image),
    )
    .map_err(|error| config_error(error.to_string()))?;
    let running = setup
        .helper
        .launch(&spec, &container_dir, &log)
        .map_err(|error| ("RunContainerError".to_owned(), error.to_string()))?;
    let target = Target {
        netns: setup.netns.clone(),
        address: setup.address,
        helper: setup.helper.clone(),
        pid: running.pid(),
        user: spec.user.clone(),
        env,
    };
    Ok((running, target, log))
}

/// Runs the container's `preStop` exec hook, bounded by the grace period.
pub(super) async fn pre_stop(
    shared: &Shared,
    container: &Container,
    target: &Target,
    grace: Duration,
) {
    let Some(argv) = container
        .lifecycle
        .as_ref()
        .and_then(|lifecycle| lifecycle.pre_stop.as_ref())
        .and_then(|handler| handler.exec.as_ref())
        .and_then(|exec| exec.command.clone())
    else {
        return;
    };
    let command = Command {
        argv,
        env: target.env.clone(),
        working_dir: "/".into(),
    };
    let _ = shared
        .setup
        .helper
        .exec_in(target.pid, &target.user, true, command, grace)
        .await;
}
