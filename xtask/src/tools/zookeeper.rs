//! Apache ZooKeeper from the Debian package `zookeeper`, for tests against a real server.
//!
//! The package puts scripts under `/usr/share/zookeeper/bin` and jars under
//! `/usr/share/java`; `zookeeper.jar` names its dependencies in its manifest `Class-Path`,
//! so it alone starts a server. `slf4j-simple.jar` (from `libslf4j-java`, a dependency)
//! is added so the server logs to stderr instead of discarding its messages.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, bail};

use super::{Outcome, process};

/// Where the Debian package installs its scripts.
pub const HOME: &str = "/usr/share/zookeeper";
/// The server jar; its manifest pulls in the rest of the class path.
pub const SERVER_JAR: &str = "/usr/share/java/zookeeper.jar";
/// An SLF4J binding that logs to stderr.
pub const LOGGING_JAR: &str = "/usr/share/java/slf4j-simple.jar";

/// What tests need to start ZooKeeper.
#[derive(Debug, Clone)]
pub struct ZooKeeper {
    /// The package directory ([`HOME`]).
    pub home: PathBuf,
    /// Class path for `java -cp`.
    pub classpath: String,
    /// The `java` found on `PATH`.
    pub java: PathBuf,
}

/// Installs the package with apt when it is missing and we are root; otherwise explains.
pub fn ensure() -> anyhow::Result<(ZooKeeper, Outcome)> {
    let installed =
        || Path::new(HOME).join("bin/zkServer.sh").exists() && Path::new(SERVER_JAR).exists();
    let outcome = if installed() {
        Outcome::AlreadyPresent
    } else {
        if !process::is_root() {
            bail!(
                "ZooKeeper is missing and this is not root: run `apt-get install zookeeper` \
                 as root, then rerun"
            );
        }
        process::visible(Command::new("apt-get").args(["update", "-qq"]))?;
        process::visible(
            Command::new("apt-get")
                .args([
                    "install",
                    "-y",
                    "-qq",
                    "--no-install-recommends",
                    "zookeeper",
                ])
                .env("DEBIAN_FRONTEND", "noninteractive"),
        )?;
        if !installed() {
            bail!("apt-get installed zookeeper, but {SERVER_JAR} or {HOME}/bin is missing");
        }
        Outcome::Installed
    };
    let classpath = [SERVER_JAR, LOGGING_JAR]
        .into_iter()
        .filter(|jar| Path::new(jar).exists())
        .collect::<Vec<_>>()
        .join(":");
    let java = process::which("java").context("java is needed to run ZooKeeper")?;
    Ok((
        ZooKeeper {
            home: PathBuf::from(HOME),
            classpath,
            java,
        },
        outcome,
    ))
}
