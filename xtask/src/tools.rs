//! Provisioning of the real external tools the full test suite uses.
//!
//! Everything goes under `target/tools/` (or, for ZooKeeper and PostgreSQL, the system
//! package), each step is skipped when its result is already there, and every tool is run
//! once to prove it works before any test depends on it.

pub mod control_plane;
pub mod env;
pub mod gateway_api;
pub mod go_tools;
pub mod hadoop_client;
pub mod hadoop_image;
pub mod image_dir;
pub mod layer;
pub mod ldap;
pub mod nftables;
pub mod oidc;
pub mod process;
pub mod prometheus;
pub mod statsd_exporter_image;
pub mod superset;
pub mod superset_image;
pub mod trino_image;
pub mod venv;
pub mod zookeeper;
pub mod zookeeper_image;

use std::{
    collections::BTreeMap,
    ffi::OsString,
    path::{Path, PathBuf},
    process::Command,
    time::Instant,
};

use anyhow::Context;

/// Whether a provisioning step did any work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The step's result existed; nothing was done.
    AlreadyPresent,
    /// The step installed or updated something.
    Installed,
}

/// Every provisioned tool, with the versions it reported.
#[derive(Debug, Clone)]
pub struct Tools {
    /// Helm v4 binary.
    pub helm: PathBuf,
    /// kubectl binary.
    pub kubectl: PathBuf,
    /// kubernetes-validate console script.
    pub kubernetes_validate: PathBuf,
    /// Newest Kubernetes version kubernetes-validate has schemas for, e.g. `1.37.0`.
    pub kubernetes_version: String,
    /// hadolint binary.
    pub hadolint: PathBuf,
    /// Java runtime for ZooKeeper.
    pub java: PathBuf,
    /// ZooKeeper package directory.
    pub zookeeper_home: PathBuf,
    /// Class path that starts a ZooKeeper server.
    pub zookeeper_classpath: String,
    /// Class path of the Hadoop client jars, for `strata_testing::hadoop`.
    pub hadoop_client_classpath: String,
    /// The venv with Apache Superset 6.1.0 (`bin/superset`, `bin/gunicorn`).
    pub superset_venv: PathBuf,
    /// Directory of the PostgreSQL server programs (`initdb`, `postgres`, `pg_isready`, `psql`).
    pub postgresql_bin: PathBuf,
    /// The Redis server (`redis-server`).
    pub redis_server: PathBuf,
    /// Directory of the control-plane binaries (etcd, kube-apiserver,
    /// kube-controller-manager, kube-scheduler, kwok).
    pub control_plane_bin: PathBuf,
    /// The local stand-in for the `apache/hadoop:3.4.2` image (holds `opt/hadoop`).
    pub hadoop_image: PathBuf,
    /// The local stand-in for the `zookeeper:3.9.5` image (holds
    /// `apache-zookeeper-3.9.5-bin`).
    pub zookeeper_image: PathBuf,
    /// The local stand-in for the `trinodb/trino:483` image (holds `usr/lib/trino`).
    pub trino_image: PathBuf,
    /// The local stand-in for the `apache/superset:6.1.0` image (holds `app/.venv`).
    pub superset_image: PathBuf,
    /// The derived Superset image with the Trino client.
    pub superset_trino_image: PathBuf,
    /// Debian's slapd.
    pub slapd: PathBuf,
    /// python-ldap built for the Superset venv (a directory for `PYTHONPATH`).
    pub python_ldap: PathBuf,
    /// The class path directory of mock-oauth2-server.
    pub oidc_provider_lib: PathBuf,
    /// Prometheus' `promtool`.
    pub promtool: PathBuf,
    /// The directory with the Prometheus Operator's CRDs.
    pub prometheus_operator_crds: PathBuf,
    /// The directory with the Gateway API's GatewayClass, Gateway, HTTPRoute and
    /// BackendTLSPolicy CRDs.
    pub gateway_api_crds: PathBuf,
    /// The local stand-in for the statsd exporter image (holds `bin/statsd_exporter`).
    pub statsd_exporter_image: PathBuf,
    /// Tool name to the version line it printed, for the report.
    pub versions: BTreeMap<&'static str, String>,
}

impl Tools {
    /// The variables of [`mod@env`] with their values, for child processes and shell exports.
    pub fn env_vars(&self) -> BTreeMap<&'static str, OsString> {
        BTreeMap::from([
            (env::HELM, self.helm.clone().into_os_string()),
            (env::KUBECTL, self.kubectl.clone().into_os_string()),
            (
                env::KUBERNETES_VALIDATE,
                self.kubernetes_validate.clone().into_os_string(),
            ),
            (
                env::KUBERNETES_VERSION,
                self.kubernetes_version.clone().into(),
            ),
            (env::HADOLINT, self.hadolint.clone().into_os_string()),
            (env::JAVA, self.java.clone().into_os_string()),
            (
                env::ZOOKEEPER_HOME,
                self.zookeeper_home.clone().into_os_string(),
            ),
            (
                env::ZOOKEEPER_CLASSPATH,
                self.zookeeper_classpath.clone().into(),
            ),
            (
                env::HADOOP_CLIENT_CLASSPATH,
                self.hadoop_client_classpath.clone().into(),
            ),
            (
                env::SUPERSET_VENV,
                self.superset_venv.clone().into_os_string(),
            ),
            (
                env::POSTGRESQL_BIN,
                self.postgresql_bin.clone().into_os_string(),
            ),
            (
                env::REDIS_SERVER,
                self.redis_server.clone().into_os_string(),
            ),
            (
                env::CONTROL_PLANE_BIN,
                self.control_plane_bin.clone().into_os_string(),
            ),
            (
                env::HADOOP_IMAGE,
                self.hadoop_image.clone().into_os_string(),
            ),
            (
                env::ZOOKEEPER_IMAGE,
                self.zookeeper_image.clone().into_os_string(),
            ),
            (env::TRINO_IMAGE, self.trino_image.clone().into_os_string()),
            (
                env::SUPERSET_IMAGE,
                self.superset_image.clone().into_os_string(),
            ),
            (
                env::SUPERSET_TRINO_IMAGE,
                self.superset_trino_image.clone().into_os_string(),
            ),
            (env::SLAPD, self.slapd.clone().into_os_string()),
            (env::PYTHON_LDAP, self.python_ldap.clone().into_os_string()),
            (
                env::OIDC_PROVIDER_LIB,
                self.oidc_provider_lib.clone().into_os_string(),
            ),
            (env::PROMTOOL, self.promtool.clone().into_os_string()),
            (
                env::PROMETHEUS_OPERATOR_CRDS,
                self.prometheus_operator_crds.clone().into_os_string(),
            ),
            (
                env::GATEWAY_API_CRDS,
                self.gateway_api_crds.clone().into_os_string(),
            ),
            (
                env::STATSD_EXPORTER_IMAGE,
                self.statsd_exporter_image.clone().into_os_string(),
            ),
        ])
    }
}

/// Provisions every tool under `workspace/target/tools`, reporting each step on stderr.
pub fn provision(workspace: &Path) -> anyhow::Result<Tools> {
    let tools_dir = workspace.join("target").join("tools");
    std::fs::create_dir_all(&tools_dir)
        .with_context(|| format!("cannot create {}", tools_dir.display()))?;
    let go_dir = workspace.join("xtask").join("go");
    std::thread::scope(|scope| {
        // The Go builds beside the steps that wait on registries (go_tools).
        let go = scope.spawn(|| go_tools::provision(&go_dir, &tools_dir));
        provision_beside(workspace, &tools_dir, go)
    })
}

/// The steps that are not Go's, then the Go steps' outcome from `go`, and every tool's
/// version.
fn provision_beside(
    workspace: &Path,
    tools_dir: &Path,
    go: std::thread::ScopedJoinHandle<'_, anyhow::Result<go_tools::GoTools>>,
) -> anyhow::Result<Tools> {
    let tools_dir = tools_dir.to_path_buf();
    let (venv, _) = step("python venv (kubernetes-validate, hadolint)", || {
        venv::ensure(&tools_dir)
    })?;
    let (layer, _) = step("helm + kubectl (npm layer package)", || {
        layer::ensure(&tools_dir)
    })?;
    let (zookeeper_image, _) = step("zookeeper 3.9.5 image directory (Maven Central)", || {
        zookeeper_image::ensure(workspace, &tools_dir)
    })?;
    let (zookeeper, _) = step("zookeeper 3.9.5 class path for tests (image jars)", || {
        zookeeper::ensure(&zookeeper_image, &tools_dir)
    })?;
    let (hadoop_client, _) = step("hadoop client jars (pyspark sdist from PyPI)", || {
        hadoop_client::ensure(&tools_dir)
    })?;
    let hadoop_client_classpath = hadoop_client::classpath(&hadoop_client);
    let (hadoop_image, _) = step("hadoop 3.4.2 image directory (Maven Central)", || {
        hadoop_image::ensure(workspace, &tools_dir)
    })?;
    let (trino_image, _) = step("trino 483 image directory (Maven Central)", || {
        trino_image::ensure(&tools_dir)
    })?;
    let (superset, _) = step("superset venv (PyPI) + postgresql (Debian package)", || {
        superset::ensure(&tools_dir)
    })?;
    let (superset_image, _) = step("superset 6.1.0 image directory (the venv)", || {
        superset_image::ensure(&tools_dir, &superset.venv)
    })?;
    let (superset_trino_image, _) = step(
        "superset 6.1.0 derived image directory with the Trino client (PyPI)",
        || superset_image::ensure_trino_derived(&tools_dir, &superset.venv),
    )?;

    let (ldap, _) = step(
        "slapd (Debian package) + python-ldap for the Superset venv (PyPI sdist)",
        || ldap::ensure(&tools_dir, &superset.venv),
    )?;

    let (nft, _) = step(
        "nftables (Debian package): the pod runner's Service addresses",
        nftables::ensure,
    )?;

    let (oidc_provider_lib, _) = step("mock-oauth2-server 6.0.2 (Maven Central)", || {
        oidc::ensure(workspace, &tools_dir)
    })?;

    let go = go
        .join()
        .map_err(|_| anyhow::anyhow!("the Go provisioning steps panicked"))??;
    let go_tools::GoTools {
        control_plane,
        prometheus,
        gateway_api_crds,
        statsd_exporter_image,
    } = go;

    let kubernetes_version = venv.newest_kubernetes_version()?;
    let versions = BTreeMap::from([
        (
            "helm",
            version(Command::new(&layer.helm).args(["version", "--short"]))?,
        ),
        (
            "kubectl",
            version(Command::new(&layer.kubectl).args(["version", "--client"]))?,
        ),
        ("nft", version(Command::new(&nft).arg("--version"))?),
        (
            "kubernetes-validate",
            version(Command::new(&venv.kubernetes_validate).arg("--version"))?,
        ),
        (
            "hadolint",
            version(Command::new(&venv.hadolint).arg("--version"))?,
        ),
        (
            "java",
            version(Command::new(&zookeeper.java).arg("-version"))?,
        ),
        (
            "zookeeper",
            version(
                Command::new(&zookeeper.java)
                    .arg("-cp")
                    .arg(&zookeeper.classpath)
                    .arg("org.apache.zookeeper.version.VersionInfoMain"),
            )?,
        ),
        (
            "hadoop-client",
            version(
                Command::new(&zookeeper.java)
                    .arg("-cp")
                    .arg(&hadoop_client_classpath)
                    .arg("org.apache.hadoop.util.VersionInfo"),
            )?,
        ),
        (
            "hadoop-image",
            version(
                Command::new(
                    hadoop_image
                        .join("opt")
                        .join("hadoop")
                        .join("bin")
                        .join("hdfs"),
                )
                .arg("version"),
            )?,
        ),
        (
            "zookeeper-image",
            version(
                Command::new(
                    zookeeper_image
                        .join("apache-zookeeper-3.9.5-bin")
                        .join("bin")
                        .join("zkServer.sh"),
                )
                .arg("version"),
            )?,
        ),
        (
            "trino-image",
            version(
                Command::new(
                    trino_image
                        .join("usr")
                        .join("lib")
                        .join("trino")
                        .join("bin")
                        .join("launcher"),
                )
                .arg("--help"),
            )?,
        ),
        ("superset", superset.version()?),
        (
            "postgresql",
            version(Command::new(superset.postgresql_bin.join("postgres")).arg("--version"))?,
        ),
        (
            "redis",
            version(Command::new(&superset.redis_server).arg("--version"))?,
        ),
        ("slapd", version(Command::new(&ldap.slapd).arg("-VV"))?),
        (
            "kube-apiserver",
            version(Command::new(control_plane.bin.join("kube-apiserver")).arg("--version"))?,
        ),
        (
            "etcd",
            version(Command::new(control_plane.bin.join("etcd")).arg("--version"))?,
        ),
        (
            "kwok",
            version(Command::new(control_plane.bin.join("kwok")).arg("--version"))?,
        ),
        (
            "promtool",
            version(Command::new(&prometheus.promtool).arg("--version"))?,
        ),
    ]);
    Ok(Tools {
        helm: layer.helm,
        kubectl: layer.kubectl,
        kubernetes_validate: venv.kubernetes_validate,
        kubernetes_version,
        hadolint: venv.hadolint,
        java: zookeeper.java,
        zookeeper_home: zookeeper.home,
        zookeeper_classpath: zookeeper.classpath,
        hadoop_client_classpath,
        superset_venv: superset.venv,
        postgresql_bin: superset.postgresql_bin,
        redis_server: superset.redis_server,
        control_plane_bin: control_plane.bin,
        hadoop_image,
        zookeeper_image,
        trino_image,
        superset_image,
        superset_trino_image,
        slapd: ldap.slapd,
        python_ldap: ldap.python_ldap,
        oidc_provider_lib,
        promtool: prometheus.promtool,
        prometheus_operator_crds: prometheus.operator_crds,
        gateway_api_crds,
        statsd_exporter_image,
        versions,
    })
}

/// Runs one provisioning step and reports whether it did anything and how long it took.
pub(crate) fn step<T>(
    name: &str,
    run: impl FnOnce() -> anyhow::Result<(T, Outcome)>,
) -> anyhow::Result<(T, Outcome)> {
    let started = Instant::now();
    let (value, outcome) = run().with_context(|| format!("provisioning {name} failed"))?;
    let what = match outcome {
        Outcome::AlreadyPresent => "present, skipped",
        Outcome::Installed => "installed",
    };
    eprintln!(
        "    {name}: {what} ({:.1}s)",
        started.elapsed().as_secs_f64()
    );
    Ok((value, outcome))
}

/// Runs a tool's version command: proof that it executes, and the line for the report.
fn version(command: &mut Command) -> anyhow::Result<String> {
    let output = process::capture(command)?;
    Ok(output
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with("SLF4J"))
        .unwrap_or_default()
        .to_owned())
}
