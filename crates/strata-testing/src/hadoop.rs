//! What the real Hadoop client makes of a rendered HDFS client configuration.
//!
//! `cargo xtask test` provisions the Hadoop 3.4.2 client jars and exports their class path
//! as [`HADOOP_CLIENT_CLASSPATH`]. [`RESOLVER_SOURCE`] is a single-file Java program that
//! loads `core-site.xml` and `hdfs-site.xml` from a directory (nothing else: no defaults)
//! with `org.apache.hadoop.conf.Configuration`, resolves the HA addresses with
//! `DFSUtilClient` and loads the failover proxy provider class. It prints one `key=value`
//! line per fact, which [`resolve_client_config`] returns as a map:
//!
//! | key | value |
//! | --- | --- |
//! | `fs.defaultFS` | as configured, e.g. `hdfs://simple-hdfs` |
//! | `logical` | `true` when `fs.defaultFS` names a configured nameservice |
//! | `nameservices` | `dfs.nameservices`, comma-separated (empty when unset) |
//! | `namenodes.<ns>` | `dfs.ha.namenodes.<ns>`, comma-separated |
//! | `rpc.<ns>.<nn>` | `host:port` from `DFSUtilClient.getHaNnRpcAddresses` |
//! | `http.<ns>.<nn>` | `host:port` from `DFSUtilClient.getHaNnWebHdfsAddresses` (webhdfs) |
//! | `failover.<ns>` | the loaded class of `dfs.client.failover.proxy.provider.<ns>` |
//! | `automatic-failover.<ns>` | `dfs.ha.automatic-failover.enabled[.<ns>]`, strictly `true`/`false` |
//! | `ha.zookeeper.quorum` | as configured; absent when unset |
//!
//! Hosts are printed as configured and never looked up (the JVM gets an empty hosts file),
//! so Kubernetes FQDNs work offline. A namenode without an address, an address without a
//! port, an unknown provider class, a misspelt boolean or broken XML is a rejection: `Err`
//! with Hadoop's message.
//!
//! A missing tool variable, or a Java that cannot run the program, panics instead, like
//! [`tools::tool`]: a test that expects a rejection must not pass for want of Java.
//!
//! ```no_run
//! let facts = strata_testing::hadoop::resolve_client_config(std::path::Path::new("conf"))
//!     .expect("Hadoop accepts the rendered config");
//! assert_eq!(facts["failover.simple-hdfs"],
//!     "org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider");
//! ```

use std::{
    collections::BTreeMap,
    path::Path,
    process::{Command, Stdio},
};

use crate::tools::{self, HADOOP_CLIENT_CLASSPATH, JAVA};

/// The resolver: `java -cp <classpath> ResolveHdfsClientConfig.java <conf dir>`.
pub const RESOLVER_SOURCE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/java/ResolveHdfsClientConfig.java"
);

/// How the resolver starts each line it writes about a problem (see its `fail`).
const PROBLEM_PREFIX: &str = "ResolveHdfsClientConfig: ";

/// A short run needs no optimizing compiler: about 0.75 s instead of 1.1 s here.
const JVM_FLAGS: [&str; 2] = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"];

/// Why [`resolve_with`] returned no facts.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// Hadoop rejected the configuration; the message is the resolver's.
    #[error("Hadoop rejected {conf_dir}: {message}")]
    Rejected {
        /// The configuration directory.
        conf_dir: String,
        /// What the resolver printed, without its prefix.
        message: String,
    },
    /// The resolver itself could not run (no Java, wrong class path, compile error).
    #[error("the Hadoop client resolver could not run: {0}")]
    Broken(String),
}

/// The facts the real Hadoop client resolves from `conf_dir`, with the provisioned tools.
///
/// # Panics
///
/// When [`JAVA`] or [`HADOOP_CLIENT_CLASSPATH`] is not set, or the resolver cannot run.
pub fn resolve_client_config(conf_dir: &Path) -> Result<BTreeMap<String, String>, String> {
    let java = tools::tool(JAVA);
    let classpath =
        tools::required(HADOOP_CLIENT_CLASSPATH).unwrap_or_else(|missing| panic!("{missing}"));
    match resolve_with(&java, &classpath, conf_dir) {
        Ok(facts) => Ok(facts),
        Err(rejected @ ResolveError::Rejected { .. }) => Err(rejected.to_string()),
        Err(broken @ ResolveError::Broken(_)) => panic!("{broken}"),
    }
}

/// Runs the resolver with an explicit `java` and class path; `cargo xtask` uses this to
/// prove the jars work before exporting them.
pub fn resolve_with(
    java: &Path,
    classpath: &str,
    conf_dir: &Path,
) -> Result<BTreeMap<String, String>, ResolveError> {
    let output = Command::new(java)
        .args(JVM_FLAGS)
        .arg("-cp")
        .arg(classpath)
        .arg(RESOLVER_SOURCE)
        .arg(conf_dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|error| {
            ResolveError::Broken(format!("cannot start {}: {error}", java.display()))
        })?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(match stderr.trim().strip_prefix(PROBLEM_PREFIX) {
            Some(message) if output.status.code() == Some(1) => ResolveError::Rejected {
                conf_dir: conf_dir.display().to_string(),
                message: message.to_owned(),
            },
            _ => ResolveError::Broken(format!(
                "{} exited with {}: {stderr}",
                java.display(),
                output.status
            )),
        });
    }
    parse(&String::from_utf8_lossy(&output.stdout)).map_err(ResolveError::Broken)
}

/// The `key=value` lines of the resolver; a line without `=` or a repeated key is a bug.
fn parse(stdout: &str) -> Result<BTreeMap<String, String>, String> {
    let mut facts = BTreeMap::new();
    for line in stdout.lines() {
        let (key, value) = line
            .split_once('=')
            .ok_or_else(|| format!("the resolver printed a line without '=': {line:?}"))?;
        if facts.insert(key.to_owned(), value.to_owned()).is_some() {
            return Err(format!("the resolver printed {key} twice"));
        }
    }
    Ok(facts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_keeps_everything_after_the_first_equals_sign() {
        let facts = parse("fs.defaultFS=hdfs://simple-hdfs\nha.zookeeper.quorum=zk:2181/a=b\n")
            .expect("parses");
        assert_eq!(facts["fs.defaultFS"], "hdfs://simple-hdfs");
        assert_eq!(facts["ha.zookeeper.quorum"], "zk:2181/a=b");
    }

    #[test]
    fn parse_rejects_a_line_without_equals_and_a_repeated_key() {
        assert!(parse("no equals sign").is_err());
        assert!(parse("logical=true\nlogical=false").is_err());
    }

    const PROVIDER: &str =
        "org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider";

    /// A one-namenode HA client configuration whose failover provider is `provider`.
    fn write_conf(dir: &Path, provider: &str) {
        let property = |name: &str, value: &str| {
            format!("<property><name>{name}</name><value>{value}</value></property>")
        };
        let core = property("fs.defaultFS", "hdfs://simple-hdfs");
        let hdfs = [
            property("dfs.nameservices", "simple-hdfs"),
            property("dfs.ha.namenodes.simple-hdfs", "nn0"),
            property(
                "dfs.namenode.rpc-address.simple-hdfs.nn0",
                "nn0.hdfs.svc.cluster.local:8020",
            ),
            property(
                "dfs.namenode.http-address.simple-hdfs.nn0",
                "nn0.hdfs.svc.cluster.local:9870",
            ),
            property("dfs.client.failover.proxy.provider.simple-hdfs", provider),
        ]
        .concat();
        for (file, properties) in [("core-site.xml", core), ("hdfs-site.xml", hdfs)] {
            let xml = format!("<configuration>{properties}</configuration>");
            std::fs::write(dir.join(file), xml).expect("write config");
        }
    }

    #[test]
    #[ignore = "needs Java and the Hadoop client (STRATA_JAVA, STRATA_HADOOP_CLIENT_CLASSPATH); run by cargo xtask test"]
    fn the_real_client_resolves_addresses_and_rejects_an_unknown_provider() {
        let dir = tempfile::tempdir().expect("tempdir");
        write_conf(dir.path(), PROVIDER);
        let facts = resolve_client_config(dir.path()).expect("Hadoop accepts the config");
        assert_eq!(facts["failover.simple-hdfs"], PROVIDER);
        assert_eq!(
            facts["rpc.simple-hdfs.nn0"],
            "nn0.hdfs.svc.cluster.local:8020"
        );

        write_conf(dir.path(), "org.example.NoSuchProvider");
        let rejected = resolve_client_config(dir.path()).expect_err("Hadoop rejects the config");
        assert!(
            rejected.contains("org.example.NoSuchProvider not found"),
            "{rejected}"
        );
    }

    #[test]
    fn the_resolver_source_ships_with_the_crate() {
        let source = std::fs::read_to_string(RESOLVER_SOURCE).expect("resolver source");
        assert!(source.contains(&format!("\"{PROBLEM_PREFIX}\"")));
    }
}
