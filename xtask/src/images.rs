//! `cargo xtask images`: one container image per registered operator, and hadolint on the
//! Dockerfiles.
//!
//! Every operator builds from the one parametrised [`DOCKERFILE`] with
//! `--build-arg OPERATOR=<name>`, so a newly registered operator gets an image with no
//! extra file. The plan of `docker` invocations is a pure function ([`plan`]); running it
//! first asks the Docker engine for its version, so a machine with only the client says so
//! plainly instead of failing halfway through a build.

use std::{
    ffi::OsString,
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, bail};

use crate::{operators::Operator, tools::process};

/// The parametrised Dockerfile, relative to the workspace root.
pub const DOCKERFILE: &str = "docker/operator.Dockerfile";

/// Directory of the Dockerfiles, relative to the workspace root; hadolint lints all of them.
pub const DOCKER_DIR: &str = "docker";

/// Registry the images are tagged for unless `--registry` says otherwise; the charts'
/// default `image.repository` points here too.
pub const DEFAULT_REGISTRY: &str = "ghcr.io/strata-dev";

/// The image repository of `operator` in `registry`, e.g. `ghcr.io/strata-dev/zookeeper-operator`.
pub fn repository(registry: &str, operator: &str) -> String {
    format!("{}/{operator}", registry.trim_end_matches('/'))
}

/// What `cargo xtask images` was asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageOptions {
    /// Registry prefix of every image.
    pub registry: String,
    /// Tag of every image.
    pub tag: String,
    /// Whether to push each image after building it.
    pub push: bool,
}

/// One `docker` invocation of the plan, with the image it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DockerStep {
    /// The image reference, `registry/operator:tag`.
    pub image: String,
    /// Arguments of `docker`, run in the workspace root.
    pub args: Vec<String>,
}

/// The `docker build` (and, with `push`, `docker push`) steps for every operator, in order.
///
/// `version` and `revision` become OCI labels of the images.
pub fn plan(
    operators: &[Operator],
    options: &ImageOptions,
    version: &str,
    revision: &str,
) -> Vec<DockerStep> {
    let mut steps = Vec::new();
    for operator in operators {
        let image = format!(
            "{}:{}",
            repository(&options.registry, operator.name),
            options.tag
        );
        let build_arg =
            |name: &str, value: &str| ["--build-arg".to_owned(), format!("{name}={value}")];
        let mut args = vec![
            "build".to_owned(),
            "--file".to_owned(),
            DOCKERFILE.to_owned(),
        ];
        args.extend(build_arg("OPERATOR", operator.name));
        args.extend(build_arg("VERSION", version));
        args.extend(build_arg("REVISION", revision));
        args.extend(["--tag".to_owned(), image.clone(), ".".to_owned()]);
        steps.push(DockerStep {
            image: image.clone(),
            args,
        });
        if options.push {
            steps.push(DockerStep {
                args: vec!["push".to_owned(), image.clone()],
                image,
            });
        }
    }
    steps
}

/// Asks the Docker engine behind `docker` for its version; fails plainly when there is none.
pub fn engine_version(docker: &Path) -> anyhow::Result<String> {
    let output = Command::new(docker)
        .args(["version", "--format", "{{.Server.Version}}"])
        .output()
        .with_context(|| format!("cannot start {}", docker.display()))?;
    let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if output.status.success() && !version.is_empty() {
        return Ok(version);
    }
    bail!(
        "no Docker engine is reachable, so no image was built: `{} version` found only the \
         client ({}). Start a Docker engine, or point DOCKER_HOST at one, and rerun \
         `cargo xtask images`.",
        docker.display(),
        String::from_utf8_lossy(&output.stderr).trim()
    )
}

/// Runs the plan with `docker` in `workspace`, after checking that an engine answers.
///
/// BuildKit is required (cache mounts, the Dockerfile's own ignore file), so it is
/// switched on explicitly; a Docker without it fails with its own message.
pub fn run(workspace: &Path, docker: &Path, steps: &[DockerStep]) -> anyhow::Result<()> {
    let version = engine_version(docker)?;
    eprintln!("Docker engine {version}");
    for step in steps {
        eprintln!("==> docker {}", step.args.join(" "));
        process::visible(
            Command::new(docker)
                .args(&step.args)
                .env("DOCKER_BUILDKIT", "1")
                .current_dir(workspace),
        )
        .with_context(|| format!("building or pushing {} failed", step.image))?;
    }
    Ok(())
}

/// The `docker` program on `PATH`, or a plain error saying that Docker is not installed.
pub fn docker_program() -> anyhow::Result<PathBuf> {
    process::which("docker").context(
        "docker is not installed (no `docker` on PATH), so no image was built; install Docker \
         and rerun `cargo xtask images`",
    )
}

/// The commit being built, for the `org.opencontainers.image.revision` label.
pub fn revision(workspace: &Path) -> String {
    process::capture(
        Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(workspace),
    )
    .unwrap_or_else(|_| "unknown".to_owned())
}

/// Every Dockerfile under [`DOCKER_DIR`] (`*.Dockerfile` or `Dockerfile`), sorted.
pub fn dockerfiles(workspace: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let dir = workspace.join(DOCKER_DIR);
    let mut files = Vec::new();
    for entry in fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let path = entry
            .with_context(|| format!("cannot list {}", dir.display()))?
            .path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if name == "Dockerfile" || name.ends_with(".Dockerfile") {
            files.push(path);
        }
    }
    files.sort();
    if files.is_empty() {
        bail!("no Dockerfile in {}", dir.display());
    }
    Ok(files)
}

/// Lints `files` with hadolint at its strictest failure threshold; the error carries
/// every finding.
pub fn hadolint(program: &Path, files: &[PathBuf]) -> anyhow::Result<()> {
    let mut command = Command::new(program);
    command
        .args(["--no-color", "--failure-threshold", "style"])
        .args(files.iter().map(|file| OsString::from(file.as_os_str())));
    process::capture(&mut command)
        .map(drop)
        .context("hadolint found problems")
}

#[cfg(test)]
mod tests;
