//! The provisioned kubectl and helm, pointed at the sandbox.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, bail};

/// The provisioned kubectl and helm, pointed at the sandbox.
pub(super) struct Kubectl {
    pub(super) binary: PathBuf,
    pub(super) helm: PathBuf,
    pub(super) kubeconfig: PathBuf,
    pub(super) home: PathBuf,
}

impl Kubectl {
    pub(super) fn run(&self, args: &[&str]) -> anyhow::Result<String> {
        output(
            Command::new(&self.binary)
                .arg("--kubeconfig")
                .arg(&self.kubeconfig)
                .args(args),
            "kubectl",
            args,
        )
    }

    pub(super) fn helm(&self, args: &[&str]) -> anyhow::Result<String> {
        output(
            Command::new(&self.helm)
                .arg("--kubeconfig")
                .arg(&self.kubeconfig)
                .args(args)
                .env("HELM_CACHE_HOME", self.home.join("helm-cache"))
                .env("HELM_CONFIG_HOME", self.home.join("helm-config"))
                .env("HELM_DATA_HOME", self.home.join("helm-data")),
            "helm",
            args,
        )
    }
}

pub(super) fn output(
    command: &mut Command,
    program: &str,
    args: &[&str],
) -> anyhow::Result<String> {
    let output = command
        .output()
        .with_context(|| format!("starting {program}"))?;
    if !output.status.success() {
        bail!(
            "{program} {args:?} failed ({}): {}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
