//! A local stand-in for the `docker.io/apache/superset:6.1.0` image, for the pod
//! runner's Superset pods: a directory laid out as the image is, around the Superset
//! venv of [`super::superset`] (PyPI `apache-superset==6.1.0`).
//!
//! - `app/.venv`: a symbolic link to that venv (the runner binds what it names), where
//!   the image's `uv venv /app/.venv` lives;
//! - `app/pythonpath`: empty, as the image creates it.
//!
//! The manifest gives the image's `ENV` (from its Dockerfile, stages `python-base` and
//! `python-common`: the venv first on `PATH`, `SUPERSET_HOME=HOME=/app/superset_home`,
//! `PYTHONPATH=/app/pythonpath`, `SUPERSET_ENV`, `FLASK_APP`, `SUPERSET_PORT`, and the
//! Python base image's `LANG`), `WORKDIR /app` and user `superset`. The Dockerfile
//! creates that user with `useradd --user-group` and no number, on a Debian base whose
//! accounts all lie below 1000 (`UID_MIN`/`GID_MIN`), so it is 1000:1000. The image's
//! Python is probably 3.10 (the release build's base, `python:3.10-slim-bookworm`); the
//! venv here runs the host's Python 3.11.

use std::{
    fs,
    os::unix::fs::symlink,
    path::{Path, PathBuf},
};

use anyhow::Context;

use super::{Outcome, image_dir};

/// The Superset release the image stands in for.
pub const VERSION: &str = "6.1.0";

fn manifest() -> String {
    image_dir::ImageManifest {
        references: &["docker.io/apache/superset:6.1.0", "apache/superset:6.1.0"],
        paths: &["/app/.venv", "/app/pythonpath"],
        env: &[
            (
                "PATH",
                "/app/.venv/bin:/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin",
            ),
            ("LANG", "C.UTF-8"),
            ("SUPERSET_HOME", "/app/superset_home"),
            ("HOME", "/app/superset_home"),
            ("SUPERSET_ENV", "production"),
            ("FLASK_APP", "superset.app:create_app()"),
            ("PYTHONPATH", "/app/pythonpath"),
            ("SUPERSET_PORT", "8088"),
        ],
        working_dir: "/app",
        user: (1000, 1000),
    }
    .to_json()
}

/// Builds the image directory `tools_dir/images/superset-6.1.0` around `venv` unless
/// its stamp is current; returns it (the image's `/`, holding `app/`).
pub fn ensure(tools_dir: &Path, venv: &Path) -> anyhow::Result<(PathBuf, Outcome)> {
    let image = tools_dir.join("images").join(format!("superset-{VERSION}"));
    let manifest = manifest();
    let venv_text = venv.display().to_string();
    let stamp = image_dir::Stamp::new(&image, &[&venv_text, &manifest]);
    if stamp.is_current() {
        return Ok((image, Outcome::AlreadyPresent));
    }
    image_dir::recreate(&image)?;
    let app = image.join("app");
    let pythonpath = app.join("pythonpath");
    fs::create_dir_all(&pythonpath)
        .with_context(|| format!("cannot create {}", pythonpath.display()))?;
    symlink(venv, app.join(".venv"))
        .with_context(|| format!("cannot link {} into the image", venv.display()))?;
    stamp.seal(&image, &manifest)?;
    Ok((image, Outcome::Installed))
}
