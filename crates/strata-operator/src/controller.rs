//! Controller wiring shared by every operator: watches, the reconcile wrapper
//! (metrics, logs, Events), the error policy with backoff, readiness and
//! graceful shutdown.

mod finalizer;
mod unreadable;

pub use self::finalizer::FinalizerError;

use std::collections::HashMap;
use std::fmt::Debug;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::events::EventPublisher;
use crate::guard::Guarded;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Reporter};
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::apply::{Applier, ApplyReport, DesiredObjects, RETAINED_ANNOTATION};
use crate::cache::{ChildCaches, ChildKind};
use crate::definition::ControllerDef;
use crate::error::{BackoffPolicy, ReconcileError};
use crate::metrics::Metrics;
use crate::reference::{ReferenceIndex, References};
use strata_model::labels::INSTANCE_LABEL;
use strata_status::ConditionType;

/// Reconciles one controller runs at once. Unbounded (kube's default), an
/// operator that starts with 1,000 clusters holds 1,000 reconciles' desired
/// objects and API responses in memory together; 16 keep the API server busy
/// (a reconcile mostly waits for it) while memory stays flat.
pub const RECONCILE_CONCURRENCY: u16 = 16;

/// What every controller of one operator process shares.
#[derive(Clone)]
pub struct OperatorRuntime {
    /// The API client.
    pub client: Client,
    /// The operator's name, e.g. `zookeeper-operator`: field manager,
    /// `managed-by` label value and Event reporter.
    pub operator_name: String,
    /// Watch one namespace, or all when `None`.
    pub namespace: Option<String>,
    /// Metrics of the process.
    pub metrics: Arc<Metrics>,
    /// Cancelled on SIGTERM; controllers finish their reconciles and stop.
    pub shutdown: CancellationToken,
    /// Retry delays.
    pub backoff: BackoffPolicy,
    /// The API server's URL, for log lines about failing connections.
    pub api_server: String,
    /// The cluster's DNS domain, for the host names products are configured
    /// with ([`crate::cluster_domain`]).
    pub cluster_domain: String,
    /// Who product pods run as ([`crate::pod_security`]).
    pub pod_security: crate::pod_security::PodSecurity,
    readiness: Readiness,
}

impl std::fmt::Debug for OperatorRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorRuntime")
            .field("operator_name", &self.operator_name)
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl<X> std::fmt::Debug for Context<X> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("controller_name", &self.controller_name)
            .field("field_manager", &self.field_manager)
            .finish_non_exhaustive()
    }
}

impl OperatorRuntime {
    /// A runtime for `operator_name`.
    pub fn new(
        client: Client,
        operator_name: impl Into<String>,
        namespace: Option<String>,
    ) -> Self {
        Self {
            client,
            operator_name: operator_name.into(),
            namespace,
            metrics: Arc::new(Metrics::new()),
            shutdown: CancellationToken::new(),
            backoff: BackoffPolicy::default(),
            api_server: String::new(),
            cluster_domain: crate::cluster_domain::DEFAULT_CLUSTER_DOMAIN.to_owned(),
            pod_security: crate::pod_security::PodSecurity::Standard,
            readiness: Readiness::default(),
        }
    }

    /// The flag `/readyz` reports: true once every started controller's
    /// caches are synced.
    pub fn ready_flag(&self) -> Arc<AtomicBool> {
        self.readiness.ready.clone()
    }

    /// The runtime of one leadership term ([`crate::leader`]): shutdown is
    /// cancelled when the term ends or the process stops, and readiness counts
    /// only the controllers of this term.
    pub(crate) fn for_term(&self) -> Self {
        Self {
            shutdown: self.shutdown.child_token(),
            readiness: Readiness {
                pending: Arc::default(),
                ready: self.readiness.ready.clone(),
            },
            ..self.clone()
        }
    }

    /// Marks a standby instance ready: it is healthy and waiting for the
    /// Lease, and a rolling update of the operator must not wait for it to
    /// lead.
    pub(crate) fn set_standby(&self) {
        self.readiness.ready.store(true, Ordering::Release);
    }

    /// An `Api` for `K` in the watched namespace, or in all namespaces.
    pub fn api<K>(&self) -> Api<K>
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
    {
        match &self.namespace {
            Some(namespace) => Api::namespaced(self.client.clone(), namespace),
            None => Api::all(self.client.clone()),
        }
    }
}

/// Counts controllers whose caches are not synced yet.
#[derive(Clone, Debug, Default)]
struct Readiness {
    pending: Arc<AtomicUsize>,
    ready: Arc<AtomicBool>,
}

impl Readiness {
    fn register(&self) {
        self.pending.fetch_add(1, Ordering::AcqRel);
        self.ready.store(false, Ordering::Release);
    }

    fn synced(&self) {
        if self.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.ready.store(true, Ordering::Release);
        }
    }
}

/// The context a reconcile function gets: client, caches, Events and the
/// operator-specific `extra` value.
pub struct Context<X> {
    /// The API client.
    pub client: Client,
    /// Watch caches of the children and pods.
    pub caches: ChildCaches,
    /// Watch caches of the objects the controller reads and does not own.
    pub references: References,
    /// The controller's name, for metrics and logs.
    pub controller_name: String,
    /// Field manager of every apply.
    pub field_manager: String,
    /// The finalizer the controller registered, if any.
    pub finalizer: Option<&'static str>,
    /// Metrics of the process.
    pub metrics: Arc<Metrics>,
    /// Operator-specific state, such as a product client factory.
    pub extra: X,
    /// The values of the Secrets the certificate step read, so a reconcile in which
    /// nothing changed reads none ([`crate::certificates::read_stored`]).
    pub secret_values: crate::certificates::SecretValues,
    /// Applied to every workload's pod template in [`Context::apply`].
    pub pod_security: crate::pod_security::PodSecurity,
    /// Optional child kinds the API server did not serve when the controller started
    /// ([`crate::optional_kinds`]): objects of them are never applied.
    pub unserved_kinds: Vec<ChildKind>,
    recorder: EventPublisher,
    backoff: BackoffPolicy,
    failures: Mutex<HashMap<String, u32>>,
    /// Primaries deleted since the last reconcile, whose backoff entries and
    /// condition gauges are dropped.
    forgotten: Arc<Mutex<Vec<(String, String)>>>,
    /// True once every cache holds its first complete list.
    synced: tokio::sync::watch::Sender<bool>,
}

impl<X> Context<X> {
    /// Applies `desired` for `owner` and prunes what is no longer desired;
    /// with `stopped`, every workload is applied scaled to nothing.
    pub async fn apply<K>(
        &self,
        owner: &K,
        mut desired: DesiredObjects,
        stopped: bool,
    ) -> Result<ApplyReport, ReconcileError>
    where
        K: Resource<DynamicType = ()>,
    {
        desired.apply_pod_security(self.pod_security);
        let left_out = desired.remove_kinds(&self.unserved_kinds);
        if !left_out.is_empty() {
            tracing::debug!(
                ?left_out,
                "left out objects of kinds the cluster does not serve"
            );
        }
        Applier::new(&self.client, &self.caches, &self.field_manager)
            .apply(owner, desired, stopped)
            .await
    }

    /// Publishes an Event about `object`. Failing to publish is logged and
    /// otherwise ignored: Events are best effort, reconciling is not.
    pub async fn publish_event<K>(
        &self,
        object: &K,
        event_type: EventType,
        reason: &str,
        action: &str,
        note: String,
    ) where
        K: Resource<DynamicType = ()>,
    {
        let event = Event {
            type_: event_type,
            reason: reason.to_owned(),
            note: Some(event_note(note)),
            action: action.to_owned(),
            secondary: None,
        };
        if let Err(error) = self.recorder.publish(&event, &object.object_ref(&())).await {
            tracing::warn!(%error, reason, "could not publish an Event");
        }
    }

    fn record_failure(&self, key: &str) -> u32 {
        let mut failures = lock(&self.failures);
        let count = failures.entry(key.to_owned()).or_insert(0);
        *count = count.saturating_add(1);
        *count
    }

    fn record_success(&self, key: &str) {
        lock(&self.failures).remove(key);
    }

    /// Drops what the controller kept about deleted primaries: the backoff
    /// counter and the condition gauges, so neither grows with every cluster
    /// ever created.
    fn forget_deleted(&self) {
        let deleted = std::mem::take(&mut *lock(&self.forgotten));
        for (namespace, name) in deleted {
            lock(&self.failures).remove(&format!("{namespace}/{name}"));
            let types: Vec<String> = <ConditionType as strum::IntoEnumIterator>::iter()
                .map(|condition| condition.to_string())
                .collect();
            let types: Vec<&str> = types.iter().map(String::as_str).collect();
            self.metrics
                .forget_object(&self.controller_name, &namespace, &name, &types);
        }
    }

    /// Waits until every cache of the controller is synced.
    async fn wait_synced(&self) {
        let mut synced = self.synced.subscribe();
        // An error means the sender is gone, which only happens at shutdown.
        let _closed = synced.wait_for(|synced| *synced).await;
    }
}

/// A lock that survives a panicked holder: every guarded value here is whole between
/// two statements.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// What a controller reconciles and which child kinds it owns.
#[derive(Clone, Debug)]
pub struct ControllerSpec {
    /// Lower-case name of the reconciled kind, for metrics and logs.
    pub name: &'static str,
    /// Child kinds: watched, applied and pruned.
    pub child_kinds: Vec<ChildKind>,
    /// Whether the controller caches the operator's pods and reconciles the
    /// object named by a pod's `app.kubernetes.io/instance` label when the
    /// pod changes. Cluster status depends on pod phases, so cluster
    /// controllers want this; others save the watch and its RBAC grant.
    pub watch_pods: bool,
    /// Whether the controller deletes pods to restart them one at a time
    /// ([`crate::roll`]), which needs the `delete` verb on pods.
    pub restarts_pods: bool,
}

impl ControllerSpec {
    /// Whether the controller deletes pods: to restart them itself
    /// (`restarts_pods`), or to replace a pod stuck on an older revision of a
    /// StatefulSet it owns and whose pods it watches
    /// ([`crate::roll::stuck_on_old_revision`]). The chart grants `delete` on pods
    /// exactly then.
    pub fn deletes_pods(&self) -> bool {
        self.restarts_pods
            || (self.watch_pods
                && self
                    .child_kinds
                    .iter()
                    .any(|kind| kind.resource.kind == "StatefulSet"))
    }
}

/// Runs the controller `definition` declares until the runtime's shutdown
/// token is cancelled.
///
/// The primaries a child's event wakes: its owners of the primary's kind, as kube's
/// `owns` finds them; and for a retained child, which has no owner by design (a CA
/// Secret, Superset's `SECRET_KEY`), the primary its instance label names. So a CA
/// deleted under a running cluster is reported at once (`CaSecretMissing`), not at the
/// next resync.
fn woken_by_child<P>(child: DynamicObject) -> Vec<ObjectRef<Guarded<P>>>
where
    P: Resource<DynamicType = ()>,
{
    let namespace = child.namespace();
    let mut woken: Vec<ObjectRef<Guarded<P>>> = child
        .owner_references()
        .iter()
        .filter_map(|owner| ObjectRef::from_owner_ref(namespace.as_deref(), owner, ()))
        .collect();
    if woken.is_empty()
        && child.annotations().contains_key(RETAINED_ANNOTATION)
        && let Some(instance) = child.labels().get(INSTANCE_LABEL)
    {
        let primary = ObjectRef::new(instance);
        woken.push(match &namespace {
            Some(namespace) => primary.within(namespace),
            None => primary,
        });
    }
    woken
}

/// The primary objects are watched through [`Guarded`]: an object the
/// API server accepted but this operator cannot read (a field of the wrong
/// shape that the CRD schema lets through) gets a Warning Event and a log
/// line, and every other object keeps being reconciled. Reconciles wait until
/// every cache (children, pods, references) holds its first complete list, so
/// no decision is taken on a half-filled cache after a restart.
pub async fn run_controller<P, X, F, Fut>(
    runtime: &OperatorRuntime,
    definition: &ControllerDef<P>,
    extra: X,
    reconcile: F,
) where
    P: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static,
    X: Send + Sync + 'static,
    F: Fn(Arc<P>, Arc<Context<X>>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, ReconcileError>> + Send + 'static,
{
    let spec = &definition.spec;
    let (served_kinds, unserved_kinds) =
        crate::optional_kinds::partition(&runtime.client, &spec.child_kinds).await;
    let (caches, streams) = ChildCaches::watch(
        &runtime.client,
        &served_kinds,
        runtime.namespace.as_deref(),
        &runtime.operator_name,
        spec.watch_pods,
    );
    let reporter = Reporter {
        controller: runtime.operator_name.clone(),
        instance: std::env::var("POD_NAME").ok(),
    };

    let indexes: Vec<ReferenceIndex<Guarded<P>>> = definition
        .references
        .iter()
        .map(|reference| {
            let reference = reference.clone();
            ReferenceIndex::new(Arc::new(move |guard: &Guarded<P>| {
                guard
                    .0
                    .as_ref()
                    .map(|owner| reference.targets(owner))
                    .unwrap_or_default()
            }))
        })
        .collect();

    let primary_api: Api<Guarded<P>> = match &runtime.namespace {
        Some(namespace) => Api::namespaced(runtime.client.clone(), namespace),
        None => Api::all(runtime.client.clone()),
    };
    let (primaries, primary_writer) = reflector::store::<Guarded<P>>();
    let forgotten = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
    let primary_events = {
        let indexes = indexes.clone();
        let forgotten = forgotten.clone();
        watcher(primary_api, watcher::Config::default())
            .default_backoff()
            .map(|event| event.map(|event| event.modify(crate::cache::trim_metadata)))
            .inspect(move |event| {
                if let Ok(event) = event {
                    for index in &indexes {
                        index.apply(event);
                    }
                    if let watcher::Event::Delete(object) = event {
                        lock(&forgotten).push((
                            object.meta().namespace.clone().unwrap_or_default(),
                            object.meta().name.clone().unwrap_or_default(),
                        ));
                    }
                }
            })
    };
    let primary_stream = reflector::reflector(primary_writer, primary_events).applied_objects();

    let mut controller = Controller::for_stream(primary_stream, primaries).with_config(
        kube::runtime::controller::Config::default().concurrency(RECONCILE_CONCURRENCY),
    );
    let mut references = References::default();
    for (reference, index) in definition.references.iter().zip(indexes) {
        controller = reference.attach(
            controller,
            &runtime.client,
            runtime.namespace.as_deref(),
            index,
            &mut references,
        );
    }
    for (resource, stream) in streams.children {
        controller = controller.watches_stream_with(stream, woken_by_child::<P>, resource);
    }
    if let Some(pods) = streams.pods {
        controller = controller.watches_stream(pods, |pod: Pod| {
            let namespace = pod.namespace()?;
            let instance = pod.labels().get(INSTANCE_LABEL)?.clone();
            Some(ObjectRef::<Guarded<P>>::new(&instance).within(&namespace))
        });
    }

    let context = Arc::new(Context {
        client: runtime.client.clone(),
        caches: caches.clone(),
        references: references.clone(),
        controller_name: spec.name.to_owned(),
        field_manager: runtime.operator_name.clone(),
        finalizer: definition.finalizer,
        metrics: runtime.metrics.clone(),
        extra,
        secret_values: crate::certificates::SecretValues::default(),
        pod_security: runtime.pod_security,
        unserved_kinds,
        recorder: EventPublisher::new(runtime.client.clone(), reporter),
        backoff: runtime.backoff,
        failures: Mutex::new(HashMap::new()),
        forgotten,
        synced: tokio::sync::watch::channel(false).0,
    });

    runtime.readiness.register();
    let readiness = runtime.readiness.clone();
    let synced = context.clone();
    tokio::spawn(async move {
        if caches.wait_until_ready().await && references.wait_until_ready().await {
            synced.synced.send_replace(true);
            readiness.synced();
        }
    });

    let reconcile = Arc::new(reconcile);
    let shutdown = runtime.shutdown.clone();
    let api_server = runtime.api_server.clone();
    let controller_name = spec.name;
    controller
        .graceful_shutdown_on(async move { shutdown.cancelled().await })
        .run(
            move |object, context| guarded(object, context, reconcile.clone()),
            error_policy,
            context,
        )
        .for_each(move |result| {
            // Reconcile failures are logged where they happen; what arrives here are
            // watch and queue errors, such as an unreachable API server.
            if let Err(error) = &result
                && !matches!(error, kube::runtime::controller::Error::ReconcilerFailed(..))
            {
                tracing::warn!(controller = controller_name, api_server = %api_server, %error, "watch failed");
            }
            futures::future::ready(())
        })
        .await;
}

/// Unwraps the guard: a readable object is reconciled, an unreadable one is
/// reported and left alone until it changes. An object being deleted is left to
/// the garbage collector unless the controller holds a finalizer on it: a foreground
/// deletion keeps the owner while its children go, and each child's deletion wakes it,
/// so applying the children again would fight the collector for ever.
async fn guarded<P, X, F, Fut>(
    object: Arc<Guarded<P>>,
    context: Arc<Context<X>>,
    reconcile: Arc<F>,
) -> Result<Action, ReconcileError>
where
    P: Resource<DynamicType = ()> + Clone,
    F: Fn(Arc<P>, Arc<Context<X>>) -> Fut,
    Fut: Future<Output = Result<Action, ReconcileError>>,
{
    context.forget_deleted();
    context.wait_synced().await;
    match &object.0 {
        Ok(primary)
            if context.finalizer.is_none() && primary.meta().deletion_timestamp.is_some() =>
        {
            Ok(Action::await_change())
        }
        Ok(primary) => instrumented(Arc::new(primary.clone()), context, reconcile).await,
        Err(invalid) => {
            unreadable::report::<P, X>(invalid, &context).await;
            Ok(Action::await_change())
        }
    }
}

async fn instrumented<K, X, F, Fut>(
    object: Arc<K>,
    context: Arc<Context<X>>,
    reconcile: Arc<F>,
) -> Result<Action, ReconcileError>
where
    K: Resource<DynamicType = ()>,
    F: Fn(Arc<K>, Arc<Context<X>>) -> Fut,
    Fut: Future<Output = Result<Action, ReconcileError>>,
{
    let started = Instant::now();
    let key = object_key(object.as_ref());
    let span =
        tracing::info_span!("reconcile", controller = %context.controller_name, object = %key);
    let result = reconcile(object.clone(), context.clone())
        .instrument(span)
        .await;
    context
        .metrics
        .observe_reconcile(&context.controller_name, started.elapsed());
    match &result {
        Ok(_) => context.record_success(&key),
        Err(error) => {
            context.metrics.observe_failure(
                &context.controller_name,
                error.reason(),
                &error.kind().to_string(),
            );
            tracing::warn!(object = %key, reason = error.reason(), kind = %error.kind(), "{error}");
            context
                .publish_event(
                    object.as_ref(),
                    EventType::Warning,
                    error.reason(),
                    "Reconcile",
                    error.message().to_owned(),
                )
                .await;
        }
    }
    result
}

fn error_policy<K, X>(object: Arc<K>, error: &ReconcileError, context: Arc<Context<X>>) -> Action
where
    K: Resource<DynamicType = ()>,
{
    let failures = context.record_failure(&object_key(object.as_ref()));
    Action::requeue(context.backoff.delay(error.kind(), failures))
}

fn object_key<K: Resource<DynamicType = ()>>(object: &K) -> String {
    format!(
        "{}/{}",
        object.meta().namespace.as_deref().unwrap_or_default(),
        object.meta().name.as_deref().unwrap_or_default()
    )
}

/// The longest note `events.k8s.io/v1` takes (`NoteLengthLimit`): the API server refuses
/// a longer one, and the Event would be lost, as the kube-scheduler's were before it
/// cut its own.
pub const EVENT_NOTE_LIMIT: usize = 1024;

/// `note` cut to [`EVENT_NOTE_LIMIT`] bytes at a character boundary, ending in `…` when
/// cut. The condition keeps the whole message; the Event says where to read it.
pub fn event_note(note: String) -> String {
    if note.len() <= EVENT_NOTE_LIMIT {
        return note;
    }
    const CUT: &str = "…";
    let mut end = EVENT_NOTE_LIMIT - CUT.len();
    while !note.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{CUT}", &note[..end])
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::short("a short note".to_owned(), false)]
    #[case::exactly_the_limit("a".repeat(EVENT_NOTE_LIMIT), false)]
    #[case::one_byte_over("a".repeat(EVENT_NOTE_LIMIT + 1), true)]
    #[case::a_multibyte_character_at_the_cut("é".repeat(EVENT_NOTE_LIMIT), true)]
    fn event_notes_fit_the_api_servers_limit(#[case] note: String, #[case] cut: bool) {
        let fitted = event_note(note.clone());
        assert!(fitted.len() <= EVENT_NOTE_LIMIT, "{} bytes", fitted.len());
        assert_eq!(fitted != note, cut);
        if cut {
            assert!(fitted.ends_with('…'));
            assert!(note.starts_with(fitted.trim_end_matches('…')));
        }
    }
}
