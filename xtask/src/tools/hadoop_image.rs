//! A local stand-in for the `apache/hadoop:3.4.2` image, for the pod runner's HDFS
//! daemons: a directory laid out as the image is (`opt/hadoop`), built from Maven
//! Central.
//!
//! - `opt/hadoop/share/hadoop/hdfs/lib`: the runtime class path of `hadoop-hdfs`,
//!   `hadoop-hdfs-client` and `hadoop-common` 3.4.2 (`xtask/maven/hadoop/pom.xml`,
//!   `mvn dependency:copy-dependencies`; Maven's own repository stays in `~/.m2`, outside
//!   `target/`, so a fresh clone downloads nothing again);
//! - `opt/hadoop/share/hadoop/hdfs/webapps`: the namenode's, datanode's and
//!   journalnode's web apps, from the `tests` jar of `hadoop-hdfs`, the only artifact
//!   that carries them (the HTTP servers find them on the class path);
//! - `opt/hadoop/bin/hdfs`: a stand-in for the image's launcher, which no registry ships
//!   (`hadoop_image/hdfs`: the same subcommands, main classes and JVM options).
//!
//! The manifest (`strata-image.json`) gives the image's `ENV` (`PATH` with
//! `/opt/hadoop/bin`), `WORKDIR` and user, for the pod runner.
//!
//! A stamp records the pom, the launcher and the manifest, so a change to either builds the directory
//! again. A fresh build is proved by `hdfs version` and by formatting a name directory
//! twice (the second format must refuse) before the stamp is written.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, bail};

use super::{Outcome, image_dir, process};

/// The Hadoop release the image stands in for.
pub const VERSION: &str = "3.4.2";
/// The pom that pins the jars.
const POM: &str = include_str!("../../maven/hadoop/pom.xml");
/// The stand-in launcher.
const LAUNCHER: &str = include_str!("hadoop_image/hdfs");
/// The artifact whose `webapps/` the HTTP servers need.
const WEBAPPS_ARTIFACT: &str = "org.apache.hadoop:hadoop-hdfs:3.4.2:jar:tests";
/// The file that artifact is copied to.
const WEBAPPS_JAR: &str = "hadoop-hdfs-3.4.2-tests.jar";

/// The image's `ENV`, `WORKDIR` and user (`hadoop`, 1000:100). No `JAVA_HOME`: the
/// launcher then runs the `java` on `PATH`, the host's.
fn manifest() -> String {
    image_dir::ImageManifest {
        references: &["docker.io/apache/hadoop:3.4.2", "apache/hadoop:3.4.2"],
        paths: &["/opt/hadoop"],
        env: &[
            ("HADOOP_HOME", "/opt/hadoop"),
            image_dir::SHORT_LIVED_JVM,
            ("HADOOP_CONF_DIR", "/opt/hadoop/etc/hadoop"),
            (
                "PATH",
                "/opt/hadoop/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            ),
        ],
        working_dir: "/opt/hadoop",
        user: (1000, 100),
    }
    .to_json()
}

/// Builds the image directory `tools_dir/images/apache-hadoop-3.4.2` unless its stamp is
/// current; returns it (the image's `/`, holding `opt/hadoop`). Needs `mvn`, `java` and
/// `python3`.
pub fn ensure(workspace: &Path, tools_dir: &Path) -> anyhow::Result<(PathBuf, Outcome)> {
    let image = tools_dir
        .join("images")
        .join(format!("apache-hadoop-{VERSION}"));
    let manifest = manifest();
    let stamp = image_dir::Stamp::new(&image, &[POM, LAUNCHER, &manifest]);
    if stamp.is_current() {
        return Ok((image, Outcome::AlreadyPresent));
    }
    let mvn = image_dir::maven()?;
    image_dir::recreate(&image)?;
    let home = image.join("opt").join("hadoop");
    let hdfs_share = home.join("share").join("hadoop").join("hdfs");
    let work = image.join("strata-work");
    for dir in [&hdfs_share, &work] {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }

    let pom = workspace
        .join("xtask")
        .join("maven")
        .join("hadoop")
        .join("pom.xml");
    image_dir::copy_dependencies(&mvn, &pom, &hdfs_share.join("lib"))?;
    image_dir::copy_artifact(&mvn, &pom, WEBAPPS_ARTIFACT, &work)?;
    extract_webapps(&work.join(WEBAPPS_JAR), &hdfs_share)?;

    let launcher = home.join("bin").join("hdfs");
    image_dir::write_executable(&launcher, LAUNCHER)?;
    prove(&launcher, &work)?;
    fs::remove_dir_all(&work).with_context(|| format!("cannot clean {}", work.display()))?;
    stamp.seal(&image, &manifest)?;
    Ok((image, Outcome::Installed))
}

/// Extracts the `webapps/` entries of `jar` into `dir`.
fn extract_webapps(jar: &Path, dir: &Path) -> anyhow::Result<()> {
    let python = process::which("python3").context("python3 is needed to unpack a jar")?;
    process::capture(
        Command::new(python)
            .arg("-c")
            .arg(
                "import sys, zipfile\n\
                 jar = zipfile.ZipFile(sys.argv[1])\n\
                 jar.extractall(sys.argv[2], [n for n in jar.namelist() if n.startswith('webapps/')])",
            )
            .arg(jar)
            .arg(dir),
    )
    .with_context(|| format!("cannot unpack the web apps of {}", jar.display()))?;
    for app in ["hdfs", "datanode", "journal", "static"] {
        let app_dir = dir.join("webapps").join(app);
        if !app_dir.is_dir() {
            bail!("{} holds no web app {app}", jar.display());
        }
    }
    Ok(())
}

/// `hdfs version` names the release, and a name directory formats once: a second
/// format refuses, as the operator's format script relies on.
fn prove(launcher: &Path, work: &Path) -> anyhow::Result<()> {
    let version = process::capture(Command::new(launcher).arg("version"))?;
    if !version
        .lines()
        .any(|line| line.trim() == format!("Hadoop {VERSION}"))
    {
        bail!("`hdfs version` did not name Hadoop {VERSION}:\n{version}");
    }
    let conf = work.join("conf");
    let name = work.join("name");
    fs::create_dir_all(&conf).with_context(|| format!("cannot create {}", conf.display()))?;
    let site = format!(
        "<?xml version=\"1.0\"?>\n<configuration>\n  <property><name>dfs.namenode.name.dir\
         </name><value>{}</value></property>\n</configuration>\n",
        name.display()
    );
    fs::write(conf.join("hdfs-site.xml"), site)
        .context("cannot write the proof's hdfs-site.xml")?;
    let format = |what: &str| {
        Command::new(launcher)
            .args(["namenode", "-format", "-nonInteractive"])
            .env("HADOOP_CONF_DIR", &conf)
            .env("HADOOP_LOG_DIR", work.join("log"))
            .output()
            .with_context(|| format!("cannot run {} for the {what} format", launcher.display()))
    };
    let first = format("first")?;
    if !first.status.success() || !name.join("current").join("VERSION").is_file() {
        bail!(
            "`hdfs namenode -format` did not format {}:\n{}",
            name.display(),
            String::from_utf8_lossy(&first.stderr)
        );
    }
    let second = format("second")?;
    if second.status.code() != Some(1) {
        bail!(
            "a second `hdfs namenode -format -nonInteractive` should refuse with exit code 1, \
             not {}",
            second.status
        );
    }
    Ok(())
}
