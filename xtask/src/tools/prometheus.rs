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
const PROMETHEUS_OPERATOR_MODULE: &str = "github.com/prometheus-operator/prometheus-operator";
/// The CRDs of the kinds the operators create, as the module holds them.
const CRD_FILES: [&str; 2] = [
    "monitoring.coreos.com_servicemonitors.yaml",
    "monitoring.coreos.com_prometheusrules.yaml",
];

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
    let (bin, mut outcome) = control_plane::ensure_set(go_dir, control_plane::PROMETHEUS_TOOLS)?;
    let crds = bin.join(format!(
        "prometheus-operator-crds-{PROMETHEUS_OPERATOR_VERSION}"
    ));
    let stamp = crds.join(".stamp");
    let complete = fs::read_to_string(&stamp)
        .is_ok_and(|found| found == PROMETHEUS_OPERATOR_VERSION)
        && CRD_FILES.iter().all(|file| crds.join(file).is_file());
    if !complete {
        let module = download(go_dir)?;
        fs::create_dir_all(&crds).with_context(|| format!("cannot create {}", crds.display()))?;
        for file in CRD_FILES {
            let source = module
                .join("example")
                .join("prometheus-operator-crd")
                .join(file);
            fs::copy(&source, crds.join(file))
                .with_context(|| format!("cannot copy {}", source.display()))?;
        }
        fs::write(&stamp, PROMETHEUS_OPERATOR_VERSION)
            .with_context(|| format!("cannot write {}", stamp.display()))?;
        outcome = Outcome::Installed;
    }
    Ok((
        Prometheus {
            promtool: bin.join("promtool"),
            operator_crds: crds,
        },
        outcome,
    ))
}

/// The module's directory in Go's module cache, downloaded when missing.
fn download(go_dir: &Path) -> anyhow::Result<PathBuf> {
    let go = process::which("go").context("`go` is not on PATH")?;
    let output = process::capture(
        Command::new(go)
            .args(["mod", "download", "-json"])
            .arg(format!(
                "{PROMETHEUS_OPERATOR_MODULE}@{PROMETHEUS_OPERATOR_VERSION}"
            ))
            .current_dir(go_dir.join("prometheus")),
    )?;
    let answer: serde_json::Value = serde_json::from_str(&output)
        .with_context(|| format!("`go mod download -json` printed no JSON: {output}"))?;
    if let Some(error) = answer.get("Error").and_then(serde_json::Value::as_str) {
        anyhow::bail!(
            "the Go module proxy did not serve {PROMETHEUS_OPERATOR_MODULE}@{PROMETHEUS_OPERATOR_VERSION}: {error}"
        );
    }
    answer
        .get("Dir")
        .and_then(serde_json::Value::as_str)
        .map(PathBuf::from)
        .with_context(|| format!("`go mod download -json` named no directory: {output}"))
}
