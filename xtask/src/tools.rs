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
    sync::mpsc::{self, RecvTimeoutError},
    time::{Duration, Instant},
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

/// The product images the pod runner serves from this machine, and the ZooKeeper jars
/// of its image for the clients that run outside a pod. Maven Central only: no Go.
#[derive(Debug, Clone)]
pub struct ProductImages {
    /// Java runtime for ZooKeeper's own client and server outside the pod runner.
    pub java: PathBuf,
    /// ZooKeeper package directory.
    pub zookeeper_home: PathBuf,
    /// Class path that starts a ZooKeeper server.
    pub zookeeper_classpath: String,
    /// The local stand-in for the `zookeeper:3.9.5` image (holds
    /// `apache-zookeeper-3.9.5-bin`).
    pub zookeeper_image: PathBuf,
    /// The local stand-in for the `apache/hadoop:3.4.2` image (holds `opt/hadoop`).
    pub hadoop_image: PathBuf,
    /// The local stand-in for the `trinodb/trino:483` image (holds `usr/lib/trino`).
    pub trino_image: PathBuf,
}

/// What `cargo xtask sandbox` runs, and nothing more: a new user's first command
/// should not wait for what only the test suite needs (promtool, the Superset venv,
/// slapd, ...).
#[derive(Debug, Clone)]
pub struct SandboxTools {
    /// Helm v4 binary.
    pub helm: PathBuf,
    /// kubectl binary.
    pub kubectl: PathBuf,
    /// Directory of the control-plane binaries (etcd, kube-apiserver,
    /// kube-controller-manager, kube-scheduler, kwok).
    pub control_plane_bin: PathBuf,
    /// `nft`, for the pod runner's Service addresses.
    pub nft: PathBuf,
    /// The images the runner's node serves.
    pub images: ProductImages,
}

/// Every provisioned tool, with the versions it reported.
#[derive(Debug, Clone)]
pub struct Tools {
    /// What the sandbox needs; the test suite needs it too.
    pub sandbox: SandboxTools,
    /// kubernetes-validate console script.
    pub kubernetes_validate: PathBuf,
    /// Newest Kubernetes version kubernetes-validate has schemas for, e.g. `1.37.0`.
    pub kubernetes_version: String,
    /// hadolint binary.
    pub hadolint: PathBuf,
    /// Class path of the Hadoop client jars, for `strata_testing::hadoop`.
    pub hadoop_client_classpath: String,
    /// The venv with Apache Superset 6.1.0 (`bin/superset`, `bin/gunicorn`).
    pub superset_venv: PathBuf,
    /// Directory of the PostgreSQL server programs (`initdb`, `postgres`, `pg_isready`, `psql`).
    pub postgresql_bin: PathBuf,
    /// The Redis server (`redis-server`).
    pub redis_server: PathBuf,
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
        let sandbox = &self.sandbox;
        let images = &sandbox.images;
        let paths = [
            (env::HELM, &sandbox.helm),
            (env::KUBECTL, &sandbox.kubectl),
            (env::CONTROL_PLANE_BIN, &sandbox.control_plane_bin),
            (env::JAVA, &images.java),
            (env::ZOOKEEPER_HOME, &images.zookeeper_home),
            (env::ZOOKEEPER_IMAGE, &images.zookeeper_image),
            (env::HADOOP_IMAGE, &images.hadoop_image),
            (env::TRINO_IMAGE, &images.trino_image),
            (env::KUBERNETES_VALIDATE, &self.kubernetes_validate),
            (env::HADOLINT, &self.hadolint),
            (env::SUPERSET_VENV, &self.superset_venv),
            (env::POSTGRESQL_BIN, &self.postgresql_bin),
            (env::REDIS_SERVER, &self.redis_server),
            (env::SUPERSET_IMAGE, &self.superset_image),
            (env::SUPERSET_TRINO_IMAGE, &self.superset_trino_image),
            (env::SLAPD, &self.slapd),
            (env::PYTHON_LDAP, &self.python_ldap),
            (env::OIDC_PROVIDER_LIB, &self.oidc_provider_lib),
            (env::PROMTOOL, &self.promtool),
            (
                env::PROMETHEUS_OPERATOR_CRDS,
                &self.prometheus_operator_crds,
            ),
            (env::GATEWAY_API_CRDS, &self.gateway_api_crds),
            (env::STATSD_EXPORTER_IMAGE, &self.statsd_exporter_image),
        ];
        let texts = [
            (env::KUBERNETES_VERSION, &self.kubernetes_version),
            (env::ZOOKEEPER_CLASSPATH, &images.zookeeper_classpath),
            (env::HADOOP_CLIENT_CLASSPATH, &self.hadoop_client_classpath),
        ];
        paths
            .into_iter()
            .map(|(name, path)| (name, path.clone().into_os_string()))
            .chain(texts.into_iter().map(|(name, text)| (name, text.into())))
            .collect()
    }
}

/// `workspace/target/tools`, created.
fn tools_dir(workspace: &Path) -> anyhow::Result<PathBuf> {
    let tools_dir = workspace.join("target").join("tools");
    std::fs::create_dir_all(&tools_dir)
        .with_context(|| format!("cannot create {}", tools_dir.display()))?;
    Ok(tools_dir)
}

/// Provisions what the sandbox runs: the control plane's Go build on a thread of its
/// own, beside helm, kubectl, nftables and the product images, which wait on
/// registries more than on the cores.
pub fn provision_sandbox(workspace: &Path) -> anyhow::Result<SandboxTools> {
    let tools_dir = tools_dir(workspace)?;
    let go_dir = workspace.join("xtask").join("go");
    std::thread::scope(|scope| {
        let control_plane = scope.spawn(|| {
            step(
                &format!(
                    "kubernetes control plane {} + etcd + kwok (Go module proxy)",
                    control_plane::KUBERNETES_VERSION
                ),
                || control_plane::ensure(&go_dir),
            )
        });
        let beside = (|| {
            let (layer, _) = step("helm + kubectl (npm layer package)", || {
                layer::ensure(&tools_dir)
            })?;
            let (nft, _) = step(
                "nftables (Debian package): the pod runner's Service addresses",
                nftables::ensure,
            )?;
            let images = provision_images(workspace, &tools_dir)?;
            anyhow::Ok((layer, nft, images))
        })();
        // Joined before the error above is returned, so the Go build's own error
        // (say, no `go` on PATH) is not lost behind it.
        let control_plane = control_plane
            .join()
            .map_err(|_| anyhow::anyhow!("the control plane's Go build panicked"))?;
        let (layer, nft, images) = beside?;
        let (control_plane, _) = control_plane?;
        Ok(SandboxTools {
            helm: layer.helm,
            kubectl: layer.kubectl,
            control_plane_bin: control_plane.bin,
            nft,
            images,
        })
    })
}

/// Provisions the ZooKeeper, Hadoop and Trino image directories (Maven Central), for
/// the sandbox's runner node and for `cargo xtask run`.
pub fn provision_images(workspace: &Path, tools_dir: &Path) -> anyhow::Result<ProductImages> {
    let (zookeeper_image, _) = step("zookeeper 3.9.5 image directory (Maven Central)", || {
        zookeeper_image::ensure(workspace, tools_dir)
    })?;
    let (zookeeper, _) = step("zookeeper 3.9.5 class path (image jars)", || {
        zookeeper::ensure(&zookeeper_image, tools_dir)
    })?;
    let (hadoop_image, _) = step("hadoop 3.4.2 image directory (Maven Central)", || {
        hadoop_image::ensure(workspace, tools_dir)
    })?;
    let (trino_image, _) = step("trino 483 image directory (Maven Central)", || {
        trino_image::ensure(tools_dir)
    })?;
    Ok(ProductImages {
        java: zookeeper.java,
        zookeeper_home: zookeeper.home,
        zookeeper_classpath: zookeeper.classpath,
        zookeeper_image,
        hadoop_image,
        trino_image,
    })
}

/// The Superset image directory and the statsd exporter's, which `cargo xtask run`
/// needs only for a Superset manifest: the venv is minutes of PyPI downloads.
pub fn provision_superset_images(workspace: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    let tools_dir = tools_dir(workspace)?;
    let go_dir = workspace.join("xtask").join("go");
    let (_, superset_image) = superset_venv_and_image(&tools_dir)?;
    let statsd_exporter_image = go_tools::statsd_exporter(&go_dir, &tools_dir)?;
    Ok((superset_image, statsd_exporter_image))
}

/// The Superset venv (with PostgreSQL) and the image directory made from it.
fn superset_venv_and_image(tools_dir: &Path) -> anyhow::Result<(superset::Superset, PathBuf)> {
    let (superset, _) = step("superset venv (PyPI) + postgresql (Debian package)", || {
        superset::ensure(tools_dir)
    })?;
    let (image, _) = step("superset 6.1.0 image directory (the venv)", || {
        superset_image::ensure(tools_dir, &superset.venv)
    })?;
    Ok((superset, image))
}

/// Provisions every tool under `workspace/target/tools`, reporting each step on stderr:
/// first what the sandbox needs, then the rest, each time with the Go builds on a thread
/// of their own beside the steps that wait on registries.
pub fn provision(workspace: &Path) -> anyhow::Result<Tools> {
    let sandbox = provision_sandbox(workspace)?;
    let tools_dir = tools_dir(workspace)?;
    let go_dir = workspace.join("xtask").join("go");
    std::thread::scope(|scope| {
        // The Go builds beside the steps that wait on registries (go_tools).
        let go = scope.spawn(|| go_tools::provision(&go_dir, &tools_dir));
        provision_beside(workspace, &tools_dir, sandbox, go)
    })
}

/// The steps that are not Go's, then the Go steps' outcome from `go`, and every tool's
/// version.
fn provision_beside(
    workspace: &Path,
    tools_dir: &Path,
    sandbox: SandboxTools,
    go: std::thread::ScopedJoinHandle<'_, anyhow::Result<go_tools::GoTools>>,
) -> anyhow::Result<Tools> {
    let beside = test_tools(workspace, tools_dir);
    // Joined before the error above is returned, so that both errors are seen and the
    // Go thread never outlives a failure unreported.
    let go = go
        .join()
        .map_err(|_| anyhow::anyhow!("the Go provisioning steps panicked"))?;
    let TestTools {
        venv,
        hadoop_client_classpath,
        superset,
        superset_image,
        superset_trino_image,
        ldap,
        oidc_provider_lib,
    } = beside?;
    let go_tools::GoTools {
        prometheus,
        gateway_api_crds,
        statsd_exporter_image,
    } = go?;

    let kubernetes_version = venv.newest_kubernetes_version()?;
    let images = &sandbox.images;
    let control_plane_bin = &sandbox.control_plane_bin;
    let versions = BTreeMap::from([
        (
            "helm",
            version(Command::new(&sandbox.helm).args(["version", "--short"]))?,
        ),
        (
            "kubectl",
            version(Command::new(&sandbox.kubectl).args(["version", "--client"]))?,
        ),
        ("nft", version(Command::new(&sandbox.nft).arg("--version"))?),
        (
            "kubernetes-validate",
            version(Command::new(&venv.kubernetes_validate).arg("--version"))?,
        ),
        (
            "hadolint",
            version(Command::new(&venv.hadolint).arg("--version"))?,
        ),
        ("java", version(Command::new(&images.java).arg("-version"))?),
        (
            "zookeeper",
            version(
                Command::new(&images.java)
                    .arg("-cp")
                    .arg(&images.zookeeper_classpath)
                    .arg("org.apache.zookeeper.version.VersionInfoMain"),
            )?,
        ),
        (
            "hadoop-client",
            version(
                Command::new(&images.java)
                    .arg("-cp")
                    .arg(&hadoop_client_classpath)
                    .arg("org.apache.hadoop.util.VersionInfo"),
            )?,
        ),
        (
            "hadoop-image",
            version(
                Command::new(
                    images
                        .hadoop_image
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
                    images
                        .zookeeper_image
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
                    images
                        .trino_image
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
            version(Command::new(control_plane_bin.join("kube-apiserver")).arg("--version"))?,
        ),
        (
            "etcd",
            version(Command::new(control_plane_bin.join("etcd")).arg("--version"))?,
        ),
        (
            "kwok",
            version(Command::new(control_plane_bin.join("kwok")).arg("--version"))?,
        ),
        (
            "promtool",
            version(Command::new(&prometheus.promtool).arg("--version"))?,
        ),
    ]);
    Ok(Tools {
        sandbox,
        kubernetes_validate: venv.kubernetes_validate,
        kubernetes_version,
        hadolint: venv.hadolint,
        hadoop_client_classpath,
        superset_venv: superset.venv,
        postgresql_bin: superset.postgresql_bin,
        redis_server: superset.redis_server,
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

/// What the steps beside the Go thread provisioned for the tests alone.
struct TestTools {
    venv: venv::Venv,
    hadoop_client_classpath: String,
    superset: superset::Superset,
    superset_image: PathBuf,
    superset_trino_image: PathBuf,
    ldap: ldap::Ldap,
    oidc_provider_lib: PathBuf,
}

/// The registry-bound steps only the test suite needs.
fn test_tools(workspace: &Path, tools_dir: &Path) -> anyhow::Result<TestTools> {
    let (venv, _) = step("python venv (kubernetes-validate, hadolint)", || {
        venv::ensure(tools_dir)
    })?;
    let (hadoop_client, _) = step("hadoop client jars (pyspark sdist from PyPI)", || {
        hadoop_client::ensure(tools_dir)
    })?;
    let hadoop_client_classpath = hadoop_client::classpath(&hadoop_client);
    let (superset, superset_image) = superset_venv_and_image(tools_dir)?;
    let (superset_trino_image, _) = step(
        "superset 6.1.0 derived image directory with the Trino client (PyPI)",
        || superset_image::ensure_trino_derived(tools_dir, &superset.venv),
    )?;
    let (ldap, _) = step(
        "slapd (Debian package) + python-ldap for the Superset venv (PyPI sdist)",
        || ldap::ensure(tools_dir, &superset.venv),
    )?;
    let (oidc_provider_lib, _) = step("mock-oauth2-server 6.0.2 (Maven Central)", || {
        oidc::ensure(workspace, tools_dir)
    })?;
    Ok(TestTools {
        venv,
        hadoop_client_classpath,
        superset,
        superset_image,
        superset_trino_image,
        ldap,
        oidc_provider_lib,
    })
}

/// How often a step that is still running says so.
const HEARTBEAT: Duration = Duration::from_secs(60);

/// Runs one provisioning step and reports whether it did anything and how long it took.
/// While it runs, a line every [`HEARTBEAT`] says it is still at work: a download or a
/// build of several minutes must not look hung.
pub(crate) fn step<T>(
    name: &str,
    run: impl FnOnce() -> anyhow::Result<(T, Outcome)>,
) -> anyhow::Result<(T, Outcome)> {
    let started = Instant::now();
    let (finished, heartbeat) = mpsc::channel::<()>();
    let result = std::thread::scope(|scope| {
        scope.spawn(move || {
            while let Err(RecvTimeoutError::Timeout) = heartbeat.recv_timeout(HEARTBEAT) {
                eprintln!(
                    "    {name}: still at work ({})",
                    process::minutes(started.elapsed())
                );
            }
        });
        let result = run();
        drop(finished);
        result
    });
    let (value, outcome) = result.with_context(|| format!("provisioning {name} failed"))?;
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
