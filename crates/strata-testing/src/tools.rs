//! The environment contract between `cargo xtask test` and tests that need external tools.
//!
//! `cargo xtask test` provisions the tools and exports these variables; a test marked
//! `#[ignore = "needs <tool>; run by cargo xtask test"]` reads them with [`tool`] or
//! [`required`] and
//! fails with a clear message when they are missing, so a forgotten variable can never
//! turn into a silently skipped check.

use std::path::PathBuf;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// Path of the `helm` v4 binary.
pub const HELM: &str = "STRATA_HELM";
/// Path of the `kubectl` binary (client only; there is no cluster).
pub const KUBECTL: &str = "STRATA_KUBECTL";
/// Path of the `kubernetes-validate` executable.
pub const KUBERNETES_VALIDATE: &str = "STRATA_KUBERNETES_VALIDATE";
/// Newest Kubernetes version whose schemas the installed kubernetes-validate ships; pass it as `-k`.
pub const KUBERNETES_VERSION: &str = "STRATA_KUBERNETES_VERSION";
/// Path of the `hadolint` binary.
pub const HADOLINT: &str = "STRATA_HADOLINT";
/// Path of the `java` binary that runs ZooKeeper and the Hadoop client.
pub const JAVA: &str = "STRATA_JAVA";
/// Directory of the Debian ZooKeeper package (`bin/zkServer.sh`, `bin/zkCli.sh`).
pub const ZOOKEEPER_HOME: &str = "STRATA_ZOOKEEPER_HOME";
/// Java class path that runs a ZooKeeper server: `java -cp $CP org.apache.zookeeper.server.quorum.QuorumPeerMain zoo.cfg`.
pub const ZOOKEEPER_CLASSPATH: &str = "STRATA_ZOOKEEPER_CLASSPATH";
/// Java class path of the Hadoop 3.4.2 client jars, for [`crate::hadoop`]:
/// `$STRATA_JAVA -cp $CP ResolveHdfsClientConfig.java <conf dir>`.
pub const HADOOP_CLIENT_CLASSPATH: &str = "STRATA_HADOOP_CLIENT_CLASSPATH";
/// Directory of the venv with Apache Superset 6.1.0 (`bin/superset`, `bin/gunicorn`) and no
/// database driver, for [`crate::superset`].
pub const SUPERSET_VENV: &str = "STRATA_SUPERSET_VENV";
/// Directory of the PostgreSQL server programs (`initdb`, `postgres`, `pg_isready`, `psql`),
/// such as `/usr/lib/postgresql/15/bin`, for [`crate::postgres`].
pub const POSTGRESQL_BIN: &str = "STRATA_POSTGRESQL_BIN";

/// Path of Debian's Redis server, Celery's broker in the Superset tests.
pub const REDIS_SERVER: &str = "STRATA_REDIS_SERVER";

/// Directory of the Kubernetes control-plane binaries built from pinned Go modules:
/// `etcd`, `kube-apiserver`, `kube-controller-manager`, `kube-scheduler` and `kwok`,
/// for [`crate::control_plane`].
pub const CONTROL_PLANE_BIN: &str = "STRATA_CONTROL_PLANE_BIN";

/// The local stand-in for the `apache/hadoop:3.4.2` image: the directory that holds
/// `opt/hadoop` (`bin/hdfs`, the jars from Maven Central, the HDFS web apps), for the
/// pod runner.
pub const HADOOP_IMAGE: &str = "STRATA_HADOOP_IMAGE";

/// The local stand-in for the `zookeeper:3.9.5` image: the directory that holds
/// `apache-zookeeper-3.9.5-bin` (`bin/zkServer.sh`, the jars from Maven Central), for
/// the pod runner.
pub const ZOOKEEPER_IMAGE: &str = "STRATA_ZOOKEEPER_IMAGE";

/// The local stand-in for the `trinodb/trino:483` image: the directory that holds
/// `usr/lib/trino` (the real launcher, the server's and the plugins' jars from Maven
/// Central), for the pod runner.
pub const TRINO_IMAGE: &str = "STRATA_TRINO_IMAGE";

/// The local stand-in for the `apache/superset:6.1.0` image: the directory that holds
/// `app/.venv` (a link to the Superset venv) and `app/pythonpath`, for the pod runner.
pub const SUPERSET_IMAGE: &str = "STRATA_SUPERSET_IMAGE";

/// The stand-in for a derived Superset image with the Trino client
/// (`registry.example.com/superset-trino:6.1.0`), for `trinoConnections`.
pub const SUPERSET_TRINO_IMAGE: &str = "STRATA_SUPERSET_TRINO_IMAGE";

/// Path of Debian's OpenLDAP server, for [`crate::slapd`].
pub const SLAPD: &str = "STRATA_SLAPD";

/// Directory holding python-ldap built for the Superset venv, which a test puts on
/// `PYTHONPATH` as a derived Superset image has it in its venv.
pub const PYTHON_LDAP: &str = "STRATA_PYTHON_LDAP";

/// Directory of mock-oauth2-server's class path (`java -cp '<dir>/*'`), for
/// [`crate::oidc`].
pub const OIDC_PROVIDER_LIB: &str = "STRATA_OIDC_PROVIDER_LIB";

/// Path of Prometheus' `promtool`, which unit-tests the operators' alert rules.
pub const PROMTOOL: &str = "STRATA_PROMTOOL";

/// Directory with the Prometheus Operator's ServiceMonitor and PrometheusRule CRDs
/// (`monitoring.coreos.com_*.yaml`), which real-control-plane tests install.
pub const PROMETHEUS_OPERATOR_CRDS: &str = "STRATA_PROMETHEUS_OPERATOR_CRDS";

/// Directory with the Gateway API's GatewayClass, Gateway, HTTPRoute and BackendTLSPolicy CRDs
/// (`gateway.networking.k8s.io_*.yaml`, standard channel), which real-control-plane
/// tests install.
pub const GATEWAY_API_CRDS: &str = "STRATA_GATEWAY_API_CRDS";

/// The local stand-in for the `quay.io/prometheus/statsd-exporter` image, the
/// Superset pods' metrics sidecar.
pub const STATSD_EXPORTER_IMAGE: &str = "STRATA_STATSD_EXPORTER_IMAGE";

/// Every variable `cargo xtask test` exports, for docs and for the `tools` command.
pub const ALL: [&str; 25] = [
    HELM,
    KUBECTL,
    KUBERNETES_VALIDATE,
    KUBERNETES_VERSION,
    HADOLINT,
    JAVA,
    ZOOKEEPER_HOME,
    ZOOKEEPER_CLASSPATH,
    HADOOP_CLIENT_CLASSPATH,
    SUPERSET_VENV,
    POSTGRESQL_BIN,
    REDIS_SERVER,
    CONTROL_PLANE_BIN,
    HADOOP_IMAGE,
    ZOOKEEPER_IMAGE,
    TRINO_IMAGE,
    SUPERSET_IMAGE,
    SUPERSET_TRINO_IMAGE,
    SLAPD,
    PYTHON_LDAP,
    OIDC_PROVIDER_LIB,
    PROMTOOL,
    PROMETHEUS_OPERATOR_CRDS,
    GATEWAY_API_CRDS,
    STATSD_EXPORTER_IMAGE,
];

/// A tool variable a test needs is not set.
#[derive(Debug, thiserror::Error)]
#[error(
    "{var} is not set: this test needs an external tool; run it through `cargo xtask test`, \
     or export the variables printed by `cargo xtask tools`"
)]
pub struct MissingTool {
    /// The variable that was missing or empty.
    pub var: String,
}

/// Reads a tool variable; empty counts as missing.
pub fn required(var: &str) -> Result<String, MissingTool> {
    match std::env::var(var) {
        Ok(value) if !value.is_empty() => Ok(value),
        _ => Err(MissingTool {
            var: var.to_owned(),
        }),
    }
}

/// Reads a tool variable that names a file or directory.
pub fn required_path(var: &str) -> Result<PathBuf, MissingTool> {
    required(var).map(PathBuf::from)
}

/// The tool a test cannot run without; a missing variable fails the test with
/// the message that says how to provide it.
pub fn tool(var: &str) -> PathBuf {
    required_path(var).unwrap_or_else(|missing| panic!("{missing}"))
}

/// The Python interpreter of the kubernetes-validate venv, which has PyYAML:
/// the YAML 1.1 reader kubectl's ecosystem uses, and a real Python for the
/// `superset_config.py` writer.
pub fn venv_python() -> Result<PathBuf, MissingTool> {
    required_path(KUBERNETES_VALIDATE).map(|validate| python_of_venv(&validate))
}

/// The CRDs in the directory the tool variable `var` names, one per `.yaml` file, in
/// the order of the file names, for
/// [`crate::control_plane::ControlPlane::install_crds`].
pub fn crds_in(var: &str) -> Vec<CustomResourceDefinition> {
    let crds = read_crds(&tool(var)).unwrap_or_else(|error| panic!("{error}"));
    assert!(!crds.is_empty(), "no CRD in {}", tool(var).display());
    crds
}

/// The CRDs in `dir`, one per `.yaml` file, in the order of the file names.
pub fn read_crds(dir: &std::path::Path) -> Result<Vec<CustomResourceDefinition>, String> {
    let entries = std::fs::read_dir(dir)
        .map_err(|error| format!("cannot list {}: {error}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "yaml")
        })
        .collect();
    files.sort();
    files
        .iter()
        .map(|file| {
            let text = std::fs::read_to_string(file)
                .map_err(|error| format!("cannot read {}: {error}", file.display()))?;
            serde_yaml_ng::from_str(&text)
                .map_err(|error| format!("{} is not a CRD: {error}", file.display()))
        })
        .collect()
}

/// The interpreter of the venv whose `kubernetes-validate` is at `validate`.
pub fn python_of_venv(validate: &std::path::Path) -> PathBuf {
    validate.with_file_name("python")
}
