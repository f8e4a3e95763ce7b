//! The pod runner: pods on one network, with their volumes, ConfigMaps, Secrets and
//! Services, each supervised by a [`RunningPod`]. It keeps every pod's hosts file
//! current as pods and Services come and go, rewriting the file in place, since a
//! bind-mounted file keeps the inode it was mounted with.
//!
//! Every name resolves as soon as its pod runs, ready or not, as if every Service set
//! `publishNotReadyAddresses`. A Service with a `clusterIP` resolves to it, and each
//! pod's own nftables rules lead it to the Service's pods ([`crate::service_rules`]);
//! any other Service's name resolves to its pods' addresses.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};

use crate::container::{ContainerError, Helper};
use crate::forward::{Forward, forward};
use crate::hosts::PodName;
use crate::image::Images;
use crate::network::{NetworkError, PodNetwork};
use crate::openshift::RestrictedV2;
use crate::pod::{Backoff, PodSetup, RunningPod};
use crate::spec::{PodFiles, hostname};
use crate::status::PodStatus;
use crate::volume::{Sources, Token, VolumeError, VolumeRoots, prepare, refresh};

pub use self::exec::ExecPlan;
use self::rules_applier::RulesApplier;
use self::service_env::master_service_env;

mod exec;
mod rules_applier;
mod service_env;
mod services;

/// Why the runner could not start or run a pod.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// The network could not be made.
    #[error(transparent)]
    Network(#[from] NetworkError),
    /// The helper is missing or failed.
    #[error(transparent)]
    Container(#[from] ContainerError),
    /// A volume could not be made.
    #[error("pod {pod}: {source}")]
    Volume {
        /// The pod.
        pod: String,
        /// Why.
        source: VolumeError,
    },
    /// A file of the runner's could not be written.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The pod is not run by this runner.
    #[error("no pod {0}")]
    UnknownPod(String),
    /// A pod cannot run as rendered.
    #[error("pod {pod} cannot run as rendered: {reason}")]
    Unrunnable {
        /// The pod.
        pod: String,
        /// Why.
        reason: String,
    },
}

/// How the runner runs pods.
#[derive(Clone, Debug)]
pub struct RunnerOptions {
    /// The image directories.
    pub images: Images,
    /// The cluster domain (`cluster.local`).
    pub domain: String,
    /// The restart back-off.
    pub backoff: Backoff,
    /// Where persistent volumes live; a directory of the runner's when `None`.
    pub claims: Option<PathBuf>,
    /// Admit every pod as OpenShift's `restricted-v2` would, in a namespace with this
    /// uid range ([`crate::openshift`]); as a plain Kubernetes node when `None`.
    pub openshift: Option<RestrictedV2>,
}

impl RunnerOptions {
    /// The kubelet's defaults with these images.
    pub fn new(images: Images) -> Self {
        Self {
            images,
            domain: "cluster.local".to_owned(),
            backoff: Backoff::default(),
            claims: None,
            openshift: None,
        }
    }
}

#[derive(Debug)]
struct Entry {
    pod: Pod,
    name: PodName,
    files: PodFiles,
    roots: VolumeRoots,
    running: RunningPod,
    forwards: Vec<Forward>,
}

/// A pod taken off the runner while it stops ([`PodRunner::begin_delete`]).
#[derive(Debug)]
pub struct Stopping {
    namespace: String,
    name: String,
    entry: Entry,
}

impl Stopping {
    /// The pod's namespace and name.
    pub fn key(&self) -> (String, String) {
        (self.namespace.clone(), self.name.clone())
    }

    /// Stops the pod as the kubelet deletes one, within `grace` when the deletion names
    /// a grace period of its own.
    pub async fn stop(mut self, grace: Option<Duration>) -> Self {
        self.entry.running.stop_within(grace).await;
        self
    }
}

/// Pods run as local processes.
#[derive(Debug)]
pub struct PodRunner {
    options: RunnerOptions,
    helper: Helper,
    network: PodNetwork,
    rules: RulesApplier,
    state: tempfile::TempDir,
    claims: PathBuf,
    sources: BTreeMap<String, Arc<RwLock<Sources>>>,
    services: BTreeMap<(String, String), Service>,
    pods: BTreeMap<(String, String), Entry>,
}

fn namespace_of(metadata: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".to_owned())
}

impl PodRunner {
    /// A runner with its own network and state directory. Needs root and iproute2.
    pub fn new(options: RunnerOptions) -> Result<Self, RunnerError> {
        let helper = Helper::locate()?;
        let network = PodNetwork::create()?;
        let state = tempfile::Builder::new()
            .prefix("strata-pod-runner-")
            .tempdir()
            .map_err(|source| RunnerError::Io {
                path: std::env::temp_dir(),
                source,
            })?;
        let claims = options
            .claims
            .clone()
            .unwrap_or_else(|| state.path().join("claims"));
        Ok(Self {
            options,
            helper,
            network,
            rules: RulesApplier::start(),
            state,
            claims,
            sources: BTreeMap::new(),
            services: BTreeMap::new(),
            pods: BTreeMap::new(),
        })
    }

    /// Where persistent volumes live: `<claims>/<namespace>/<claim>`.
    pub fn claims(&self) -> &Path {
        &self.claims
    }

    fn sources(&mut self, namespace: &str) -> Arc<RwLock<Sources>> {
        self.sources
            .entry(namespace.to_owned())
            .or_default()
            .clone()
    }

    /// Adds or replaces a ConfigMap; the volumes that project it are rewritten.
    pub fn apply_config_map(&mut self, config_map: ConfigMap) -> Result<(), RunnerError> {
        let namespace = namespace_of(&config_map.metadata);
        let name = config_map.metadata.name.clone().unwrap_or_default();
        if let Ok(mut sources) = self.sources(&namespace).write() {
            sources.config_maps.insert(name, config_map);
        }
        self.refresh_volumes(&namespace)
    }

    /// Adds or replaces a Secret; the volumes that project it are rewritten.
    pub fn apply_secret(&mut self, secret: Secret) -> Result<(), RunnerError> {
        let namespace = namespace_of(&secret.metadata);
        let name = secret.metadata.name.clone().unwrap_or_default();
        if let Ok(mut sources) = self.sources(&namespace).write() {
            sources.secrets.insert(name, secret);
        }
        self.refresh_volumes(&namespace)
    }

    /// A listener on a Service's virtual `address:port`, reached from every pod; see
    /// [`PodNetwork::listen_in_bridge`](crate::network::PodNetwork::listen_in_bridge).
    pub fn listen_for_service(
        &self,
        address: std::net::Ipv4Addr,
        port: u16,
    ) -> Result<std::net::TcpListener, RunnerError> {
        Ok(self.network.listen_in_bridge(address, port)?)
    }

    /// Sets the ServiceAccount token that `pod`'s projected volumes with `audience`
    /// (empty: the API server's) show; the node agent requests it before the pod runs.
    pub fn set_service_account_token(
        &mut self,
        namespace: &str,
        pod: &str,
        audience: &str,
        token: String,
    ) {
        if let Ok(mut sources) = self.sources(namespace).write() {
            sources
                .service_account_tokens
                .insert((pod.to_owned(), audience.to_owned()), Token(token));
        }
    }

    /// Drops the ServiceAccount tokens of `pod`, which is gone.
    pub fn forget_service_account_tokens(&mut self, namespace: &str, pod: &str) {
        if let Ok(mut sources) = self.sources(namespace).write() {
            sources
                .service_account_tokens
                .retain(|(owner, _), _| owner != pod);
        }
    }

    /// Adds or replaces a Service, whose names then resolve to its virtual address, or
    /// to the pods it selects when it is headless. A Service without an address (from a
    /// manifest, with no API server to give one) gets one, as the API server would.
    pub fn apply_service(&mut self, mut service: Service) -> Result<(), RunnerError> {
        let key = (
            namespace_of(&service.metadata),
            service.metadata.name.clone().unwrap_or_default(),
        );
        services::assign_cluster_ip(&mut service, &key, &self.services);
        self.services.insert(key, service);
        self.write_hosts()
    }

    /// Removes a deleted Service: its names no longer resolve, and its rules go.
    pub fn remove_service(&mut self, namespace: &str, name: &str) -> Result<(), RunnerError> {
        self.services
            .remove(&(namespace.to_owned(), name.to_owned()));
        self.write_hosts()
    }

    fn refresh_volumes(&self, namespace: &str) -> Result<(), RunnerError> {
        let Some(sources) = self
            .sources
            .get(namespace)
            .and_then(|sources| sources.read().ok().map(|sources| sources.clone()))
        else {
            return Ok(());
        };
        for ((pod_namespace, pod), entry) in &self.pods {
            if pod_namespace == namespace {
                refresh(&entry.pod, &sources, &entry.roots).map_err(|source| {
                    RunnerError::Volume {
                        pod: pod.clone(),
                        source,
                    }
                })?;
            }
        }
        Ok(())
    }

    /// Starts `pod`: its network, volumes and containers. Returns once it is started,
    /// not once it is ready.
    pub fn run(&mut self, pod: Pod) -> Result<(), RunnerError> {
        let namespace = namespace_of(&pod.metadata);
        let name = pod.metadata.name.clone().unwrap_or_default();
        let key = (namespace.clone(), name.clone());
        if self.pods.contains_key(&key) {
            return Ok(());
        }
        let pod = match self.options.openshift {
            Some(range) => range.admit(pod).map_err(|reason| RunnerError::Unrunnable {
                pod: name.clone(),
                reason,
            })?,
            None => pod,
        };
        self.check_runnable(&pod, &name)?;
        let network_name = format!("{namespace}/{name}");
        let address = self.network.add_pod(&network_name)?;
        let dir = self.state.path().join("pods").join(&namespace).join(&name);
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| RunnerError::Io { path, source }
        };
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let files = PodFiles {
            hosts: dir.join("hosts"),
            hostname: dir.join("hostname"),
            resolv_conf: dir.join("resolv.conf"),
            service_rules: dir.join("services.nft"),
        };
        std::fs::write(&files.hostname, format!("{}\n", hostname(&pod)))
            .map_err(io(&files.hostname))?;
        std::fs::write(
            &files.resolv_conf,
            format!(
                "search {namespace}.svc.{domain} svc.{domain} {domain}\noptions ndots:5\n",
                domain = self.options.domain
            ),
        )
        .map_err(io(&files.resolv_conf))?;
        let roots = VolumeRoots {
            pod: dir.clone(),
            claims: self.claims.clone(),
        };
        let sources = self.sources(&namespace);
        let snapshot = sources
            .read()
            .map(|sources| sources.clone())
            .unwrap_or_default();
        let volumes = prepare(&pod, &snapshot, &roots).map_err(|source| RunnerError::Volume {
            pod: name.clone(),
            source,
        })?;
        let spec = pod.spec.as_ref();
        let pod_name = PodName {
            address,
            hostname: hostname(&pod),
            subdomain: spec.and_then(|spec| spec.subdomain.clone()),
            namespace: namespace.clone(),
        };
        let netns = self.network.netns_path(&network_name)?;
        let mut with_status = pod.clone();
        with_status.status.get_or_insert_default().pod_ip = Some(address.to_string());
        let setup = PodSetup {
            pod: with_status,
            images: self.options.images.clone(),
            sources,
            helper: self.helper.clone(),
            netns,
            address,
            dir,
            files: files.clone(),
            volumes,
            backoff: self.options.backoff,
            service_env: master_service_env(&self.services),
        };
        // The hosts file must exist before the first container binds it. A record of
        // rules left by an earlier pod of this name (its directory survived) must not
        // keep this one's namespace without rules.
        let _ = std::fs::remove_file(&files.service_rules);
        if let Err(error) = self.write_hosts_with(Some((&pod, &pod_name, &files))) {
            let _ = self.network.remove_pod(&network_name);
            return Err(error);
        }
        self.pods.insert(
            key,
            Entry {
                pod,
                name: pod_name,
                files,
                roots,
                running: RunningPod::start(setup),
                forwards: Vec::new(),
            },
        );
        Ok(())
    }

    /// What the runner cannot run as rendered, found before anything starts.
    fn check_runnable(&self, pod: &Pod, name: &str) -> Result<(), RunnerError> {
        let spec = pod.spec.clone().unwrap_or_default();
        let unrunnable = |reason: String| RunnerError::Unrunnable {
            pod: name.to_owned(),
            reason,
        };
        for container in spec
            .init_containers
            .iter()
            .flatten()
            .chain(&spec.containers)
        {
            let reference = container.image.clone().unwrap_or_default();
            self.options
                .images
                .get(&reference)
                .map_err(|error| unrunnable(error.to_string()))?;
        }
        if spec.host_network == Some(true) {
            return Err(unrunnable(
                "hostNetwork pods would share the host's network".to_owned(),
            ));
        }
        Ok(())
    }

    /// Stops `pod` as the kubelet deletes one and removes it from the network. Its
    /// persistent volumes stay.
    pub async fn delete(&mut self, namespace: &str, name: &str) -> Result<(), RunnerError> {
        self.delete_within(namespace, name, None).await
    }

    /// Stops `pod` as [`PodRunner::delete`] does, within the deletion's own grace period
    /// when it names one (`metadata.deletionGracePeriodSeconds`).
    pub async fn delete_within(
        &mut self,
        namespace: &str,
        name: &str,
        grace: Option<Duration>,
    ) -> Result<(), RunnerError> {
        let stopping = self.begin_delete(namespace, name)?;
        self.finish_delete(stopping.stop(grace).await)
    }

    /// Takes `pod` off the runner to be stopped with [`Stopping::stop`] on a task of its
    /// own, as a kubelet stops pods side by side while it goes on serving the others;
    /// its network stays until [`PodRunner::finish_delete`].
    pub fn begin_delete(&mut self, namespace: &str, name: &str) -> Result<Stopping, RunnerError> {
        let entry = self
            .pods
            .remove(&(namespace.to_owned(), name.to_owned()))
            .ok_or_else(|| RunnerError::UnknownPod(name.to_owned()))?;
        let stopping = Stopping {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            entry,
        };
        self.write_rules()?;
        Ok(stopping)
    }

    /// Removes a stopped pod from the network, with its files. Its persistent volumes
    /// stay.
    pub fn finish_delete(&mut self, stopped: Stopping) -> Result<(), RunnerError> {
        let Stopping {
            namespace,
            name,
            entry,
        } = stopped;
        self.forget_service_account_tokens(&namespace, &name);
        self.network.remove_pod(&format!("{namespace}/{name}"))?;
        let _ = std::fs::remove_dir_all(&entry.roots.pod);
        self.write_hosts()
    }

    /// Kills `pod`'s processes at once, as a node that fails does; the pod stays
    /// listed, with its containers ended, until it is deleted.
    pub fn kill(&mut self, namespace: &str, name: &str) -> Result<(), RunnerError> {
        let entry = self
            .pods
            .get_mut(&(namespace.to_owned(), name.to_owned()))
            .ok_or_else(|| RunnerError::UnknownPod(name.to_owned()))?;
        entry.running.kill();
        Ok(())
    }

    /// The pod's status.
    pub fn status(&self, namespace: &str, name: &str) -> Option<PodStatus> {
        self.pods
            .get(&(namespace.to_owned(), name.to_owned()))
            .map(|entry| entry.running.status())
    }

    /// Every pod's key and status.
    pub fn statuses(&self) -> Vec<((String, String), PodStatus)> {
        self.pods
            .iter()
            .map(|(key, entry)| (key.clone(), entry.running.status()))
            .collect()
    }

    /// The log of a container's run (0 for the first).
    pub fn log(
        &self,
        namespace: &str,
        name: &str,
        container: &str,
        attempt: i32,
    ) -> Option<PathBuf> {
        self.pods
            .get(&(namespace.to_owned(), name.to_owned()))
            .map(|entry| entry.running.log(container, attempt))
    }

    /// The pod's uid, as the API server gave it.
    pub fn uid(&self, namespace: &str, name: &str) -> Option<String> {
        self.pods
            .get(&(namespace.to_owned(), name.to_owned()))
            .and_then(|entry| entry.pod.metadata.uid.clone())
    }

    /// Forwards a free loopback port of the host to `port` of the pod, for as long as
    /// the pod runs here; returns the host's end.
    pub async fn forward(
        &mut self,
        namespace: &str,
        name: &str,
        port: u16,
    ) -> Result<std::net::SocketAddr, RunnerError> {
        let any_port = std::net::SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
        self.forward_from(any_port, namespace, name, port).await
    }

    /// Forwards `local` to `port` of the pod, as [`Self::forward`] does: a pod run again
    /// can be reached where it was before (`kubectl port-forward 8080:80`).
    pub async fn forward_from(
        &mut self,
        local: std::net::SocketAddr,
        namespace: &str,
        name: &str,
        port: u16,
    ) -> Result<std::net::SocketAddr, RunnerError> {
        self.forward_inside(local, namespace, name, None, port)
            .await
    }

    /// Forwards a free loopback port of the host to `port` on the pod's own loopback, as
    /// `kubectl port-forward` does (the kubelet dials `localhost` inside the pod's
    /// network namespace): what a user with `pods/portforward` reaches, servers bound
    /// to `127.0.0.1` included. Returns the host's end.
    pub async fn port_forward(
        &mut self,
        namespace: &str,
        name: &str,
        port: u16,
    ) -> Result<std::net::SocketAddr, RunnerError> {
        let any_port = std::net::SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
        self.forward_inside(any_port, namespace, name, Some(Ipv4Addr::LOCALHOST), port)
            .await
    }

    /// Forwards `local` to `address:port` inside the pod's network namespace, the pod's
    /// own address when `address` is `None`.
    async fn forward_inside(
        &mut self,
        local: std::net::SocketAddr,
        namespace: &str,
        name: &str,
        address: Option<Ipv4Addr>,
        port: u16,
    ) -> Result<std::net::SocketAddr, RunnerError> {
        let netns = self.network.netns_path(&format!("{namespace}/{name}"))?;
        let entry = self
            .pods
            .get_mut(&(namespace.to_owned(), name.to_owned()))
            .ok_or_else(|| RunnerError::UnknownPod(name.to_owned()))?;
        let address = address.unwrap_or(entry.name.address);
        let opened = forward(local, netns, address, port)
            .await
            .map_err(|source| RunnerError::Io {
                path: format!("{local} (forward to {name}, {address}:{port})").into(),
                source,
            })?;
        let local = opened.local;
        entry.forwards.push(opened);
        Ok(local)
    }

    /// The pod's names: its FQDN (when it has a subdomain) and its hostname.
    pub fn names(&self, namespace: &str, name: &str) -> Option<Vec<String>> {
        let entry = self.pods.get(&(namespace.to_owned(), name.to_owned()))?;
        Some(vec![
            entry.name.fqdn(&self.options.domain),
            entry.name.hostname.clone(),
        ])
    }

    /// The pod's address.
    pub fn address(&self, namespace: &str, name: &str) -> Option<Ipv4Addr> {
        self.pods
            .get(&(namespace.to_owned(), name.to_owned()))
            .map(|entry| entry.name.address)
    }

    /// Runs `work` on a thread inside `pod`'s network (a client reaching the pods).
    pub fn in_pod<T: Send + 'static>(
        &self,
        namespace: &str,
        name: &str,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, RunnerError> {
        Ok(self.network.in_pod(&format!("{namespace}/{name}"), work)?)
    }

    /// Stops every pod at once, as [`Self::delete`] does.
    pub async fn stop_all(&mut self) {
        let entries: Vec<Entry> = std::mem::take(&mut self.pods).into_values().collect();
        let stopping: Vec<_> = entries
            .into_iter()
            .map(|entry| tokio::spawn(entry.running.stop()))
            .collect();
        for stop in stopping {
            let _ = stop.await;
        }
    }

    /// Stops every pod, as [`Self::delete`] does, and removes the network.
    pub async fn shutdown(mut self) {
        self.stop_all().await;
    }
}
