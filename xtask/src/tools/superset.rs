//! Apache Superset 6.1.0 from PyPI and PostgreSQL from Debian, for tests that run the real
//! product with the operator's rendered `superset_config.py` ([`strata_testing::superset`],
//! [`strata_testing::postgres`]).
//!
//! - **Superset** gets its own venv, `target/tools/superset-venv`: it pins Flask, SQLAlchemy
//!   and about 150 other packages that must not meet kubernetes-validate's. A plain
//!   `pip install apache-superset==6.1.0` cannot start (see the Superset section of
//!   PRODUCTS.md), so [`REQUIREMENTS`] adds the pins that make it start, and the image's Celery and kombu. No database
//!   driver is installed: the tests put the operator's pg8000 wheels on `PYTHONPATH`, as a
//!   pod does. The venv is made from Debian's `/usr/bin/python3`, which every user can
//!   run (the pod runner runs it as uid 1000). A stamp records the requirements and that
//!   Python, as in [`super::venv`]; a fresh install is proved by `superset version` before
//!   the stamp is written.
//! - **PostgreSQL** is the Debian package `postgresql`, installed with apt when missing and
//!   this is root, as `python3-venv` is. Its server programs live in
//!   `/usr/lib/postgresql/<major>/bin`, off `PATH`; the newest major found there is used.
//! - **Redis** is the Debian package `redis-server`, installed the same way, for the
//!   Celery tests' broker. Its own service is not started (the machine's `policy-rc.d`
//!   refuses service starts); each test runs a server of its own in a pod.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, bail};

use super::{Outcome, process};

/// The pinned PyPI requirements, one per line in the stamp file.
///
/// Celery and kombu are pinned to the image's own versions (Superset's
/// `requirements/base.txt`): `apache-superset` allows any Celery 5, and pip then takes
/// kombu 5.7, whose Redis transport refuses the redis-py 5 that Superset pins
/// ("Redis transport requires redis-py versions 6.1.0 or later"), so no worker could
/// reach its broker, unlike in the image.
pub const REQUIREMENTS: [&str; 6] = [
    "apache-superset==6.1.0",
    "flask-caching==2.4.1",
    "flask-limiter<4",
    "cachetools",
    "celery==5.5.2",
    "kombu==5.5.3",
];

/// The Python the venv is made from: the system's, which every user can run. The pod
/// runner runs the venv as the image's user (uid 1000), who cannot enter a Python
/// installed under `/root` (pyenv's, first on `PATH` on the development machine).
const SYSTEM_PYTHON: &str = "/usr/bin/python3";

/// Where Debian installs each PostgreSQL major version, as `<major>/bin`.
pub const POSTGRESQL_LIB: &str = "/usr/lib/postgresql";
/// The server programs the tests run from the bin directory.
pub const POSTGRESQL_PROGRAMS: [&str; 4] = ["initdb", "postgres", "pg_isready", "psql"];

/// Where Debian installs the Redis server.
pub const REDIS_SERVER: &str = "/usr/bin/redis-server";

/// A key that only `superset version` at provisioning sees: with the default key Superset
/// refuses to start.
const PROOF_SECRET_KEY: &str = "strata-provisioning-proof-only";

/// What the Superset tests need.
#[derive(Debug, Clone)]
pub struct Superset {
    /// The venv directory (`bin/superset`, `bin/gunicorn`, `bin/python`).
    pub venv: PathBuf,
    /// The directory holding `initdb`, `postgres`, `pg_isready` and `psql`.
    pub postgresql_bin: PathBuf,
    /// The Redis server, Celery's broker in the tests.
    pub redis_server: PathBuf,
}

impl Superset {
    /// The `apache-superset` version installed in the venv, read from its metadata (fast;
    /// `superset version` takes about 4 s).
    pub fn version(&self) -> anyhow::Result<String> {
        process::capture(Command::new(self.venv.join("bin/python")).args([
            "-c",
            "import importlib.metadata as m; print('apache-superset', m.version('apache-superset'))",
        ]))
    }
}

/// Creates the Superset venv unless its stamp is current, and installs PostgreSQL when it
/// is missing; `Installed` when either did work.
pub fn ensure(tools_dir: &Path) -> anyhow::Result<(Superset, Outcome)> {
    let (venv, venv_outcome) = ensure_venv(tools_dir)?;
    let (postgresql_bin, postgresql_outcome) = ensure_postgresql()?;
    let redis_outcome = ensure_redis()?;
    let outcome = if [venv_outcome, postgresql_outcome, redis_outcome].contains(&Outcome::Installed)
    {
        Outcome::Installed
    } else {
        Outcome::AlreadyPresent
    };
    Ok((
        Superset {
            venv,
            postgresql_bin,
            redis_server: PathBuf::from(REDIS_SERVER),
        },
        outcome,
    ))
}

/// The venv at `tools_dir/superset-venv`, created or updated unless the stamp is current.
fn ensure_venv(tools_dir: &Path) -> anyhow::Result<(PathBuf, Outcome)> {
    let dir = tools_dir.join("superset-venv");
    let python = dir.join("bin/python");
    let superset = dir.join("bin/superset");
    let stamp = dir.join("strata-requirements.txt");
    let wanted = format!("{}\npython: {SYSTEM_PYTHON}", REQUIREMENTS.join("\n"));
    let current = fs::read_to_string(&stamp).is_ok_and(|found| found == wanted)
        && process::is_executable(&superset)
        && process::is_executable(&dir.join("bin/gunicorn"));
    if current {
        portable_shebangs(&dir)?;
        return Ok((dir, Outcome::AlreadyPresent));
    }
    if fs::read_to_string(&stamp)
        .is_ok_and(|found| !found.ends_with(&format!("python: {SYSTEM_PYTHON}")))
    {
        fs::remove_dir_all(&dir).with_context(|| format!("cannot remove {}", dir.display()))?;
    }
    if !process::is_executable(&python) {
        ensure_system_venv_module()?;
        process::visible(Command::new(SYSTEM_PYTHON).args(["-m", "venv"]).arg(&dir))?;
    }
    process::pip_install(&python, REQUIREMENTS)?;
    portable_shebangs(&dir)?;
    prove(&dir)?;
    fs::write(&stamp, wanted).with_context(|| format!("cannot write {}", stamp.display()))?;
    Ok((dir, Outcome::Installed))
}

/// Rewrites the venv's scripts (`superset`, `gunicorn`, ...) to start the `python` found
/// on `PATH`, not the venv's own path: in a pod the venv is at `/app/.venv`, as in the
/// image, and its path on this machine may be hidden (a clone under `/tmp` is, by the
/// pod's `/tmp` volume). Every user of the venv puts its `bin` first on `PATH`, as the
/// image does. Idempotent.
fn portable_shebangs(venv: &Path) -> anyhow::Result<()> {
    let bin = venv.join("bin");
    let own = [
        format!("#!{}\n", bin.join("python").display()),
        format!("#!{}\n", bin.join("python3").display()),
    ];
    let entries = fs::read_dir(&bin).with_context(|| format!("cannot list {}", bin.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_type().map_or(true, |kind| !kind.is_file()) {
            continue;
        }
        let Ok(text) = fs::read_to_string(&path) else {
            continue;
        };
        if let Some(rest) = own.iter().find_map(|line| text.strip_prefix(line.as_str())) {
            fs::write(&path, format!("#!/usr/bin/env python\n{rest}"))
                .with_context(|| format!("cannot rewrite {}", path.display()))?;
        }
    }
    Ok(())
}

/// `superset version` must start the application: that is where the missing pins show.
/// Its home is a scratch directory, because the command creates a SQLite database there.
fn prove(venv: &Path) -> anyhow::Result<()> {
    let home = venv.join("strata-proof-home");
    fs::create_dir_all(&home).with_context(|| format!("cannot create {}", home.display()))?;
    let banner = process::capture(
        Command::new(venv.join("bin/superset"))
            .arg("version")
            .env(
                "PATH",
                format!("{}:/usr/bin:/bin", venv.join("bin").display()),
            )
            .current_dir(&home)
            .env("SUPERSET_SECRET_KEY", PROOF_SECRET_KEY)
            .env("SUPERSET_HOME", &home)
            .env_remove("SUPERSET_CONFIG_PATH")
            .env_remove("PYTHONPATH"),
    )?;
    fs::remove_dir_all(&home).with_context(|| format!("cannot clean {}", home.display()))?;
    if !banner.contains("Superset") {
        bail!("`superset version` printed no version banner:\n{banner}");
    }
    Ok(())
}

/// Debian's `python3` with its venv module (`python3-venv`), installed with apt when
/// missing and this is root; otherwise an error that says what to install.
fn ensure_system_venv_module() -> anyhow::Result<()> {
    let has_venv = || {
        Command::new(SYSTEM_PYTHON)
            .args(["-c", "import venv, ensurepip"])
            .output()
            .is_ok_and(|output| output.status.success())
    };
    if has_venv() {
        return Ok(());
    }
    if !process::is_root() {
        bail!(
            "{SYSTEM_PYTHON} with its venv module is needed for the Superset venv and this is \
             not root: run `apt-get install python3-venv` as root, then rerun"
        );
    }
    process::apt_install("python3-venv")?;
    if !has_venv() {
        bail!("apt-get installed python3-venv, but {SYSTEM_PYTHON} still has no venv module");
    }
    Ok(())
}

/// Installs the `postgresql` package when no server is found and this is root; returns the
/// bin directory of the newest major version.
fn ensure_postgresql() -> anyhow::Result<(PathBuf, Outcome)> {
    if let Some(bin) = postgresql_bin(Path::new(POSTGRESQL_LIB)) {
        return Ok((bin, Outcome::AlreadyPresent));
    }
    if !process::is_root() {
        bail!(
            "PostgreSQL is missing and this is not root: run `apt-get install postgresql` \
             as root, then rerun"
        );
    }
    process::apt_install("postgresql")?;
    let bin = postgresql_bin(Path::new(POSTGRESQL_LIB)).with_context(|| {
        format!(
            "apt-get installed postgresql, but no {POSTGRESQL_LIB}/<major>/bin holds {}",
            POSTGRESQL_PROGRAMS.join(", ")
        )
    })?;
    Ok((bin, Outcome::Installed))
}

/// Installs the `redis-server` package when its server is missing and this is root.
fn ensure_redis() -> anyhow::Result<Outcome> {
    if process::is_executable(Path::new(REDIS_SERVER)) {
        return Ok(Outcome::AlreadyPresent);
    }
    if !process::is_root() {
        bail!(
            "Redis is missing and this is not root: run `apt-get install redis-server` as \
             root, then rerun"
        );
    }
    process::apt_install("redis-server")?;
    if !process::is_executable(Path::new(REDIS_SERVER)) {
        bail!("apt-get installed redis-server, but {REDIS_SERVER} is not there");
    }
    Ok(Outcome::Installed)
}

/// `<lib>/<major>/bin` of the highest numeric major whose bin holds every program of
/// [`POSTGRESQL_PROGRAMS`].
fn postgresql_bin(lib: &Path) -> Option<PathBuf> {
    let entries = fs::read_dir(lib).ok()?;
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let major: u32 = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            POSTGRESQL_PROGRAMS
                .iter()
                .all(|program| process::is_executable(&bin.join(program)))
                .then_some((major, bin))
        })
        .max_by_key(|(major, _)| *major)
        .map(|(_, bin)| bin)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn fake_major(lib: &Path, major: &str, programs: &[&str]) {
        use std::os::unix::fs::PermissionsExt;
        let bin = lib.join(major).join("bin");
        fs::create_dir_all(&bin).unwrap();
        for program in programs {
            let path = bin.join(program);
            fs::write(&path, "#!/bin/sh\n").unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        }
    }

    #[test]
    fn postgresql_bin_takes_the_newest_complete_major() {
        let lib = tempfile::tempdir().unwrap();
        fake_major(lib.path(), "9", &POSTGRESQL_PROGRAMS);
        fake_major(lib.path(), "15", &POSTGRESQL_PROGRAMS);
        // Newer, but only the client: no server to run.
        fake_major(lib.path(), "17", &["psql", "pg_isready"]);
        fake_major(lib.path(), "not-a-version", &POSTGRESQL_PROGRAMS);
        assert_eq!(
            postgresql_bin(lib.path()),
            Some(lib.path().join("15").join("bin"))
        );
    }

    #[test]
    fn postgresql_bin_is_none_without_the_directory() {
        let lib = tempfile::tempdir().unwrap();
        assert_eq!(postgresql_bin(&lib.path().join("missing")), None);
    }
}
