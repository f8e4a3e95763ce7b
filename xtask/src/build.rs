//! The binaries an xtask command starts, built by the command itself, so that each
//! command works on a fresh clone with nothing run before it.
//!
//! They are built in one `cargo build` together with xtask: cargo unifies the
//! dependencies' features over the packages it builds, and the operators and the pod
//! runner are all in xtask's own dependency tree, so the build finds every dependency
//! compiled already by the `cargo run` that started xtask, and only compiles and links
//! the binaries themselves. A build of the operators alone would resolve other
//! features and compile much of the tree a second time.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

/// The package of the pod runner, whose helper `strata-pod-exec` starts every container.
pub const POD_RUNNER_PACKAGE: &str = "strata-pod-runner";

/// The arguments of the one `cargo build` of `packages` beside xtask.
pub fn build_arguments(packages: &[&str]) -> Vec<String> {
    let mut arguments = vec![
        "build".to_owned(),
        "--package".to_owned(),
        "xtask".to_owned(),
    ];
    for package in packages {
        arguments.push("--package".to_owned());
        arguments.push((*package).to_owned());
    }
    arguments.push("--bins".to_owned());
    arguments.push("--message-format=json-render-diagnostics".to_owned());
    arguments
}

/// Builds the binaries of `packages` (and the pod runner's helper when `pod_runner`),
/// and returns each built executable by its binary's name. Cargo's progress and
/// diagnostics go to stderr as usual.
pub fn binaries(
    workspace: &Path,
    packages: &[&str],
    pod_runner: bool,
) -> anyhow::Result<BTreeMap<String, PathBuf>> {
    let mut packages = packages.to_vec();
    if pod_runner {
        packages.push(POD_RUNNER_PACKAGE);
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(&cargo);
    for variable in crate::pipeline::package_variables(std::env::vars_os().map(|(name, _)| name)) {
        command.env_remove(variable);
    }
    eprintln!("==> cargo build of {}", packages.join(", "));
    let output = command
        .args(build_arguments(&packages))
        .current_dir(workspace)
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("cannot start {cargo:?}"))?;
    if !output.status.success() {
        bail!(
            "cargo build of {} failed ({})",
            packages.join(", "),
            output.status
        );
    }
    Ok(executables(&String::from_utf8_lossy(&output.stdout)))
}

/// The executables in cargo's JSON messages, by target name.
pub fn executables(messages: &str) -> BTreeMap<String, PathBuf> {
    messages
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["reason"] == "compiler-artifact")
        .filter_map(|message| {
            let name = message["target"]["name"].as_str()?.to_owned();
            let executable = message["executable"].as_str()?;
            Some((name, PathBuf::from(executable)))
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn the_binaries_are_built_beside_xtask_so_its_dependencies_are_reused() {
        assert_eq!(
            build_arguments(&["zookeeper-operator", POD_RUNNER_PACKAGE]),
            [
                "build",
                "--package",
                "xtask",
                "--package",
                "zookeeper-operator",
                "--package",
                "strata-pod-runner",
                "--bins",
                "--message-format=json-render-diagnostics"
            ]
        );
    }

    #[test]
    fn only_artifacts_with_an_executable_are_named() {
        let messages = [
            r#"{"reason":"compiler-artifact","target":{"name":"strata-pod-exec"},"executable":"/t/debug/strata-pod-exec"}"#,
            r#"{"reason":"compiler-artifact","target":{"name":"serde"},"executable":null}"#,
            r#"{"reason":"build-finished","success":true}"#,
            "   Compiling noise",
        ]
        .join("\n");
        assert_eq!(
            executables(&messages),
            BTreeMap::from([(
                "strata-pod-exec".to_owned(),
                PathBuf::from("/t/debug/strata-pod-exec")
            )])
        );
    }
}
