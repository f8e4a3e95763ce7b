//! A local stand-in for the `docker.io/library/zookeeper:3.9.5` image, for the pod
//! runner's ZooKeeper servers: a directory laid out as the image is
//! (`apache-zookeeper-3.9.5-bin` with `lib/` and `bin/`), with the jars of
//! `org.apache.zookeeper:zookeeper` and `zookeeper-prometheus-metrics` 3.9.5 from Maven
//! Central (`xtask/maven/zookeeper/pom.xml`) and a stand-in `bin/zkServer.sh`
//! (`zookeeper_image/zkServer.sh`), since no registry ships the image's launcher.
//!
//! The manifest gives the image's `ENV` (its `PATH` ends in the distribution's `bin`,
//! `ZOOCFGDIR=/conf`), `WORKDIR` and user (`zookeeper`, 1000:1000). A stamp records
//! the pom, the launcher and the manifest; a fresh build is proved by `zkServer.sh
//! version` naming 3.9.5.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::bail;

use super::{Outcome, image_dir, process};

/// The ZooKeeper release the image stands in for.
pub const VERSION: &str = "3.9.5";
/// The pom that pins the jars.
const POM: &str = include_str!("../../maven/zookeeper/pom.xml");
/// The stand-in launcher.
const LAUNCHER: &str = include_str!("zookeeper_image/zkServer.sh");
/// The distribution's directory in the image.
pub const DISTRIBUTION: &str = "/apache-zookeeper-3.9.5-bin";

fn manifest() -> String {
    image_dir::ImageManifest {
        references: &["docker.io/library/zookeeper:3.9.5", "zookeeper:3.9.5"],
        paths: &[DISTRIBUTION],
        env: &[
            (
                "PATH",
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/apache-zookeeper-3.9.5-bin/bin",
            ),
            ("ZOO_CONF_DIR", "/conf"),
            image_dir::SHORT_LIVED_JVM,
            ("ZOO_DATA_DIR", "/data"),
            ("ZOO_DATA_LOG_DIR", "/datalog"),
            ("ZOO_LOG_DIR", "/logs"),
            ("ZOOCFGDIR", "/conf"),
        ],
        working_dir: DISTRIBUTION,
        user: (1000, 1000),
    }
    .to_json()
}

/// Builds the image directory `tools_dir/images/zookeeper-3.9.5` unless its stamp is
/// current; returns it (the image's `/`). Needs `mvn` and `java`.
pub fn ensure(workspace: &Path, tools_dir: &Path) -> anyhow::Result<(PathBuf, Outcome)> {
    let image = tools_dir
        .join("images")
        .join(format!("zookeeper-{VERSION}"));
    let manifest = manifest();
    let stamp = image_dir::Stamp::new(&image, &[POM, LAUNCHER, &manifest]);
    if stamp.is_current() {
        return Ok((image, Outcome::AlreadyPresent));
    }
    let mvn = image_dir::maven()?;
    image_dir::recreate(&image)?;
    let home = image.join(DISTRIBUTION.trim_start_matches('/'));
    let pom = workspace
        .join("xtask")
        .join("maven")
        .join("zookeeper")
        .join("pom.xml");
    image_dir::copy_dependencies(&mvn, &pom, &home.join("lib"))?;
    let launcher = home.join("bin").join("zkServer.sh");
    image_dir::write_executable(&launcher, LAUNCHER)?;
    let version = process::capture(Command::new(&launcher).arg("version"))?;
    if !version.contains(&format!("version {VERSION}")) {
        bail!("`zkServer.sh version` did not name ZooKeeper {VERSION}:\n{version}");
    }
    stamp.seal(&image, &manifest)?;
    Ok((image, Outcome::Installed))
}
