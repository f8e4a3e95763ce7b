//! Prometheus' `promtool`, which unit-tests every operator's alert rules, and the
//! Prometheus Operator's CRDs, which the real-control-plane tests install to prove the
//! ServiceMonitor and PrometheusRule the operators apply.
//!
//! Both come from the Go module proxy: `promtool` is built from the pinned module in
//! `xtask/go/prometheus` ([`super::control_plane::PROMETHEUS_TOOLS`]); the CRDs are
//! files of the module `github.com/prometheus-operator/prometheus-operator` at
//! [`PROMETHEUS_OPERATOR_VERSION`], which `go mod download` fetches and checks against
//! the Go checksum database.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::Context;

use super::{Outcome, control_plane, process};

/// The Prometheus Operator release whose CRDs the tests install.
pub const PROMETHEUS_OPERATOR_VERSION: &str = "v0.85.0";
/// The CRDs of the kinds the operators create, as the module holds them.
const OPERATOR_CRDS: ModuleFiles = ModuleFiles {
    module: "github.com/prometheus-operator/prometheus-operator",
    version: PROMETHEUS_OPERATOR_VERSION,
    dir: "example/prometheus-operator-crd",
    files: &[
        "monitoring.coreos.com_servicemonitors.yaml",
        "monitoring.coreos.com_prometheusrules.yaml",
    ],
};

/// Where the provisioned files are.
#[derive(Debug, Clone)]
pub struct Prometheus {
    /// The `promtool` binary.
    pub promtool: PathBuf,
    /// A directory with the ServiceMonitor and PrometheusRule CRDs.
    pub operator_crds: PathBuf,
}

/// Builds `promtool` and copies the CRDs when their stamps are not current.
pub fn ensure(go_dir: &Path) -> anyhow::Result<(Prometheus, Outcome)> {
    let (bin, built) = control_plane::ensure_set(go_dir, control_plane::PROMETHEUS_TOOLS)?;
    let crds = bin.join(format!(
        "prometheus-operator-crds-{PROMETHEUS_OPERATOR_VERSION}"
    ));
    let copied = copy_module_files(&go_dir.join("prometheus"), &OPERATOR_CRDS, &crds)?;
    let outcome = if built == Outcome::Installed || copied == Outcome::Installed {
        Outcome::Installed
    } else {
        Outcome::AlreadyPresent
    };
    Ok((
        Prometheus {
            promtool: bin.join("promtool"),
            operator_crds: crds,
        },
        outcome,
    ))
}

/// Files of one directory of a Go module at a pinned version, such as a project's CRDs
/// (the Prometheus Operator's here, the Gateway API's in [`super::gateway_api`]).
#[derive(Debug, Clone, Copy)]
pub struct ModuleFiles {
    /// The module's path, such as `sigs.k8s.io/gateway-api`.
    pub module: &'static str,
    /// The pinned version, which the stamp records.
    pub version: &'static str,
    /// The directory in the module that holds the files.
    pub dir: &'static str,
    /// The files' names.
    pub files: &'static [&'static str],
}

/// Copies the files of `wanted` into `into` unless its stamp names the pinned version
/// and every file is there. The module is downloaded in `module_dir`, a directory
/// with a `go.mod` so that its Go toolchain line applies; the module need not be one of
/// its dependencies.
pub fn copy_module_files(
    module_dir: &Path,
    wanted: &ModuleFiles,
    into: &Path,
) -> anyhow::Result<Outcome> {
    let stamp = into.join(".stamp");
    let complete = fs::read_to_string(&stamp).is_ok_and(|found| found == wanted.version)
        && wanted.files.iter().all(|file| into.join(file).is_file());
    if complete {
        return Ok(Outcome::AlreadyPresent);
    }
    let module = download(module_dir, wanted.module, wanted.version)?;
    fs::create_dir_all(into).with_context(|| format!("cannot create {}", into.display()))?;
    for file in wanted.files {
        let source = module.join(wanted.dir).join(file);
        fs::copy(&source, into.join(file))
            .with_context(|| format!("cannot copy {}", source.display()))?;
    }
    fs::write(&stamp, wanted.version)
        .with_context(|| format!("cannot write {}", stamp.display()))?;
    Ok(Outcome::Installed)
}

/// The directory of `module` at `version` in Go's module cache, downloaded when
/// missing and checked against the Go checksum database.
fn download(module_dir: &Path, module: &str, version: &str) -> anyhow::Result<PathBuf> {
    let go = process::which("go").context("`go` is not on PATH")?;
    let output = process::capture(
        Command::new(go)
            .args(["mod", "download", "-json"])
            .arg(format!("{module}@{version}"))
            .current_dir(module_dir),
    )?;
    let answer: serde_json::Value = serde_json::from_str(&output)
        .with_context(|| format!("`go mod download -json` printed no JSON: {output}"))?;
    if let Some(error) = answer.get("Error").and_then(serde_json::Value::as_str) {
        anyhow::bail!("the Go module proxy did not serve {module}@{version}: {error}");
    }
    answer
        .get("Dir")
        .and_then(serde_json::Value::as_str)
        .map(PathBuf::from)
        .with_context(|| format!("`go mod download -json` named no directory: {output}"))
}
