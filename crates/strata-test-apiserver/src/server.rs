//! The server handle: registration, request log, faults, and the `kube::Client` it serves.

use std::sync::{Arc, Mutex};

use kube::Resource;

use crate::{
    fault::Fault,
    kinds::{ResourceInfo, ScopeKind, builtins},
    lock,
    requests::{RequestRecord, Verb},
    service::ApiService,
    store::State,
};

/// An in-memory Kubernetes API server for tests.
///
/// Cheap to clone; clones share state. Hand [`TestApiServer::client`] to the code under
/// test and inspect or mutate the state directly through the methods of this type, which
/// are neither logged nor subject to faults.
#[derive(Clone, Debug)]
pub struct TestApiServer {
    pub(crate) state: Arc<Mutex<State>>,
    pub(crate) requests: Arc<Mutex<Vec<RequestRecord>>>,
    pub(crate) faults: Arc<Mutex<Vec<Fault>>>,
}

impl Default for TestApiServer {
    fn default() -> Self {
        Self::new()
    }
}

impl TestApiServer {
    /// A server that already serves the built-in kinds our operators use (Pods, Services,
    /// ConfigMaps, Secrets, ServiceAccounts, PVCs, Endpoints, Namespaces, Nodes, core and
    /// events.k8s.io Events, StatefulSets, Deployments, DaemonSets, ReplicaSets, Jobs,
    /// PodDisruptionBudgets, Ingresses, Leases, RBAC roles and bindings, CRDs).
    pub fn new() -> Self {
        let server = Self::empty();
        for info in builtins() {
            server.register_resource(info);
        }
        server
    }

    /// A server that serves nothing until resources are registered.
    pub fn empty() -> Self {
        Self {
            state: Arc::new(Mutex::new(State::new())),
            requests: Arc::new(Mutex::new(Vec::new())),
            faults: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Serves a custom resource with a status subresource; like for real custom resources,
    /// PUT requires `metadata.resourceVersion`.
    ///
    /// Use [`TestApiServer::register_resource`] with [`ResourceInfo::of`] for a kind
    /// without status subresource.
    pub fn register<K>(&self) -> &Self
    where
        K: Resource<DynamicType = ()>,
        K::Scope: ScopeKind,
    {
        self.register_resource(
            ResourceInfo::of::<K>()
                .with_status()
                .requiring_resource_version_on_update(),
        )
    }

    /// Serves a resource described explicitly; replaces an earlier definition of the same
    /// group and plural.
    pub fn register_resource(&self, info: ResourceInfo) -> &Self {
        lock(&self.state).register(info);
        self
    }

    /// The `tower::Service` that answers kube-client requests.
    pub fn service(&self) -> ApiService {
        ApiService::new(self.clone(), None)
    }

    /// A `kube::Client` talking to this server, defaulting to namespace `default`.
    ///
    /// Must be called inside a tokio runtime: the client spawns its request buffer task.
    pub fn client(&self) -> kube::Client {
        self.client_in("default")
    }

    /// A `kube::Client` talking to this server with another default namespace.
    pub fn client_in(&self, default_namespace: &str) -> kube::Client {
        kube::Client::new(self.service(), default_namespace)
    }

    /// A `kube::Client` whose requests are logged with `user` as their
    /// [`RequestRecord::user`], to tell apart several processes sharing one API (two
    /// operator replicas, an operator and a test). Namespace `default`.
    pub fn client_as(&self, user: &str) -> kube::Client {
        kube::Client::new(
            ApiService::new(self.clone(), Some(user.to_owned())),
            "default",
        )
    }

    /// Every request served since the start or the last [`TestApiServer::reset_requests`].
    pub fn requests(&self) -> Vec<RequestRecord> {
        lock(&self.requests).clone()
    }

    /// Forgets the request log, e.g. after setup so a test only counts what follows.
    pub fn reset_requests(&self) {
        lock(&self.requests).clear();
    }

    /// Number of logged requests with this verb for `resource` (see [`RequestRecord::is_for`]:
    /// `plural`, `plural.group`, `plural/status`).
    pub fn count(&self, verb: Verb, resource: &str) -> usize {
        lock(&self.requests)
            .iter()
            .filter(|r| r.verb == verb && r.is_for(resource))
            .count()
    }

    /// All logged writes (create, update, patch, delete, deletecollection).
    pub fn writes(&self) -> Vec<RequestRecord> {
        self.writes_excluding(&[])
    }

    /// Logged writes, leaving out the given resources with all their subresources
    /// (`&["events", "leases"]` hides event recording and leader election).
    pub fn writes_excluding(&self, resources: &[&str]) -> Vec<RequestRecord> {
        lock(&self.requests)
            .iter()
            .filter(|r| r.verb.is_write())
            .filter(|r| !resources.iter().any(|res| r.is_for_any_subresource(res)))
            .cloned()
            .collect()
    }

    /// All logged list requests.
    pub fn lists(&self) -> Vec<RequestRecord> {
        lock(&self.requests)
            .iter()
            .filter(|r| r.verb == Verb::List)
            .cloned()
            .collect()
    }

    /// Adds a fault; faults apply in injection order (see the crate's `fault` module).
    pub fn inject(&self, fault: Fault) {
        lock(&self.faults).push(fault);
    }

    /// Removes all faults, including `always` ones.
    pub fn clear_faults(&self) {
        lock(&self.faults).clear();
    }

    /// The faults that can still fire.
    pub fn active_faults(&self) -> Vec<Fault> {
        lock(&self.faults).clone()
    }
}
