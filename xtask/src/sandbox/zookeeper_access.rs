//! How the demo reaches a ZooKeeper ensemble on the runner's node, as a client in the
//! cluster would: through the port its discovery ConfigMap names, over TLS with the CA
//! that ConfigMap publishes when it says `ZOOKEEPER_TLS` (the default), and with the
//! server's name checked. The servers are reached through the runner's loopback
//! forwards, so each check names the pod's DNS name itself: the Rust client sends it as
//! the name to verify, and the ZooKeeper CLI resolves it to the forward through a hosts
//! file of its own (`jdk.net.hosts.file`), with host name verification on.

use std::fs;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use super::POLL_PERIOD;
use super::kubectl::{Kubectl, output};
use super::operator_pods::OperatorPods;
use crate::tools::SandboxTools;
use strata_testing::process::Stop;

/// The plaintext client port.
const CLIENT_PORT: u16 = 2181;
/// The secure client port.
const SECURE_CLIENT_PORT: u16 = 2282;

/// An ensemble as its discovery ConfigMap describes it.
pub(super) struct Ensemble {
    namespace: String,
    /// With TLS, the CA (a file for the CLI, and the Rust client's configuration).
    tls: Option<(PathBuf, Arc<rustls::ClientConfig>)>,
    dir: PathBuf,
}

impl Ensemble {
    /// The ensemble of the cluster `name` in `namespace`, from its discovery ConfigMap;
    /// `dir` keeps the CA and hosts files.
    pub(super) fn read(kubectl: &Kubectl, namespace: &str, name: &str) -> anyhow::Result<Self> {
        let data = &kubectl.config_map_data(namespace, name)?;
        let dir = kubectl.home.join(format!("zookeeper-{namespace}-{name}"));
        fs::create_dir_all(&dir)?;
        let tls = if data["ZOOKEEPER_TLS"] == "true" {
            let ca = data["ca.crt"].as_str().with_context(|| {
                format!("the discovery ConfigMap {name} says TLS but has no ca.crt")
            })?;
            let ca_file = dir.join("ca.pem");
            fs::write(&ca_file, ca)?;
            let config = strata_testing::tls::client_config(ca, None)
                .map_err(|error| anyhow::anyhow!("the CA of {name}: {error}"))?;
            Some((ca_file, config))
        } else {
            None
        };
        Ok(Self {
            namespace: namespace.to_owned(),
            tls,
            dir,
        })
    }

    /// Whether clients connect over TLS.
    pub(super) fn tls(&self) -> bool {
        self.tls.is_some()
    }

    /// The port clients connect to.
    fn port(&self) -> u16 {
        if self.tls() {
            SECURE_CLIENT_PORT
        } else {
            CLIENT_PORT
        }
    }

    /// `<pod>.<statefulset>.<namespace>.svc.cluster.local`: the name the pod's
    /// certificate must cover.
    fn fqdn(&self, pod: &str) -> String {
        let set = pod.rsplit_once('-').map_or(pod, |(set, _)| set);
        format!("{pod}.{set}.{}.svc.cluster.local", self.namespace)
    }

    /// The host's end of the runner's forward to `pod`'s client port.
    pub(super) fn forwarded(
        &self,
        pods: &OperatorPods<'_>,
        pod: &str,
    ) -> anyhow::Result<SocketAddr> {
        let port = self.port();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(address) = pods.agent.forwarded(&format!("{pod}:{port}")) {
                return Ok(address);
            }
            if Instant::now() > deadline {
                bail!("the runner forwards no port {port} of {pod}");
            }
            std::thread::sleep(POLL_PERIOD);
        }
    }

    /// A four-letter word to `pod`, over TLS with its name checked when the ensemble
    /// serves TLS.
    pub(super) fn four_letter_word(
        &self,
        pods: &OperatorPods<'_>,
        pod: &str,
        word: &str,
    ) -> anyhow::Result<String> {
        let address = self.forwarded(pods, pod)?;
        match &self.tls {
            Some((_, config)) => strata_testing::tls::four_letter_word(
                config.clone(),
                &self.fqdn(pod),
                address,
                word,
            )
            .map(|(answer, _)| answer)
            .map_err(|error| anyhow::anyhow!("{word} over TLS to {pod}: {error}")),
            None => super::zookeeper::four_letter_word(address, word)
                .with_context(|| format!("{word} to {pod} through {address}")),
        }
    }

    /// Runs the ZooKeeper CLI (`ZooKeeperMain`, which `zkCli.sh` runs) with one command
    /// against `pod`.
    pub(super) fn cli(
        &self,
        tools: &SandboxTools,
        pods: &OperatorPods<'_>,
        pod: &str,
        command: &[&str],
    ) -> anyhow::Result<String> {
        let address = self.forwarded(pods, pod)?;
        let mut java = Command::new(&tools.images.java);
        java.args(["-Xmx64m", "-cp", &tools.images.zookeeper_classpath]);
        let server = match &self.tls {
            Some((ca_file, _)) => {
                let fqdn = self.fqdn(pod);
                let hosts = self.dir.join(format!("hosts-{pod}"));
                fs::write(&hosts, format!("{} {fqdn}\n", address.ip()))?;
                java.arg(format!("-Djdk.net.hosts.file={}", hosts.display()))
                    .arg("-Dzookeeper.client.secure=true")
                    .arg("-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty")
                    .arg(format!(
                        "-Dzookeeper.ssl.trustStore.location={}",
                        ca_file.display()
                    ))
                    .arg("-Dzookeeper.ssl.trustStore.type=PEM");
                format!("{fqdn}:{}", address.port())
            }
            None => address.to_string(),
        };
        output(
            java.arg("org.apache.zookeeper.ZooKeeperMain")
                .args(["-server", &server])
                .args(command),
            "the ZooKeeper CLI",
            command,
            Stop::Group,
        )
    }

    /// The children of `path`, by the ZooKeeper CLI: its `[a, b]` line, without the
    /// client's log lines.
    pub(super) fn children(
        &self,
        tools: &SandboxTools,
        pods: &OperatorPods<'_>,
        pod: &str,
        path: &str,
    ) -> anyhow::Result<String> {
        let printed = self.cli(tools, pods, pod, &["ls", path])?;
        printed
            .lines()
            .rev()
            .find(|line| line.starts_with('['))
            .map(str::to_owned)
            .with_context(|| format!("the ZooKeeper CLI printed no children of {path}: {printed}"))
    }
}
