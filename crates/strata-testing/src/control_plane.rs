//! A real Kubernetes control plane for tests, the sandbox and the benchmarks: etcd,
//! kube-apiserver, kube-controller-manager and kube-scheduler, built from pinned Go
//! modules by `cargo xtask tools` ([`CONTROL_PLANE_BIN`]), with KWOK playing the
//! nodes and their kubelets.
//!
//! Everything listens on loopback, on ports that were free a moment before, and
//! keeps its files in a temporary directory. [`ControlPlane::start`] returns once
//! every component is ready:
//!
//! | component | ready when |
//! | --- | --- |
//! | etcd | `/readyz` answers `ok` |
//! | kube-apiserver | `/readyz` answers 200 to the admin |
//! | kube-controller-manager | its ServiceAccount controller created `default/default` |
//! | kube-scheduler | it holds its Lease `kube-system/kube-scheduler` |
//! | KWOK | every node it plays is Ready |
//!
//! What is real: the API server with its authentication (ServiceAccount tokens through
//! the TokenRequest API, and a token file for the admin), the `Node,RBAC` authorizer,
//! the default admission plugins, server-side apply, CRD registration and validation,
//! and every default controller (StatefulSet, garbage collector, disruption,
//! persistent-volume binder, namespace, ServiceAccount). What KWOK plays
//! (`control_plane/kwok-stages.yaml`): nodes that turn Ready, pods that run and turn
//! Ready at once without a process, a pod annotated [`SIMULATED_FAILURE_ANNOTATION`]
//! that waits in `CrashLoopBackOff` or `ImagePullBackOff`, deletion without a grace
//! period, and a volume for every claim of the default storage class
//! [`STORAGE_CLASS`] (the binder binds them).
//!
//! The audit log records every request at the `Metadata` level, so tests count the
//! requests and writes of each user ([`ControlPlane::audit_log`]).
//!
//! Every process is stopped by its PID when the value is dropped, which a panic
//! does too; they stay in the caller's process group, so Ctrl-C in a terminal stops
//! them with the caller.

mod audit;
mod cluster_objects;
mod component;
mod drive;
mod error;
mod files;
mod processes;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, ServiceAccount};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

pub use self::audit::AuditEvent;
pub use self::component::Component;
pub use self::drive::{RunningOperator, pod_is_ready, wait_until};
pub use self::error::ControlPlaneError;
use self::error::io;
use self::files::{Files, random_token, short_hash, write_private};
pub use self::processes::OperatorProcess;
use crate::postgres::free_port;
use crate::tools::{self, CONTROL_PLANE_BIN};

/// The pod annotation that makes KWOK fail a pod: `CrashLoopBackOff` or
/// `ImagePullBackOff`.
pub const SIMULATED_FAILURE_ANNOTATION: &str = "strata.dev/simulate-failure";
/// The default StorageClass, whose claims KWOK provisions.
pub const STORAGE_CLASS: &str = "strata-test";
/// The annotation by which KWOK recognises the nodes it plays.
pub const KWOK_NODE_ANNOTATION: &str = "kwok.x-k8s.io/node";
/// The audit log's size limit: far above what any test or benchmark writes, so that it
/// is never rotated.
const AUDIT_LOG_MAX_MEGABYTES: u32 = 1_000_000;

/// The audience of ServiceAccount tokens, and the issuer.
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// How long a node Lease lasts without renewal; KWOK renews it well within.
const NODE_LEASE_SECONDS: u32 = 40;
/// How long a ServiceAccount token from [`ControlPlane::service_account_token`] lasts.
const TOKEN_LIFETIME_SECONDS: i64 = 24 * 3600;
/// How long the whole control plane may take to become ready.
pub const START_TIMEOUT: Duration = Duration::from_secs(120);

/// What to start.
#[derive(Clone, Debug)]
pub struct ControlPlaneOptions {
    /// The loopback address every component listens on.
    pub address: String,
    /// How many nodes KWOK plays (`kwok-node-0`, ...).
    pub nodes: u16,
    /// The directory of the binaries; `None` reads [`CONTROL_PLANE_BIN`], which
    /// `cargo xtask test` sets.
    pub bin: Option<PathBuf>,
    /// The client rate limit of kube-controller-manager and kube-scheduler
    /// (`--kube-api-qps`, burst twice that); `None` keeps their defaults (20 and
    /// 50), which a benchmark of thousands of pods outgrows.
    pub controller_qps: Option<u32>,
}

impl Default for ControlPlaneOptions {
    fn default() -> Self {
        Self {
            address: "127.0.0.1".to_owned(),
            nodes: 3,
            bin: None,
            controller_qps: None,
        }
    }
}

/// A running control plane; see the module docs.
#[derive(Debug)]
pub struct ControlPlane {
    /// In start order; stopped in reverse.
    components: Vec<Component>,
    server: String,
    admin_token: String,
    ca_file: PathBuf,
    kubeconfig: PathBuf,
    audit_log: PathBuf,
    nodes: Vec<String>,
    started_in: Duration,
    // Last: removed after every process has stopped.
    dir: tempfile::TempDir,
}

impl ControlPlane {
    /// Starts every component and waits until each is ready ([`START_TIMEOUT`]).
    pub async fn start(options: ControlPlaneOptions) -> Result<Self, ControlPlaneError> {
        let bin = match options.bin.clone() {
            Some(bin) => bin,
            None => tools::required_path(CONTROL_PLANE_BIN)?,
        };
        let started = Instant::now();
        let dir = tempfile::Builder::new()
            .prefix("strata-control-plane-")
            .tempdir()
            .map_err(|source| io("creating a temporary directory", source))?;
        let root = dir.path().to_owned();
        let address = options.address.as_str();
        let port = |_: &str| {
            free_port(address).map_err(|message| ControlPlaneError::Port {
                address: address.to_owned(),
                message,
            })
        };
        let (etcd_client, etcd_peer, api_port) = (port("etcd")?, port("etcd peer")?, port("api")?);
        let admin_token = random_token()?;
        let files = Files::write(&root, &admin_token)?;
        let server = format!("https://{address}:{api_port}");
        let mut control_plane = Self {
            components: Vec::new(),
            server: server.clone(),
            admin_token,
            ca_file: root.join("pki").join("apiserver.crt"),
            kubeconfig: root.join("admin.kubeconfig"),
            audit_log: root.join("audit.log"),
            nodes: (0..options.nodes)
                .map(|node| format!("kwok-node-{node}"))
                .collect(),
            started_in: Duration::ZERO,
            dir,
        };

        control_plane.write_kubeconfig(&control_plane.kubeconfig, &control_plane.admin_token)?;

        let etcd_url = format!("http://{address}:{etcd_client}");
        let peer_url = format!("http://{address}:{etcd_peer}");
        control_plane.spawn(
            "etcd",
            &bin,
            args(&[
                "--name=strata",
                &format!("--data-dir={}", root.join("etcd").display()),
                &format!("--listen-client-urls={etcd_url}"),
                &format!("--advertise-client-urls={etcd_url}"),
                &format!("--listen-peer-urls={peer_url}"),
                &format!("--initial-advertise-peer-urls={peer_url}"),
                &format!("--initial-cluster=strata={peer_url}"),
                "--initial-cluster-state=new",
                "--unsafe-no-fsync",
                "--log-level=warn",
            ]),
        )?;
        control_plane
            .wait_for("etcd", "/readyz to answer ok", || {
                let url = format!("{address}:{etcd_client}");
                async move { http_get_ok(&url, "/readyz").await }
            })
            .await?;

        control_plane.spawn(
            "kube-apiserver",
            &bin,
            args(&[
                &format!("--etcd-servers={etcd_url}"),
                &format!("--bind-address={address}"),
                &format!("--advertise-address={address}"),
                &format!("--secure-port={api_port}"),
                &format!("--cert-dir={}", root.join("pki").display()),
                "--service-cluster-ip-range=10.96.0.0/16",
                "--endpoint-reconciler-type=none",
                &format!("--service-account-issuer={ISSUER}"),
                &format!("--api-audiences={ISSUER}"),
                &format!(
                    "--service-account-signing-key-file={}",
                    files.service_account_key.display()
                ),
                &format!(
                    "--service-account-key-file={}",
                    files.service_account_public_key.display()
                ),
                "--authorization-mode=Node,RBAC",
                &format!("--token-auth-file={}", files.tokens.display()),
                &format!("--audit-policy-file={}", files.audit_policy.display()),
                &format!("--audit-log-path={}", root.join("audit.log").display()),
                // The log's writer rotates at 100 MB when no size is given, and a
                // reader of `audit.log` alone would then miss every earlier request:
                // the 1,000-cluster benchmark writes several hundred megabytes.
                &format!("--audit-log-maxsize={AUDIT_LOG_MAX_MEGABYTES}"),
                "--allow-privileged=true",
            ]),
        )?;
        let admin_kubeconfig = control_plane.kubeconfig.clone();
        control_plane
            .wait_for("kube-apiserver", "/readyz to answer 200", || {
                let path = admin_kubeconfig.clone();
                async move {
                    // The CA file appears when the API server has written its certificate.
                    let client = client_from_kubeconfig(&path).await.ok()?;
                    let request = ::http::Request::get("/readyz").body(Vec::new()).ok()?;
                    client
                        .request_text(request)
                        .await
                        .ok()
                        .filter(|body| body == "ok")
                }
            })
            .await?;

        let kubeconfig = control_plane.kubeconfig.display().to_string();
        control_plane.spawn(
            "kube-controller-manager",
            &bin,
            args(&[
                &format!("--kubeconfig={kubeconfig}"),
                &format!("--root-ca-file={}", control_plane.ca_file.display()),
                "--use-service-account-credentials=true",
                "--leader-elect=false",
                "--secure-port=0",
                "--controllers=*",
            ])
            .into_iter()
            .chain(rate_limit(options.controller_qps))
            .collect(),
        )?;
        control_plane.spawn(
            "kube-scheduler",
            &bin,
            args(&[
                &format!("--kubeconfig={kubeconfig}"),
                "--leader-elect=true",
                "--leader-elect-resource-namespace=kube-system",
                "--secure-port=0",
            ])
            .into_iter()
            .chain(rate_limit(options.controller_qps))
            .collect(),
        )?;
        control_plane.spawn(
            "kwok",
            &bin,
            args(&[
                &format!("--kubeconfig={kubeconfig}"),
                &format!("--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake"),
                &format!("--config={}", files.kwok_stages.display()),
                "--cidr=10.244.0.0/16",
                // Renewed node Leases are the heartbeats the node lifecycle controller
                // reads; without them it marks the nodes, and then their pods, not
                // ready after its grace period.
                &format!("--node-lease-duration-seconds={NODE_LEASE_SECONDS}"),
                &format!("--node-ip={address}"),
            ]),
        )?;
        let client = control_plane.client().await?;
        control_plane
            .wait_for(
                "kube-controller-manager",
                "the ServiceAccount default/default",
                || {
                    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
                    async move { api.get_opt("default").await.ok().flatten() }
                },
            )
            .await?;
        control_plane
            .wait_for(
                "kube-scheduler",
                "its Lease kube-system/kube-scheduler",
                || {
                    let api: Api<Lease> = Api::namespaced(client.clone(), "kube-system");
                    async move {
                        api.get_opt("kube-scheduler")
                            .await
                            .ok()
                            .flatten()
                            .and_then(|lease| lease.spec?.holder_identity)
                    }
                },
            )
            .await?;
        control_plane.create_storage_class(&client).await?;
        control_plane.create_nodes(&client).await?;
        let nodes = control_plane.nodes.clone();
        control_plane
            .wait_for("kwok", "every node Ready", || {
                let api: Api<Node> = Api::all(client.clone());
                let nodes = nodes.clone();
                async move {
                    for name in &nodes {
                        let node = api.get_opt(name).await.ok()??;
                        let ready = node.status?.conditions?.into_iter().any(|condition| {
                            condition.type_ == "Ready" && condition.status == "True"
                        });
                        if !ready {
                            return None;
                        }
                    }
                    Some(())
                }
            })
            .await?;
        control_plane.started_in = started.elapsed();
        Ok(control_plane)
    }

    /// `https://127.0.0.1:<port>`.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The admin kubeconfig (`system:masters`), for kubectl and helm.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The API server's audit log: one JSON event per line.
    pub fn audit_log(&self) -> &Path {
        &self.audit_log
    }

    /// Every request the API server has answered so far, from its audit log.
    pub fn audit_events(&self) -> Result<Vec<AuditEvent>, ControlPlaneError> {
        audit::read(&self.audit_log)
    }

    /// The nodes KWOK plays.
    pub fn nodes(&self) -> &[String] {
        &self.nodes
    }

    /// How long [`ControlPlane::start`] took.
    pub fn started_in(&self) -> Duration {
        self.started_in
    }

    /// The components, in start order, with their PIDs and logs.
    pub fn components(&self) -> &[Component] {
        &self.components
    }

    /// The temporary directory with every file of the control plane.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A client with the admin's credentials.
    pub async fn client(&self) -> Result<kube::Client, ControlPlaneError> {
        self.client_with_token(&self.admin_token).await
    }

    /// A client that authenticates with `token`.
    pub async fn client_with_token(&self, token: &str) -> Result<kube::Client, ControlPlaneError> {
        let path = self
            .dir
            .path()
            .join(format!("client-{}.kubeconfig", short_hash(token)));
        self.write_kubeconfig(&path, token)?;
        client_from_kubeconfig(&path).await
    }

    /// A token for the ServiceAccount `namespace/name`, from the TokenRequest API, valid
    /// for a day (a sandbox outlives an hour): the identity an operator runs as when its
    /// chart installs it.
    pub async fn service_account_token(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<String, ControlPlaneError> {
        let api: Api<ServiceAccount> = Api::namespaced(self.client().await?, namespace);
        let request = TokenRequest {
            spec: Some(TokenRequestSpec {
                audiences: Some(vec![ISSUER.to_owned()]),
                expiration_seconds: Some(TOKEN_LIFETIME_SECONDS),
                ..TokenRequestSpec::default()
            }),
            ..TokenRequest::default()
        };
        let response = api
            .create_token_request(name, &PostParams::default(), &request)
            .await
            .map_err(|source| ControlPlaneError::Api {
                doing: format!("requesting a token for ServiceAccount {namespace}/{name}"),
                source,
            })?;
        response
            .status
            .and_then(|status| status.token)
            .ok_or_else(|| ControlPlaneError::Generate("a TokenRequest without a token".to_owned()))
    }

    /// Creates `crds` through the real apiextensions server and waits until each is
    /// `Established`, so its kind can be served.
    pub async fn install_crds(
        &self,
        crds: &[CustomResourceDefinition],
    ) -> Result<(), ControlPlaneError> {
        let api: Api<CustomResourceDefinition> = Api::all(self.client().await?);
        for crd in crds {
            let name = crd.metadata.name.clone().unwrap_or_default();
            api.patch(
                &name,
                &PatchParams::apply("strata-test").force(),
                &Patch::Apply(crd),
            )
            .await
            .map_err(|source| ControlPlaneError::Api {
                doing: format!("applying the CRD {name}"),
                source,
            })?;
            let deadline = Instant::now() + START_TIMEOUT;
            loop {
                let established = api
                    .get_opt(&name)
                    .await
                    .ok()
                    .flatten()
                    .and_then(|crd| crd.status?.conditions)
                    .is_some_and(|conditions| {
                        conditions.iter().any(|condition| {
                            condition.type_ == "Established" && condition.status == "True"
                        })
                    });
                if established {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(ControlPlaneError::Generate(format!(
                        "the CRD {name} was not Established within {START_TIMEOUT:?}"
                    )));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Ok(())
    }

    /// Writes a kubeconfig for this server that authenticates with `token`.
    pub fn write_kubeconfig(&self, path: &Path, token: &str) -> Result<(), ControlPlaneError> {
        let content = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: strata\n  cluster:\n    \
             server: {server}\n    certificate-authority: {ca}\nusers:\n- name: strata\n  \
             user:\n    token: {token}\ncontexts:\n- name: strata\n  context:\n    cluster: \
             strata\n    user: strata\ncurrent-context: strata\n",
            server = self.server,
            ca = self.ca_file.display(),
        );
        write_private(path, &content)
    }

    /// An error naming the first component that has exited, with its last log lines.
    pub fn check_alive(&mut self) -> Result<(), ControlPlaneError> {
        self.components
            .iter_mut()
            .try_for_each(Component::check_alive)
    }

    fn spawn(
        &mut self,
        name: &'static str,
        bin: &Path,
        args: Vec<String>,
    ) -> Result<(), ControlPlaneError> {
        let component = Component::start(name, &bin.join(name), &args, self.dir.path())?;
        self.components.push(component);
        Ok(())
    }

    /// Polls `probe` until it returns something, failing early when a component dies.
    async fn wait_for<T, F, Fut>(
        &mut self,
        component: &'static str,
        waiting: &str,
        mut probe: F,
    ) -> Result<T, ControlPlaneError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            self.check_alive()?;
            if let Some(value) = probe().await {
                return Ok(value);
            }
            if Instant::now() > deadline {
                let log_tail = self
                    .components
                    .iter()
                    .find(|candidate| candidate.name() == component)
                    .map(|candidate| candidate.log_tail(30))
                    .unwrap_or_default();
                return Err(ControlPlaneError::NotReady {
                    component,
                    timeout: START_TIMEOUT,
                    waiting: waiting.to_owned(),
                    log_tail,
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        while let Some(mut component) = self.components.pop() {
            component.stop();
        }
    }
}

/// A client from the kubeconfig at `path`.
pub async fn client_from_kubeconfig(path: &Path) -> Result<kube::Client, ControlPlaneError> {
    let kubeconfig = Kubeconfig::read_from(path).map_err(|error| {
        ControlPlaneError::Generate(format!("reading {}: {error}", path.display()))
    })?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|error| ControlPlaneError::Generate(format!("a client config: {error}")))?;
    kube::Client::try_from(config).map_err(|source| ControlPlaneError::Api {
        doing: "building a client".to_owned(),
        source,
    })
}

/// `--kube-api-qps` and `--kube-api-burst` for a client rate limit of `qps`.
fn rate_limit(qps: Option<u32>) -> Vec<String> {
    qps.map(|qps| {
        vec![
            format!("--kube-api-qps={qps}"),
            format!("--kube-api-burst={}", qps.saturating_mul(2)),
        ]
    })
    .unwrap_or_default()
}

fn args(values: &[&str]) -> Vec<String> {
    values.iter().map(|value| (*value).to_owned()).collect()
}

/// Whether `GET path` on the plain-HTTP server at `address` answers 200.
async fn http_get_ok(address: &str, path: &str) -> Option<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address).await.ok()?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut response = Vec::new();
    stream
        .take(64 * 1024)
        .read_to_end(&mut response)
        .await
        .ok()?;
    let response = String::from_utf8_lossy(&response);
    let status = response.split_whitespace().nth(1)?;
    (status == "200").then_some(())
}
