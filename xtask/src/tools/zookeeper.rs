//! ZooKeeper 3.9.5 for the tests that start servers outside the pod runner (the
//! loopback harness of `operators/zookeeper/tests/real_zookeeper`, the sandbox's
//! ZooKeeper and its CLI): the jars of the image directory ([`super::zookeeper_image`]),
//! the same release the operator deploys, with a `logback.xml` of ours first on the
//! class path. Without one, logback logs everything at DEBUG. Before 2026-11-27 this
//! was Debian's `zookeeper` package, release 3.8.

use std::{
    fs,
    path::{Path, PathBuf},
};

use anyhow::Context;

use super::{Outcome, process, zookeeper_image};

/// The logging configuration: INFO and above, to the console (the harness sends the
/// server's output to its log file).
const LOGBACK: &str = include_str!("zookeeper_image/logback.xml");

/// What tests need to start ZooKeeper.
#[derive(Debug, Clone)]
pub struct ZooKeeper {
    /// The distribution directory inside the image directory
    /// (`apache-zookeeper-3.9.5-bin`).
    pub home: PathBuf,
    /// Class path for `java -cp`: the logging configuration, then `lib/*`.
    pub classpath: String,
    /// The `java` found on `PATH`.
    pub java: PathBuf,
}

/// The class path of the image directory `image`, with the logging configuration written
/// under `tools_dir`.
pub fn ensure(image: &Path, tools_dir: &Path) -> anyhow::Result<(ZooKeeper, Outcome)> {
    let home = image.join(zookeeper_image::DISTRIBUTION.trim_start_matches('/'));
    let logging = tools_dir.join("zookeeper-logging");
    fs::create_dir_all(&logging).with_context(|| format!("cannot create {}", logging.display()))?;
    let config = logging.join("logback.xml");
    let outcome = if fs::read_to_string(&config).is_ok_and(|found| found == LOGBACK) {
        Outcome::AlreadyPresent
    } else {
        fs::write(&config, LOGBACK)
            .with_context(|| format!("cannot write {}", config.display()))?;
        Outcome::Installed
    };
    let classpath = format!("{}:{}/lib/*", logging.display(), home.display());
    let java = process::which("java").context("java is needed to run ZooKeeper")?;
    Ok((
        ZooKeeper {
            home,
            classpath,
            java,
        },
        outcome,
    ))
}
