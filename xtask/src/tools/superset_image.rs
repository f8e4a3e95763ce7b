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
    ffi::OsStr,
    fs,
    os::unix::fs::symlink,
    path::{Path, PathBuf},
};

use anyhow::Context;

use super::{Outcome, image_dir, process};

/// The Superset release the image stands in for.
pub const VERSION: &str = "6.1.0";

/// The reference of the derived image with the Trino client, as a user would push
/// it; the real tests' clusters name it in `spec.image.custom`.
pub const TRINO_DERIVED_REFERENCE: &str = "registry.example.com/superset-trino:6.1.0";

/// The Trino client the derived image adds (PyPI). 0.331.0 is the newest whose
/// dependencies need no C extension: 0.332 and later also need `lz4` and `zstandard`.
pub const TRINO_CLIENT: &str = "trino==0.331.0";

/// What the derived image's `pip install` of [`TRINO_CLIENT`] brings besides it: its one
/// dependency the stock image lacks. Superset's own pins (Celery 5.5) do not pull
/// `tzlocal`; pip's newest Celery did, which hid the need until the venv took the
/// image's Celery. `python-dateutil`, `pytz` and `requests` are in the image.
pub const TRINO_CLIENT_DEPENDENCIES: [&str; 1] = ["tzlocal==5.3.1"];

fn manifest() -> String {
    manifest_for(&["docker.io/apache/superset:6.1.0", "apache/superset:6.1.0"])
}

fn manifest_for(references: &[&str]) -> String {
    image_dir::ImageManifest {
        references,
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
    build(
        tools_dir,
        venv,
        &format!("superset-{VERSION}"),
        &manifest(),
        &[],
    )
}

/// The derived image a user builds for `trinoConnections` (docs/superset.md): the
/// stock image with [`TRINO_CLIENT`]. Here the client goes into `app/pythonpath`,
/// which is on the image's `PYTHONPATH`, so the stock venv stays as PyPI made it.
pub fn ensure_trino_derived(tools_dir: &Path, venv: &Path) -> anyhow::Result<(PathBuf, Outcome)> {
    build(
        tools_dir,
        venv,
        &format!("superset-trino-{VERSION}"),
        &manifest_for(&[TRINO_DERIVED_REFERENCE]),
        &[&[TRINO_CLIENT], TRINO_CLIENT_DEPENDENCIES.as_slice()].concat(),
    )
}

fn build(
    tools_dir: &Path,
    venv: &Path,
    name: &str,
    manifest: &str,
    packages: &[&str],
) -> anyhow::Result<(PathBuf, Outcome)> {
    let image = tools_dir.join("images").join(name);
    let venv_text = venv.display().to_string();
    let packages_text = packages.join(" ");
    let stamp = image_dir::Stamp::new(&image, &[&venv_text, manifest, &packages_text]);
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
    if !packages.is_empty() {
        let mut arguments = vec![
            OsStr::new("--no-deps"),
            OsStr::new("--target"),
            pythonpath.as_os_str(),
        ];
        arguments.extend(packages.iter().map(OsStr::new));
        process::pip_install(&venv.join("bin/python"), arguments)?;
    }
    stamp.seal(&image, manifest)?;
    Ok((image, Outcome::Installed))
}
