//! Real ZooKeeper 3.9.5 servers, run by the pod runner exactly as the operator renders
//! them: the image directory's jars, each pod in its own network namespace, its
//! `zoo.cfg` and `myid` from the rendered ConfigMap and init container, its data on a
//! claim that outlives the pod. The host reaches a server through a forward of its
//! client port, as `kubectl port-forward` does.

use std::error::Error;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use serde_json::Value;
use strata_pod_runner::image::Images;
use strata_pod_runner::manifest::apply_all;
use strata_pod_runner::openshift::RestrictedV2;
use strata_pod_runner::runner::{PodRunner, RunnerOptions};
use strata_pod_runner::statefulset;
use strata_testing::tools::{self, ZOOKEEPER_IMAGE};
use zookeeper_operator::controller::znode::EnsembleAddress;
use zookeeper_operator::crd::ZookeeperCluster;

use super::standalone_manifest;

/// Where every test's objects live.
pub const NAMESPACE: &str = "default";
/// ZooKeeper's client port, as rendered.
pub const CLIENT_PORT: u16 = 2181;
/// How long a server may take to start, JVM and readiness probe included.
const START_TIMEOUT: Duration = Duration::from_secs(120);

type BoxError = Box<dyn Error + Send + Sync>;

/// A runner with the ZooKeeper image directory (`STRATA_ZOOKEEPER_IMAGE`).
pub fn pod_runner() -> Result<PodRunner, BoxError> {
    pod_runner_on(None)
}

/// [`pod_runner`] admitting pods as OpenShift's `restricted-v2` does, when given a
/// namespace's uid range.
pub fn pod_runner_on(openshift: Option<RestrictedV2>) -> Result<PodRunner, BoxError> {
    let dir = tools::required_path(ZOOKEEPER_IMAGE)?;
    let mut images = Images::default();
    images.add(&dir)?;
    let mut options = RunnerOptions::new(images);
    options.openshift = openshift;
    Ok(PodRunner::new(options)?)
}

/// A pod's `address:port` on the pod network, while it runs.
pub fn pod_address(runner: &PodRunner, pod: &str, port: u16) -> Option<SocketAddr> {
    let address = runner.address(NAMESPACE, pod)?;
    Some(SocketAddr::new(address.into(), port))
}

/// Sends a four-letter word and returns the whole answer.
pub fn four_letter_word(
    address: SocketAddr,
    word: &str,
    timeout: Duration,
) -> std::io::Result<String> {
    let mut stream = TcpStream::connect_timeout(&address, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.write_all(word.as_bytes())?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer)
}

/// The `Mode:` line of a `srvr` answer (`leader`, `follower`, `standalone`), if serving.
pub fn mode_of(srvr_answer: &str) -> Option<&str> {
    srvr_answer
        .lines()
        .find_map(|line| line.strip_prefix("Mode: "))
        .map(str::trim)
}

/// The `srvr` mode of the server behind `client` (`leader`, `follower`, `observer`,
/// `standalone`), or why it does not serve.
pub fn server_mode(client: SocketAddr) -> Result<String, String> {
    match four_letter_word(client, "srvr", Duration::from_secs(2)) {
        Ok(answer) => mode_of(&answer).map(str::to_owned).ok_or(answer),
        Err(error) => Err(error.to_string()),
    }
}

/// The connection string a test hands the operator; it follows the server across
/// restarts, as a Service name does.
#[derive(Clone, Debug, Default)]
pub struct SharedHosts(Arc<RwLock<String>>);

impl SharedHosts {
    fn set(&self, hosts: String) {
        if let Ok(mut current) = self.0.write() {
            *current = hosts;
        }
    }

    /// The current connection string.
    pub fn get(&self) -> String {
        self.0.read().map(|hosts| hosts.clone()).unwrap_or_default()
    }
}

impl EnsembleAddress for SharedHosts {
    fn hosts(&self, _cluster: &ZookeeperCluster, _port: u16) -> String {
        self.get()
    }
}

/// A one-server `ZookeeperCluster` (see [`standalone_manifest`]) run as rendered.
/// Stopping it deletes its pod and keeps its claim; restarting runs the same pod again
/// on the same data.
pub struct Standalone {
    runner: PodRunner,
    pod: Pod,
    hosts: SharedHosts,
    /// The host's end of the forward, kept across restarts as a Service's name is.
    client: Option<SocketAddr>,
}

impl Standalone {
    /// Renders the cluster `name` and runs its server until it serves in standalone
    /// mode.
    pub async fn start(name: &str) -> Result<Self, BoxError> {
        let documents = strata_testing::yaml::documents(&standalone_manifest(name))?;
        let objects = zookeeper_operator::render::render(&documents)?.objects;
        let set: StatefulSet = serde_json::from_value(
            objects
                .iter()
                .find(|object| object["kind"] == "StatefulSet")
                .cloned()
                .unwrap_or(Value::Null),
        )?;
        let mut runner = pod_runner()?;
        apply_all(&mut runner, &objects)?;
        let mut standalone = Self {
            runner,
            pod: statefulset::pod(&set, 0),
            hosts: SharedHosts::default(),
            client: None,
        };
        standalone.serve().await?;
        Ok(standalone)
    }

    fn pod_name(&self) -> String {
        self.pod.metadata.name.clone().unwrap_or_default()
    }

    /// Waits until the pod is Ready, then publishes a forward of its client port.
    async fn serve(&mut self) -> Result<(), BoxError> {
        let name = self.pod_name();
        self.runner
            .wait_ready(NAMESPACE, &[&name], START_TIMEOUT)
            .await?;
        let client = match self.client {
            None => self.runner.forward(NAMESPACE, &name, CLIENT_PORT).await?,
            Some(local) => self.forward_again(local, &name).await?,
        };
        self.client = Some(client);
        let mode = server_mode(client)?;
        if mode != "standalone" {
            return Err(format!("{name}: a one-server cluster runs in mode {mode}").into());
        }
        self.hosts.set(client.to_string());
        Ok(())
    }

    /// Forwards `local` again: the old forward's listener closes as its task ends, so
    /// the port may still be taken for a moment.
    async fn forward_again(
        &mut self,
        local: SocketAddr,
        name: &str,
    ) -> Result<SocketAddr, BoxError> {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            match self
                .runner
                .forward_from(local, NAMESPACE, name, CLIENT_PORT)
                .await
            {
                Ok(client) => return Ok(client),
                Err(error) if std::time::Instant::now() > deadline => return Err(error.into()),
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    /// The server's `host:port` on this host.
    pub fn connection_string(&self) -> String {
        self.hosts.get()
    }

    /// The address to give the operator: it follows restarts.
    pub fn ensemble_address(&self) -> Arc<SharedHosts> {
        Arc::new(self.hosts.clone())
    }

    /// Deletes the pod, as a node that loses it would; its claim stays. Its forward
    /// closes, so clients are refused.
    pub async fn stop(&mut self) -> Result<(), BoxError> {
        let name = self.pod_name();
        Ok(self.runner.delete(NAMESPACE, &name).await?)
    }

    /// Runs the pod again, on its claim, and waits until it serves.
    pub async fn restart(&mut self) -> Result<(), BoxError> {
        self.runner.run(self.pod.clone())?;
        self.serve().await
    }

    /// Stops the server and removes its network.
    pub async fn shutdown(self) {
        self.runner.shutdown().await;
    }
}

/// The secure client port, the only one clients reach with TLS on.
pub const SECURE_PORT: u16 = 2282;

/// Where the image directory keeps ZooKeeper (`ZOO_HOME` of the official image).
pub const ZOOKEEPER_HOME: &str = "/apache-zookeeper-3.9.5-bin";

/// ZooKeeper's Java client in `pod`'s server container, running `command` over TLS
/// against the pod's own server, its name checked
/// ([`zookeeper_operator::build::container::java_client_script`]). Its output, or why
/// it failed.
pub async fn java_client(runner: &PodRunner, pod: &str, command: &str) -> Result<String, String> {
    let fqdn = runner
        .names(NAMESPACE, pod)
        .and_then(|names| names.into_iter().next())
        .ok_or(format!("{pod} has no name"))?;
    let script = zookeeper_operator::build::container::java_client_script(
        ZOOKEEPER_HOME,
        Some(&fqdn),
        command,
    );
    let (code, output) = runner
        .exec(
            NAMESPACE,
            pod,
            "zookeeper",
            &["bash", "-c", &script],
            Duration::from_secs(60),
        )
        .await
        .map_err(|error| error.to_string())?
        .ok_or(format!("{pod}'s zookeeper container is not running"))?;
    if code == 0 {
        Ok(output)
    } else {
        Err(format!("{command} on {pod} exited with {code}: {output}"))
    }
}
