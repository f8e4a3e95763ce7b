//! The real Hadoop 3.4.2 client jars, taken from the PyPI sdist of pyspark, for tests that
//! load rendered HDFS client configuration ([`strata_testing::hadoop`]).
//!
//! These shaded client jars were taken from PyPI before Maven Central was reachable
//! here; the daemons' jars now come from Maven Central ([`super::hadoop_image`]). The sdist
//! is large (about 455 MB, 12 s to download here), so
//! only the four jars a client needs are extracted and the archive is deleted at once:
//! `hadoop-client-api` (Hadoop's own classes, not relocated), `hadoop-client-runtime` (its
//! third-party dependencies, relocated under `org.apache.hadoop.shaded`), and `slf4j-api`
//! plus `jcl-over-slf4j`, which the shaded jars leave out. No SLF4J provider is added: the
//! resolver silences the warning, and Hadoop's log lines are not wanted.
//!
//! A stamp next to the jars records the package, so a pin change downloads again. A fresh
//! install is proved by resolving a small HA configuration before the stamp is written.

use std::{
    collections::BTreeMap,
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, bail};

use super::{Outcome, process, venv::Venv};

/// The pinned PyPI package whose sdist carries the jars.
pub const PACKAGE: &str = "pyspark==4.1.4";
/// The sdist file `pip download` writes.
const SDIST: &str = "pyspark-4.1.4.tar.gz";
/// Where the jars sit inside the sdist.
const JARS_IN_SDIST: &str = "pyspark-4.1.4/deps/jars";
/// The jars kept, in class path order.
pub const JARS: [&str; 4] = [
    "hadoop-client-api-3.4.2.jar",
    "hadoop-client-runtime-3.4.2.jar",
    "slf4j-api-2.0.17.jar",
    "jcl-over-slf4j-2.0.17.jar",
];

/// The HA nameservice of the proof configuration.
const SAMPLE_NAMESERVICE: &str = "simple-hdfs";
/// The failover proxy provider the proof loads: Hadoop's own class name, unshaded.
const SAMPLE_PROVIDER: &str =
    "org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider";

/// Puts the jars into `tools_dir/hadoop-client` unless the stamp shows they are current;
/// returns that directory. Needs the venv of [`super::venv`] for `pip`.
pub fn ensure(tools_dir: &Path) -> anyhow::Result<(PathBuf, Outcome)> {
    let dir = tools_dir.join("hadoop-client");
    let stamp = dir.join("strata-package.txt");
    let current = fs::read_to_string(&stamp).is_ok_and(|found| found == PACKAGE)
        && JARS.iter().all(|jar| dir.join(jar).is_file());
    if current {
        return Ok((dir, Outcome::AlreadyPresent));
    }
    let python = Venv::at(&tools_dir.join("venv")).python;
    if !process::is_executable(&python) {
        bail!("{} is missing: provision the venv first", python.display());
    }
    let work = tools_dir.join("hadoop-client-download");
    if work.exists() {
        fs::remove_dir_all(&work).with_context(|| format!("cannot clean {}", work.display()))?;
    }
    fs::create_dir_all(&work).with_context(|| format!("cannot create {}", work.display()))?;
    fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;

    process::visible(
        Command::new(&python)
            .args(["-m", "pip", "download", "--disable-pip-version-check"])
            // No second copy of the archive in pip's cache; the sdist itself, not a wheel.
            .args(["--no-cache-dir", "--progress-bar", "off"])
            .args(["--no-deps", "--no-binary", ":all:"])
            .arg("--dest")
            .arg(&work)
            .arg(PACKAGE),
    )?;
    let sdist = work.join(SDIST);
    process::capture(
        Command::new("tar")
            .arg("-xzf")
            .arg(&sdist)
            .arg("-C")
            .arg(&work)
            .arg("--no-same-owner")
            .args(JARS.map(|jar| format!("{JARS_IN_SDIST}/{jar}"))),
    )?;
    fs::remove_file(&sdist).with_context(|| format!("cannot delete {}", sdist.display()))?;
    for jar in JARS {
        let from = work.join(JARS_IN_SDIST).join(jar);
        fs::rename(&from, dir.join(jar))
            .with_context(|| format!("cannot move {} into {}", from.display(), dir.display()))?;
    }

    prove(&work.join("sample"), &classpath(&dir))?;
    fs::write(&stamp, PACKAGE).with_context(|| format!("cannot write {}", stamp.display()))?;
    fs::remove_dir_all(&work).with_context(|| format!("cannot clean {}", work.display()))?;
    Ok((dir, Outcome::Installed))
}

/// The `java -cp` class path of the jars in `dir`.
pub fn classpath(dir: &Path) -> String {
    JARS.map(|jar| dir.join(jar).display().to_string())
        .join(":")
}

/// Resolves a two-namenode HA configuration in `sample` with the jars and checks what the
/// real client made of it.
fn prove(sample: &Path, classpath: &str) -> anyhow::Result<()> {
    let ns = SAMPLE_NAMESERVICE;
    let namenodes = [0, 1].map(|index| format!("{ns}-namenode-default-{index}"));
    let host = |nn: &str| format!("{nn}.{ns}-namenode-default.default.svc.cluster.local");
    let mut hdfs = vec![
        ("dfs.nameservices".to_owned(), ns.to_owned()),
        (format!("dfs.ha.namenodes.{ns}"), namenodes.join(",")),
        (
            format!("dfs.client.failover.proxy.provider.{ns}"),
            SAMPLE_PROVIDER.to_owned(),
        ),
    ];
    let mut expected = BTreeMap::from([
        ("fs.defaultFS".to_owned(), format!("hdfs://{ns}")),
        ("logical".to_owned(), "true".to_owned()),
        ("nameservices".to_owned(), ns.to_owned()),
        (format!("namenodes.{ns}"), namenodes.join(",")),
        (format!("failover.{ns}"), SAMPLE_PROVIDER.to_owned()),
        (format!("automatic-failover.{ns}"), "false".to_owned()),
    ]);
    for nn in &namenodes {
        for (kind, key, port) in [("rpc", "rpc-address", 8020), ("http", "http-address", 9870)] {
            let address = format!("{}:{port}", host(nn));
            hdfs.push((format!("dfs.namenode.{key}.{ns}.{nn}"), address.clone()));
            expected.insert(format!("{kind}.{ns}.{nn}"), address);
        }
    }
    let core = [("fs.defaultFS".to_owned(), format!("hdfs://{ns}"))];
    fs::create_dir_all(sample).with_context(|| format!("cannot create {}", sample.display()))?;
    for (file, properties) in [("core-site.xml", &core[..]), ("hdfs-site.xml", &hdfs[..])] {
        let path = sample.join(file);
        fs::write(&path, site_xml(properties))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }

    let java = process::which("java").context("java is needed to run the Hadoop client")?;
    let resolved = strata_testing::hadoop::resolve_with(&java, classpath, sample)
        .context("the Hadoop client jars could not resolve a sample configuration")?;
    if resolved != expected {
        bail!(
            "the Hadoop client resolved the sample configuration in {} unexpectedly:\n\
             expected {expected:#?}\nresolved {resolved:#?}",
            sample.display()
        );
    }
    Ok(())
}

/// A Hadoop `*-site.xml` with `properties`; the values here need no XML escaping.
fn site_xml(properties: &[(String, String)]) -> String {
    let body: String = properties
        .iter()
        .map(|(name, value)| {
            format!("  <property><name>{name}</name><value>{value}</value></property>\n")
        })
        .collect();
    format!("<?xml version=\"1.0\"?>\n<configuration>\n{body}</configuration>\n")
}
