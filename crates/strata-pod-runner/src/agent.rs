//! The runner as a node of a real control plane: it registers a Node (without KWOK's
//! annotation, so KWOK leaves it alone), renews the node's Lease as a kubelet does, runs
//! the pods the scheduler binds to it with the ConfigMaps, Secrets and Services of the
//! API, reports their status back (phase, conditions, readiness, restarts, termination
//! messages), and ends a deleted pod's processes before it confirms the deletion. So the
//! StatefulSet controller and the operators drive real daemons.
//!
//! With [`NodeOptions::api_server`], the pods reach the API server as in a cluster: at
//! the `kubernetes` Service's address, which the runner serves inside the pod network
//! and relays to the API server (kube-proxy's part), with the `KUBERNETES_SERVICE_*`
//! variables the kubelet sets, and with a ServiceAccount token requested for each pod
//! that projects one (the kubelet's part). So an operator deployed by its chart runs
//! here with in-cluster configuration.
//!
//! Every container port of a running pod is forwarded to a loopback port of the host;
//! [`NodeAgent::forwarded`] maps a pod's `host:port` to it, for an operator that runs in
//! the test's process and must reach the pods as an in-cluster operator would.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::{StreamExt, stream};
use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service, ServiceAccount, Taint};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client};
use serde_json::{Value, json};
use tokio::sync::{Mutex, mpsc};
use tokio::task::JoinHandle;

use crate::runner::{PodRunner, Stopping};

use self::node::{HOST_IP, register, renew_lease};
use self::relay::relay_api_server;

mod node;
mod relay;

/// How long one TokenRequest may take.
const TOKEN_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How often pod status is compared with what was last reported.
const REPORT_EVERY: Duration = Duration::from_millis(500);

/// Why the agent could not register its node.
#[derive(Debug, thiserror::Error)]
#[error("the node agent cannot {doing}: {source}")]
pub struct AgentError {
    doing: String,
    source: kube::Error,
}

/// `host:port` of a pod to the host's loopback end of its forward.
pub type Forwards = Arc<RwLock<BTreeMap<String, SocketAddr>>>;

/// How the node presents itself beyond its name, and whether its pods reach the API
/// server.
#[derive(Clone, Debug, Default)]
pub struct NodeOptions {
    /// Labels of the Node besides the well-known ones, for a node selector.
    pub labels: BTreeMap<String, String>,
    /// Taints of the Node, so that only pods that tolerate them land here.
    pub taints: Vec<Taint>,
    /// The API server's address as this process reaches it. With it, the pods reach
    /// the API server through the `kubernetes` Service's address.
    pub api_server: Option<SocketAddr>,
}

/// A runner serving a node of a control plane.
#[derive(Debug)]
pub struct NodeAgent {
    runner: Arc<Mutex<PodRunner>>,
    forwards: Forwards,
    tasks: Vec<JoinHandle<()>>,
    /// The API server relay: stopped after the pods, so that an operator stopping
    /// can still release its Lease.
    relay: Option<JoinHandle<()>>,
}

impl NodeAgent {
    /// Registers `node` and starts serving it with `runner`; its pods do not reach the
    /// API server.
    pub async fn start(client: Client, node: &str, runner: PodRunner) -> Result<Self, AgentError> {
        Self::start_with(client, node, runner, NodeOptions::default()).await
    }

    /// Registers `node` as `options` say and starts serving it with `runner`.
    pub async fn start_with(
        client: Client,
        node: &str,
        runner: PodRunner,
        options: NodeOptions,
    ) -> Result<Self, AgentError> {
        register(&client, node, &options).await?;
        let mut runner = runner;
        let relay = match options.api_server {
            Some(api_server) => Some(relay_api_server(&client, &mut runner, api_server).await?),
            None => None,
        };
        let runner = Arc::new(Mutex::new(runner));
        let forwards = Forwards::default();
        let lease = tokio::spawn(renew_lease(client.clone(), node.to_owned()));
        let serve = tokio::spawn(serve(
            client,
            node.to_owned(),
            runner.clone(),
            forwards.clone(),
        ));
        Ok(Self {
            runner,
            forwards,
            tasks: vec![lease, serve],
            relay,
        })
    }

    /// The runner, for what a test does to the pods directly (exec, kill, logs).
    pub fn runner(&self) -> Arc<Mutex<PodRunner>> {
        self.runner.clone()
    }

    /// The host's end of the forward of a pod's `host:port` (its FQDN, hostname or
    /// address), if the pod runs here.
    pub fn forwarded(&self, address: &str) -> Option<SocketAddr> {
        self.forwards.read().ok()?.get(address).copied()
    }

    /// The forwards, shared, for a closure that maps addresses later.
    pub fn forwards(&self) -> Forwards {
        self.forwards.clone()
    }

    /// Stops serving: every pod is stopped as on a node shutdown, and the node's
    /// network is removed.
    pub async fn shutdown(mut self) {
        for task in std::mem::take(&mut self.tasks) {
            task.abort();
            let _ = task.await;
        }
        self.runner.lock().await.stop_all().await;
        if let Some(relay) = self.relay.take() {
            relay.abort();
            let _ = relay.await;
        }
    }
}

impl Drop for NodeAgent {
    fn drop(&mut self) {
        for task in self.tasks.iter().chain(&self.relay) {
            task.abort();
        }
    }
}

enum Change {
    Pod(Box<Event<Pod>>),
    /// A deleted pod whose processes have ended.
    Stopped(Box<StoppedPod>),
    ConfigMap(Event<ConfigMap>),
    Secret(Event<Secret>),
    Service(Box<Event<Service>>),
    Tick,
}

fn applied<K>(event: Event<K>) -> Option<K> {
    match event {
        Event::Apply(object) | Event::InitApply(object) => Some(object),
        _ => None,
    }
}

async fn serve(client: Client, node: String, runner: Arc<Mutex<PodRunner>>, forwards: Forwards) {
    let config = watcher::Config::default();
    let pods = watcher::watcher(
        Api::<Pod>::all(client.clone()),
        config.clone().fields(&format!("spec.nodeName={node}")),
    )
    .filter_map(|event| async move { event.ok().map(|event| Change::Pod(Box::new(event))) });
    let config_maps = watcher::watcher(Api::<ConfigMap>::all(client.clone()), config.clone())
        .filter_map(|event| async move { event.ok().map(Change::ConfigMap) });
    let secrets = watcher::watcher(Api::<Secret>::all(client.clone()), config.clone())
        .filter_map(|event| async move { event.ok().map(Change::Secret) });
    let services = watcher::watcher(Api::<Service>::all(client.clone()), config).filter_map(
        |event| async move { event.ok().map(|event| Change::Service(Box::new(event))) },
    );
    let ticks = stream::unfold((), |()| async {
        tokio::time::sleep(REPORT_EVERY).await;
        Some((Change::Tick, ()))
    });
    let (stopped_sender, stopped) = mpsc::unbounded_channel();
    let stopped = stream::unfold(stopped, |mut stopped| async {
        let pod = stopped.recv().await?;
        Some((Change::Stopped(Box::new(pod)), stopped))
    });
    let mut changes = stream::select_all([
        stopped.boxed(),
        pods.boxed(),
        config_maps.boxed(),
        secrets.boxed(),
        services.boxed(),
        ticks.boxed(),
    ]);
    let mut node_state = NodeState {
        client,
        waiting: BTreeMap::new(),
        reported: BTreeMap::new(),
        tokens_for: BTreeMap::new(),
        stopping: BTreeSet::new(),
        deferred: BTreeMap::new(),
        stopped: stopped_sender,
        forwards,
    };
    while let Some(change) = changes.next().await {
        let mut runner = runner.lock().await;
        match change {
            Change::ConfigMap(event) => {
                if let Some(object) = applied(event) {
                    let _ = runner.apply_config_map(object);
                }
            }
            Change::Secret(event) => {
                if let Some(object) = applied(event) {
                    let _ = runner.apply_secret(object);
                }
            }
            Change::Service(event) => {
                let outcome = match *event {
                    Event::Delete(service) => runner.remove_service(
                        service.metadata.namespace.as_deref().unwrap_or("default"),
                        service.metadata.name.as_deref().unwrap_or_default(),
                    ),
                    event => applied(event).map_or(Ok(()), |object| runner.apply_service(object)),
                };
                if let Err(error) = outcome {
                    eprintln!("strata-pod-runner: a Service change: {error}");
                }
            }
            Change::Pod(event) => match *event {
                Event::Delete(pod) => node_state.gone(&mut runner, &pod).await,
                event => {
                    if let Some(pod) = applied(event) {
                        node_state.pod(&mut runner, pod).await;
                    }
                }
            },
            Change::Stopped(pod) => node_state.stopped(&mut runner, *pod).await,
            Change::Tick => node_state.tick(&mut runner).await,
        }
    }
}

type Key = (String, String);

/// A deleted pod whose processes have ended ([`NodeState::begin_stop`]).
struct StoppedPod {
    pod: Stopping,
    /// Its uid, for the confirmation's precondition.
    uid: Option<String>,
    /// Its host names, whose forwards go.
    names: Vec<String>,
}

fn key(pod: &Pod) -> Key {
    (
        pod.metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_owned()),
        pod.metadata.name.clone().unwrap_or_default(),
    )
}

struct NodeState {
    client: Client,
    /// Pods that could not start yet (a ConfigMap not seen yet...), retried each tick.
    waiting: BTreeMap<Key, (Pod, String)>,
    /// The status last reported for each pod.
    reported: BTreeMap<Key, Value>,
    /// The uid of the pod each pod's tokens were requested for: a pod waiting to
    /// start is not given new ones at every retry.
    tokens_for: BTreeMap<Key, String>,
    /// Deleted pods whose processes are being stopped, each on a task of its own.
    stopping: BTreeSet<Key>,
    /// The latest pod seen under a name that is stopping: a replacement the API
    /// created meanwhile (after a forced deletion), started once the old one ends.
    deferred: BTreeMap<Key, Pod>,
    /// Where those tasks report that a pod's processes have ended.
    stopped: mpsc::UnboundedSender<StoppedPod>,
    forwards: Forwards,
}

impl NodeState {
    async fn pod(&mut self, runner: &mut PodRunner, pod: Pod) {
        let (namespace, name) = key(&pod);
        if self.stopping.contains(&(namespace.clone(), name.clone())) {
            // Its replacement, or a later word about it: looked at once it has stopped.
            self.deferred.insert((namespace, name), pod);
            return;
        }
        let running_uid = runner.uid(&namespace, &name);
        if pod.metadata.deletion_timestamp.is_some() {
            self.waiting.remove(&(namespace.clone(), name.clone()));
            if running_uid.is_some() && running_uid == pod.metadata.uid {
                let grace = pod
                    .metadata
                    .deletion_grace_period_seconds
                    .and_then(|seconds| u64::try_from(seconds).ok())
                    .map(Duration::from_secs);
                self.begin_stop(runner, &namespace, &name, grace, pod.metadata.uid.clone());
                return;
            }
            self.forget_tokens(runner, &namespace, &name);
            self.confirm_deletion(&namespace, &name, pod.metadata.uid.clone())
                .await;
            return;
        }
        match running_uid {
            Some(uid) if Some(&uid) == pod.metadata.uid.as_ref() => {}
            Some(_) => {
                // A new pod of the same name (a StatefulSet's replacement).
                self.stop(runner, &namespace, &name).await;
                self.start(runner, pod).await;
            }
            None => self.start(runner, pod).await,
        }
    }

    async fn start(&mut self, runner: &mut PodRunner, pod: Pod) {
        let (namespace, name) = key(&pod);
        let ports: Vec<u16> = pod
            .spec
            .iter()
            .flat_map(|spec| spec.containers.iter())
            .flat_map(|container| container.ports.iter().flatten())
            .filter_map(|port| u16::try_from(port.container_port).ok())
            .collect();
        let key = (namespace.clone(), name.clone());
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let tokens = if self.tokens_for.get(&key) == Some(&uid) {
            Ok(())
        } else {
            let requested = self.request_tokens(runner, &pod).await;
            if requested.is_ok() {
                self.tokens_for.insert(key, uid);
            }
            requested
        };
        let started = match tokens {
            Ok(()) => runner.run(pod.clone()).map_err(|error| error.to_string()),
            Err(message) => Err(message),
        };
        if let Err(message) = started {
            let status = json!({"status": {"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Ready", "status": "False", "reason": "ContainersNotReady", "message": message}
            ]}});
            let pods: Api<Pod> = Api::namespaced(self.client.clone(), &namespace);
            let _ = pods
                .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
                .await;
            self.waiting.insert((namespace, name), (pod, message));
            return;
        }
        self.waiting.remove(&(namespace.clone(), name.clone()));
        let mut names = runner.names(&namespace, &name).unwrap_or_default();
        names.extend(
            runner
                .address(&namespace, &name)
                .map(|address| address.to_string()),
        );
        for port in ports {
            if let Ok(local) = runner.forward(&namespace, &name, port).await
                && let Ok(mut forwards) = self.forwards.write()
            {
                for host in &names {
                    forwards.insert(format!("{host}:{port}"), local);
                }
            }
        }
    }

    /// Drops a pod's tokens, and the record of them.
    fn forget_tokens(&mut self, runner: &mut PodRunner, namespace: &str, name: &str) {
        self.tokens_for
            .remove(&(namespace.to_owned(), name.to_owned()));
        runner.forget_service_account_tokens(namespace, name);
    }

    /// Requests a token for each projected `serviceAccountToken` of `pod`, bound to the
    /// pod, with the source's audience and lifetime, as the kubelet does; each request
    /// within [`TOKEN_REQUEST_TIMEOUT`].
    async fn request_tokens(&self, runner: &mut PodRunner, pod: &Pod) -> Result<(), String> {
        let (namespace, name) = key(pod);
        let spec = pod.spec.clone().unwrap_or_default();
        let account = spec
            .service_account_name
            .clone()
            .unwrap_or_else(|| "default".to_owned());
        let accounts: Api<ServiceAccount> = Api::namespaced(self.client.clone(), &namespace);
        let sources = spec
            .volumes
            .iter()
            .flatten()
            .filter_map(|volume| volume.projected.as_ref())
            .flat_map(|projected| projected.sources.iter().flatten())
            .filter_map(|source| source.service_account_token.as_ref());
        for source in sources {
            let audience = source.audience.clone().unwrap_or_default();
            let request = TokenRequest {
                spec: Some(TokenRequestSpec {
                    audiences: (!audience.is_empty()).then(|| vec![audience.clone()]),
                    expiration_seconds: source.expiration_seconds,
                    bound_object_ref: Some(BoundObjectReference {
                        api_version: Some("v1".to_owned()),
                        kind: Some("Pod".to_owned()),
                        name: Some(name.clone()),
                        uid: pod.metadata.uid.clone(),
                    }),
                    ..TokenRequestSpec::default()
                }),
                ..TokenRequest::default()
            };
            let granted = tokio::time::timeout(
                TOKEN_REQUEST_TIMEOUT,
                accounts.create_token_request(&account, &PostParams::default(), &request),
            )
            .await
            .map_err(|_| {
                format!(
                    "requesting a token of ServiceAccount {namespace}/{account}: no answer within {} s",
                    TOKEN_REQUEST_TIMEOUT.as_secs()
                )
            })?
            .map_err(|error| {
                format!("requesting a token of ServiceAccount {namespace}/{account}: {error}")
            })?;
            let token = granted
                .status
                .and_then(|status| status.token)
                .ok_or_else(|| {
                    format!("the token request of ServiceAccount {namespace}/{account} gave none")
                })?;
            runner.set_service_account_token(&namespace, &name, &audience, token);
        }
        Ok(())
    }

    async fn stop(&mut self, runner: &mut PodRunner, namespace: &str, name: &str) {
        let names = runner.names(namespace, name).unwrap_or_default();
        let _ = runner.delete(namespace, name).await;
        self.reported
            .remove(&(namespace.to_owned(), name.to_owned()));
        self.forget_forwards(&names);
    }

    /// Drops the host forwards of a pod known by `names`.
    fn forget_forwards(&self, names: &[String]) {
        if let Ok(mut forwards) = self.forwards.write() {
            forwards.retain(|address, _| {
                !names
                    .iter()
                    .any(|host| address.starts_with(&format!("{host}:")))
            });
        }
    }

    /// Stops a deleted pod on a task of its own, as a kubelet does, so that one pod's
    /// `preStop` drain holds up neither the other pods' deletions nor the status
    /// reports; [`NodeState::stopped`] finishes once its processes have ended.
    fn begin_stop(
        &mut self,
        runner: &mut PodRunner,
        namespace: &str,
        name: &str,
        grace: Option<Duration>,
        uid: Option<String>,
    ) {
        let names = runner.names(namespace, name).unwrap_or_default();
        let Ok(stopping) = runner.begin_delete(namespace, name) else {
            return;
        };
        self.stopping.insert(stopping.key());
        let report = self.stopped.clone();
        tokio::spawn(async move {
            let stopped = StoppedPod {
                pod: stopping.stop(grace).await,
                uid,
                names,
            };
            let _ = report.send(stopped);
        });
    }

    /// A deleted pod's processes have ended: its network goes, and the deletion is
    /// confirmed to the API server, which lets the StatefulSet controller recreate it.
    async fn stopped(&mut self, runner: &mut PodRunner, stopped: StoppedPod) {
        let (namespace, name) = stopped.pod.key();
        let _ = runner.finish_delete(stopped.pod);
        self.stopping.remove(&(namespace.clone(), name.clone()));
        self.reported.remove(&(namespace.clone(), name.clone()));
        self.forget_forwards(&stopped.names);
        self.forget_tokens(runner, &namespace, &name);
        self.confirm_deletion(&namespace, &name, stopped.uid.clone())
            .await;
        if let Some(pod) = self.deferred.remove(&(namespace, name))
            && pod.metadata.uid != stopped.uid
        {
            Box::pin(self.pod(runner, pod)).await;
        }
    }

    /// Confirms a graceful deletion (grace 0, only for the pod of that uid).
    async fn confirm_deletion(&self, namespace: &str, name: &str, uid: Option<String>) {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let confirm = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid,
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        let _ = pods.delete(name, &confirm).await;
    }

    async fn gone(&mut self, runner: &mut PodRunner, pod: &Pod) {
        let (namespace, name) = key(pod);
        self.waiting.remove(&(namespace.clone(), name.clone()));
        self.forget_tokens(runner, &namespace, &name);
        if runner.uid(&namespace, &name).is_some()
            && runner.uid(&namespace, &name) == pod.metadata.uid
        {
            self.stop(runner, &namespace, &name).await;
        }
    }

    async fn tick(&mut self, runner: &mut PodRunner) {
        let waiting: Vec<Pod> = self.waiting.values().map(|(pod, _)| pod.clone()).collect();
        for pod in waiting {
            self.start(runner, pod).await;
        }
        for ((namespace, name), status) in runner.statuses() {
            let Ok(value) = serde_json::to_value(status.to_api(HOST_IP)) else {
                continue;
            };
            let key = (namespace.clone(), name.clone());
            if self.reported.get(&key) == Some(&value) {
                continue;
            }
            let pods: Api<Pod> = Api::namespaced(self.client.clone(), &namespace);
            if pods
                .patch_status(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(&json!({"status": value})),
                )
                .await
                .is_ok()
            {
                self.reported.insert(key, value);
            }
        }
    }
}
