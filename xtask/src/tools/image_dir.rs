//! What the local image directories share: jars copied from Maven Central by a pinned
//! pom, a stand-in launcher where no registry ships the image's own, and the manifest
//! the pod runner reads (`strata-image.json`: the references the directory serves, the
//! image paths it holds, and the image's `ENV`, `WORKDIR` and `USER`). The manifest's
//! format is `strata_pod_runner::image::Manifest`; xtask writes it as JSON so that it
//! does not depend on the runner.

use std::{
    fs,
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::Context;
use serde_json::json;

use super::process;

/// The manifest's file name, as the pod runner reads it.
pub const MANIFEST: &str = "strata-image.json";

/// An `ENV` of the JVM images here, which the published images do not have: their JVMs
/// stop at the C1 compiler. The pods of a test or the sandbox live minutes, so C2's
/// compile time is never paid back: measured, the Trino suite's catalog roll took 197 s
/// instead of 314 s (BENCHMARKS.md). `java` prints a `NOTE: Picked up` line on stderr;
/// a pod's own `JDK_JAVA_OPTIONS` replaces it.
pub const SHORT_LIVED_JVM: (&str, &str) = ("JDK_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1");

/// What an image directory stands for.
#[derive(Debug)]
pub struct ImageManifest<'a> {
    /// The references pods name it by.
    pub references: &'a [&'a str],
    /// The image paths the directory holds.
    pub paths: &'a [&'a str],
    /// The image's `ENV`.
    pub env: &'a [(&'a str, &'a str)],
    /// The image's `WORKDIR`.
    pub working_dir: &'a str,
    /// The image's `USER` (uid, gid).
    pub user: (u32, u32),
}

impl ImageManifest<'_> {
    /// The manifest as the runner reads it.
    pub fn to_json(&self) -> String {
        let value = json!({
            "references": self.references,
            "paths": self.paths,
            "env": self.env,
            "workingDir": self.working_dir,
            "user": [self.user.0, self.user.1],
        });
        serde_json::to_string_pretty(&value).unwrap_or_default()
    }
}

/// `mvn`, or an error that says how to get it.
pub fn maven() -> anyhow::Result<PathBuf> {
    process::which("mvn").context(
        "mvn is missing: install Maven (`apt-get install maven`), which fetches the image's \
         jars from Maven Central",
    )
}

/// Copies the runtime class path `pom` pins into `dir`. A missing artifact fails with
/// Maven's message, which names its coordinates.
pub fn copy_dependencies(mvn: &Path, pom: &Path, dir: &Path) -> anyhow::Result<()> {
    process::capture(
        Command::new(mvn)
            .args(["-B", "-q", "-f"])
            .arg(pom)
            .args(["dependency:copy-dependencies", "-DincludeScope=runtime"])
            .arg(format!("-DoutputDirectory={}", dir.display())),
    )
    .map(drop)
    .with_context(|| format!("mvn could not copy the jars {} pins", pom.display()))
}

/// Copies one artifact (`group:artifact:version[:type[:classifier]]`) into `dir`, with
/// the repositories of `pom`. A missing artifact fails naming its coordinates.
pub fn copy_artifact(mvn: &Path, pom: &Path, artifact: &str, dir: &Path) -> anyhow::Result<()> {
    process::capture(
        Command::new(mvn)
            .args(["-B", "-q", "-f"])
            .arg(pom)
            .arg("dependency:copy")
            .arg(format!("-Dartifact={artifact}"))
            .arg(format!("-DoutputDirectory={}", dir.display())),
    )
    .map(drop)
    .with_context(|| format!("mvn could not fetch {artifact}"))
}

/// Writes an executable file.
pub fn write_executable(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    fs::write(path, text)
        .and_then(|()| fs::set_permissions(path, fs::Permissions::from_mode(0o755)))
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Removes a stale image directory and creates it afresh.
pub fn recreate(image: &Path) -> anyhow::Result<()> {
    if image.exists() {
        fs::remove_dir_all(image).with_context(|| format!("cannot clean {}", image.display()))?;
    }
    fs::create_dir_all(image).with_context(|| format!("cannot create {}", image.display()))
}

/// The stamp of an image directory: the texts that pin it (pom, launcher, manifest).
/// It is written last, so an interrupted build is built again.
#[derive(Debug)]
pub struct Stamp {
    path: PathBuf,
    pin: String,
}

impl Stamp {
    /// The stamp `image/strata-stamp.txt` for the texts `parts`.
    pub fn new(image: &Path, parts: &[&str]) -> Self {
        Self {
            path: image.join("strata-stamp.txt"),
            pin: parts.join("\n"),
        }
    }

    /// The directory was built from these texts.
    pub fn is_current(&self) -> bool {
        fs::read_to_string(&self.path).is_ok_and(|found| found == self.pin)
    }

    /// Writes the image's manifest, then the stamp.
    pub fn seal(&self, image: &Path, manifest: &str) -> anyhow::Result<()> {
        fs::write(image.join(MANIFEST), manifest).context("cannot write the manifest")?;
        fs::write(&self.path, &self.pin)
            .with_context(|| format!("cannot write {}", self.path.display()))
    }
}
