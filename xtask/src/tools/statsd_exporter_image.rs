//! A local stand-in for the `quay.io/prometheus/statsd-exporter` image, the sidecar
//! of every Superset pod: a directory with `/bin/statsd_exporter`, built from the pinned
//! Go module `github.com/prometheus/statsd_exporter` (`xtask/go/statsd-exporter`), as the
//! image holds it, and the image's user (`nobody`, 65534). A fresh build is proved by
//! `statsd_exporter --version` naming the release.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, bail};

use super::control_plane::{STATSD_EXPORTER_TOOLS, STATSD_EXPORTER_VERSION, ensure_set};
use super::{Outcome, image_dir, process};

/// The image the operator names, as the directory serves it.
pub const IMAGE: &str = "quay.io/prometheus/statsd-exporter:v0.31.0";
/// The binary's path in the image.
const BINARY: &str = "/bin/statsd_exporter";

fn manifest() -> String {
    image_dir::ImageManifest {
        references: &[IMAGE, "prom/statsd-exporter:v0.31.0"],
        paths: &[BINARY],
        env: &[(
            "PATH",
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        )],
        working_dir: "/",
        user: (65534, 65534),
    }
    .to_json()
}

/// Builds the exporter from the Go module proxy and lays out the image directory
/// `tools_dir/images/statsd-exporter-<version>` unless its stamp is current.
pub fn ensure(go_dir: &Path, tools_dir: &Path) -> anyhow::Result<(PathBuf, Outcome)> {
    let (bin, _) = ensure_set(go_dir, STATSD_EXPORTER_TOOLS)?;
    let binary = bin.join("statsd_exporter");
    let key = fs::read_to_string(bin.join("statsd_exporter.stamp")).unwrap_or_default();
    let image = tools_dir
        .join("images")
        .join(format!("statsd-exporter-{STATSD_EXPORTER_VERSION}"));
    let manifest = manifest();
    let stamp = image_dir::Stamp::new(&image, &[&key, &manifest]);
    if stamp.is_current() {
        return Ok((image, Outcome::AlreadyPresent));
    }
    image_dir::recreate(&image)?;
    let target = image.join(BINARY.trim_start_matches('/'));
    if let Some(parent) = target.parent() {
        fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    fs::copy(&binary, &target).with_context(|| format!("cannot copy {}", binary.display()))?;
    let version = process::capture(Command::new(&target).arg("--version"))?;
    if !version.contains(STATSD_EXPORTER_VERSION.trim_start_matches('v')) {
        bail!("`statsd_exporter --version` did not name {STATSD_EXPORTER_VERSION}:\n{version}");
    }
    stamp.seal(&image, &manifest)?;
    Ok((image, Outcome::Installed))
}
