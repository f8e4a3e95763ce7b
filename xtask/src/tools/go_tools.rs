//! The tools the test suite builds from the Go module proxy beside the control plane
//! (which [`super::provision_sandbox`] builds): promtool, the statsd exporter, and the
//! Prometheus Operator's and the Gateway API's CRDs.
//!
//! On a new machine their builds keep both cores busy for minutes (promtool alone
//! about 4), while the other provisioning steps mostly wait on registries
//! (Maven Central, PyPI, Debian). So [`super::provision`] runs these steps on a thread
//! of their own, beside the others: the provisioning then takes about as long as the
//! longer of the two instead of their sum. Nothing here reads what another step makes.

use std::path::{Path, PathBuf};

use super::control_plane;
use super::prometheus::{self, Prometheus};
use super::{gateway_api, statsd_exporter_image, step};

/// What the Go steps provisioned.
#[derive(Debug)]
pub struct GoTools {
    /// promtool and the Prometheus Operator's CRDs.
    pub prometheus: Prometheus,
    /// The directory with the Gateway API's CRDs.
    pub gateway_api_crds: PathBuf,
    /// The statsd exporter's image directory.
    pub statsd_exporter_image: PathBuf,
}

/// Runs the Go steps one after the other, `go_dir` being `xtask/go`.
pub fn provision(go_dir: &Path, tools_dir: &Path) -> anyhow::Result<GoTools> {
    let (prometheus, _) = step(
        &format!(
            "promtool {} + the Prometheus Operator {} CRDs (Go module proxy)",
            control_plane::PROMETHEUS_VERSION,
            prometheus::PROMETHEUS_OPERATOR_VERSION
        ),
        || prometheus::ensure(go_dir),
    )?;
    let (gateway_api_crds, _) = step(
        &format!(
            "the Gateway API {} CRDs (Go module proxy)",
            gateway_api::GATEWAY_API_VERSION
        ),
        || gateway_api::ensure(go_dir, tools_dir),
    )?;
    let statsd_exporter_image = statsd_exporter(go_dir, tools_dir)?;
    Ok(GoTools {
        prometheus,
        gateway_api_crds,
        statsd_exporter_image,
    })
}

/// The statsd exporter's image directory, the Superset pods' metrics sidecar: a step of
/// the test suite's provisioning, and of `cargo xtask run` for a Superset manifest.
pub fn statsd_exporter(go_dir: &Path, tools_dir: &Path) -> anyhow::Result<PathBuf> {
    let (image, _) = step(
        &format!(
            "statsd exporter {} image directory (Go module proxy)",
            control_plane::STATSD_EXPORTER_VERSION
        ),
        || statsd_exporter_image::ensure(go_dir, tools_dir),
    )?;
    Ok(image)
}
