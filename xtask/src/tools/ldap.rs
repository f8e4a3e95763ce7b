//! LDAP for the login tests: Debian's OpenLDAP server, and python-ldap as a Superset
//! image that carries it would have it.
//!
//! - **slapd** is the Debian package, installed with apt when missing and this is
//!   root. Each test runs a slapd of its own, from a `slapd.conf` of its own, on a
//!   loopback address (`strata_testing::slapd`). The package's own server is not
//!   started (the machine's `policy-rc.d` refuses service starts), and one that runs
//!   anyway is stopped: it would listen on every address.
//! - **python-ldap**: the 6.1.0 image dropped it (apache/superset#30553), so the
//!   operator refuses LDAP on the stock image, and `docs/superset.md` gives the
//!   derived image that adds it. Here it is `pip install --target` of the pinned
//!   release, which PyPI ships as an sdist only,
//!   with the Superset venv's Python, built against Debian's `libldap2-dev` and
//!   `libsasl2-dev` as the derived image builds it. A test puts the directory on
//!   `PYTHONPATH`, where the derived image has the package in its venv. A stamp records
//!   the pin and the Python; `import ldap` proves the build before it is written.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, bail};

use super::{Outcome, process};

/// The pinned python-ldap release (PyPI).
pub const PYTHON_LDAP: &str = "python-ldap==3.4.8";

/// The Debian packages: the server, and what python-ldap builds with and against.
const PACKAGES: [&str; 5] = [
    "slapd",
    "libldap2-dev",
    "libsasl2-dev",
    "gcc",
    "python3-dev",
];

/// Where Debian installs the server.
pub const SLAPD: &str = "/usr/sbin/slapd";

/// What the LDAP tests need.
#[derive(Debug, Clone)]
pub struct Ldap {
    /// The slapd binary.
    pub slapd: PathBuf,
    /// The directory holding the `ldap` package (and its dependencies), for
    /// `PYTHONPATH`.
    pub python_ldap: PathBuf,
}

/// Installs slapd and the build dependencies when missing, and builds python-ldap for
/// the Superset venv unless its stamp is current.
pub fn ensure(tools_dir: &Path, superset_venv: &Path) -> anyhow::Result<(Ldap, Outcome)> {
    let packages_outcome = ensure_packages()?;
    let (python_ldap, build_outcome) = ensure_python_ldap(tools_dir, superset_venv)?;
    let outcome = if packages_outcome == Outcome::Installed || build_outcome == Outcome::Installed {
        Outcome::Installed
    } else {
        Outcome::AlreadyPresent
    };
    Ok((
        Ldap {
            slapd: PathBuf::from(SLAPD),
            python_ldap,
        },
        outcome,
    ))
}

fn ensure_packages() -> anyhow::Result<Outcome> {
    let headers = ["/usr/include/ldap.h", "/usr/include/sasl/sasl.h"];
    let python_headers = fs::read_dir("/usr/include").is_ok_and(|entries| {
        entries
            .flatten()
            .any(|entry| entry.path().join("Python.h").exists())
    });
    if process::is_executable(Path::new(SLAPD))
        && process::which("gcc").is_some()
        && python_headers
        && headers.iter().all(|h| Path::new(h).exists())
    {
        return Ok(Outcome::AlreadyPresent);
    }
    if !process::is_root() {
        bail!(
            "slapd or the LDAP headers are missing and this is not root: run `apt-get install \
             {}` as root, then rerun",
            PACKAGES.join(" ")
        );
    }
    process::visible(Command::new("apt-get").args(["update", "-qq"]))?;
    process::visible(
        Command::new("apt-get")
            .args(["install", "-y", "-qq", "--no-install-recommends"])
            .args(PACKAGES)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )?;
    // The package's own server, should it have started, listens on every address.
    if Path::new("/run/slapd/slapd.pid").exists() {
        process::visible(Command::new("/etc/init.d/slapd").arg("stop"))?;
    }
    if !process::is_executable(Path::new(SLAPD)) {
        bail!("apt-get installed slapd, but {SLAPD} is missing");
    }
    Ok(Outcome::Installed)
}

fn ensure_python_ldap(tools_dir: &Path, venv: &Path) -> anyhow::Result<(PathBuf, Outcome)> {
    let dir = tools_dir.join("python-ldap");
    let python = venv.join("bin/python");
    let stamp = dir.join("strata-requirements.txt");
    let wanted = format!("{PYTHON_LDAP}\npython: {}", python.display());
    if fs::read_to_string(&stamp).is_ok_and(|found| found == wanted) {
        return Ok((dir, Outcome::AlreadyPresent));
    }
    if dir.exists() {
        fs::remove_dir_all(&dir).with_context(|| format!("cannot remove {}", dir.display()))?;
    }
    process::pip_install(
        &python,
        [
            std::ffi::OsStr::new("--target"),
            dir.as_os_str(),
            std::ffi::OsStr::new(PYTHON_LDAP),
        ],
    )?;
    let version = process::capture(
        Command::new(&python)
            .args(["-c", "import ldap; print(ldap.__version__)"])
            .env("PYTHONPATH", &dir),
    )?;
    let pinned = PYTHON_LDAP.rsplit("==").next().unwrap_or_default();
    if version.trim() != pinned {
        bail!(
            "python-ldap in {} reports {version:?}, not {pinned}",
            dir.display()
        );
    }
    fs::write(&stamp, wanted).with_context(|| format!("cannot write {}", stamp.display()))?;
    Ok((dir, Outcome::Installed))
}
