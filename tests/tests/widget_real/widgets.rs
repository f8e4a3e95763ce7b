//! One namespace of the shared control plane with the widget operator in it, and what
//! a scenario does there: act as a user, wait for what the API server shows, and read
//! the operator's own requests back from the audit log.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kube::Resource;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde::de::DeserializeOwned;
use serde_json::json;
use strata_operator::controller::run_controller;
use strata_operator::error::BackoffPolicy;
use strata_status::{ClusterCondition, ConditionStatus, ConditionType};
use strata_testing::control_plane::{AuditEvent, ControlPlane, RunningOperator};

use crate::widget::{OPERATOR, Widget, definition, reconcile};

/// How long one wait may take: reconciles are driven by watches, and KWOK makes a pod
/// Ready within a second, so anything slower than this is a bug.
pub const TIMEOUT: Duration = Duration::from_secs(60);
/// How long the operator must send nothing for the test to call it settled.
const QUIET: Duration = Duration::from_secs(2);

/// A kind the scenarios read and wait for: namespaced, typed, printable.
pub trait NamespacedKind:
    Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
    + Clone
    + DeserializeOwned
    + Debug
{
}

impl<K> NamespacedKind for K where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug
{
}

/// A namespace of its own on the shared control plane, with the widget operator
/// watching it as its own ServiceAccount there (bound to `cluster-admin`: RBAC is
/// proven by the products' charts), so the audit log tells its requests from the
/// test's, KWOK's and the other scenarios' operators'.
pub struct Widgets {
    pub control_plane: Arc<ControlPlane>,
    /// The admin: what the test acts as, a user or another tool.
    pub client: kube::Client,
    pub namespace: String,
    operator_user: String,
    operator_client: kube::Client,
    backoff: BackoffPolicy,
    pub operator: RunningOperator,
}

/// The widget operator watching `namespace` as `client`, with `backoff`.
fn run_operator(client: kube::Client, namespace: &str, backoff: BackoffPolicy) -> RunningOperator {
    RunningOperator::start_in(client, OPERATOR, namespace, move |mut runtime| {
        runtime.backoff = backoff;
        async move {
            run_controller(&runtime, &definition(), (), reconcile).await;
        }
    })
}

impl Widgets {
    /// Creates `namespace` and starts the operator in it with `backoff`.
    pub async fn start(
        control_plane: Arc<ControlPlane>,
        namespace: &str,
        backoff: BackoffPolicy,
    ) -> Self {
        let client = control_plane.client().await.expect("an admin client");
        let created: Namespace =
            serde_json::from_value(json!({"metadata": {"name": namespace}})).unwrap();
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &created)
            .await
            .expect("the scenario's namespace");
        let operator_client = control_plane
            .cluster_admin_client(namespace, OPERATOR)
            .await
            .expect("the operator's own identity");
        let operator = run_operator(operator_client.clone(), namespace, backoff);
        Self {
            control_plane,
            client,
            namespace: namespace.to_owned(),
            operator_user: format!("system:serviceaccount:{namespace}:{OPERATOR}"),
            operator_client,
            backoff,
            operator,
        }
    }

    /// Stops the operator and starts it again, with new caches: what a rolling update
    /// of the operator or a change of leader does.
    pub fn restart_operator(&mut self) {
        let next = run_operator(self.operator_client.clone(), &self.namespace, self.backoff);
        drop(std::mem::replace(&mut self.operator, next));
    }

    pub fn api<K>(&self) -> Api<K>
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
    {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// The stored object `name`, if there is one.
    pub async fn stored<K>(&self, name: &str) -> Option<K>
    where
        K: NamespacedKind,
    {
        self.api::<K>()
            .get_opt(name)
            .await
            .unwrap_or_else(|error| panic!("a read of {} {name}: {error}", K::kind(&())))
    }

    /// Creates `widget` and waits until it is Available.
    pub async fn create_available(&self, widget: &Widget) {
        self.create(widget).await;
        let name = widget.metadata.name.clone().unwrap_or_default();
        self.wait_for_condition(&name, ConditionType::Available, ConditionStatus::True, None)
            .await;
    }

    /// Creates `widget` in the scenario's namespace.
    pub async fn create(&self, widget: &Widget) -> Widget {
        let mut widget = widget.clone();
        widget.metadata.namespace = Some(self.namespace.clone());
        self.api::<Widget>()
            .create(&PostParams::default(), &widget)
            .await
            .expect("the widget is created")
    }

    pub async fn patch_spec(&self, name: &str, spec: serde_json::Value) {
        self.api::<Widget>()
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": spec })),
            )
            .await
            .expect("the widget is patched");
    }

    /// Merges `patch` into an object, as a user with `kubectl patch --type=merge`.
    pub async fn merge<K>(&self, name: &str, patch: serde_json::Value)
    where
        K: NamespacedKind,
    {
        self.api::<K>()
            .patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .unwrap_or_else(|error| panic!("{} {name} is patched: {error}", K::kind(&())));
    }

    /// Waits until `probe` finds what it looks for in `name`.
    pub async fn wait_for<K, T>(&self, name: &str, what: &str, probe: impl Fn(&K) -> Option<T>) -> T
    where
        K: NamespacedKind,
    {
        let api = self.api::<K>();
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let found = api.get_opt(name).await.ok().flatten();
            if let Some(value) = found.as_ref().and_then(&probe) {
                return value;
            }
            assert!(
                Instant::now() < deadline,
                "{what} did not happen within {TIMEOUT:?}; last seen: {found:#?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until `name` exists.
    pub async fn exists<K>(&self, name: &str) -> K
    where
        K: NamespacedKind,
    {
        self.wait_for(
            name,
            &format!("{} {name} existing", K::kind(&())),
            |found: &K| Some(found.clone()),
        )
        .await
    }

    /// Waits until the widget's condition has `status` (and `reason`, when given).
    pub async fn wait_for_condition(
        &self,
        name: &str,
        type_: ConditionType,
        status: ConditionStatus,
        reason: Option<&str>,
    ) -> ClusterCondition {
        let what = format!("{type_} becoming {status} {reason:?} on widget {name}");
        self.wait_for(name, &what, |widget: &Widget| {
            widget
                .status
                .as_ref()?
                .conditions
                .iter()
                .find(|condition| condition.type_ == type_)
                .filter(|condition| condition.status == status)
                .filter(|condition| reason.is_none_or(|reason| condition.reason == reason))
                .cloned()
        })
        .await
    }

    /// The operator's requests so far, in the order the API server logged them.
    pub fn operator_requests(&self) -> Vec<AuditEvent> {
        self.control_plane
            .audit_events()
            .expect("the audit log")
            .into_iter()
            .filter(|event| event.user == self.operator_user)
            .collect()
    }

    /// Reconciles the operator finished.
    pub fn reconciles(&self) -> u64 {
        strata_testing::harness::reconciles(&self.operator.runtime)
    }

    /// Waits until a reconcile after `before` has finished and the operator has sent
    /// nothing for [`QUIET`]; returns its requests up to then.
    pub async fn settle_after(&self, before: u64) -> Vec<AuditEvent> {
        let deadline = Instant::now() + TIMEOUT;
        while self.reconciles() <= before {
            assert!(Instant::now() < deadline, "no reconcile after {before}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.settle().await
    }

    /// Waits until the operator has sent nothing for [`QUIET`]; returns its requests.
    pub async fn settle(&self) -> Vec<AuditEvent> {
        let deadline = Instant::now() + TIMEOUT;
        let mut seen = self.operator_requests();
        loop {
            tokio::time::sleep(QUIET).await;
            let now = self.operator_requests();
            if now.len() == seen.len() {
                return now;
            }
            assert!(Instant::now() < deadline, "the operator never settled");
            seen = now;
        }
    }

    /// The `events.k8s.io` Events about `name` with `reason`.
    pub async fn events(
        &self,
        name: &str,
        reason: &str,
    ) -> Vec<k8s_openapi::api::events::v1::Event> {
        self.api::<k8s_openapi::api::events::v1::Event>()
            .list(&Default::default())
            .await
            .expect("the Events")
            .items
            .into_iter()
            .filter(|event| {
                event.reason.as_deref() == Some(reason)
                    && event
                        .regarding
                        .as_ref()
                        .and_then(|regarding| regarding.name.as_deref())
                        == Some(name)
            })
            .collect()
    }

    /// Waits for an Event about `name` with `reason`.
    pub async fn wait_for_event(
        &self,
        name: &str,
        reason: &str,
    ) -> k8s_openapi::api::events::v1::Event {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(event) = self.events(name, reason).await.into_iter().next() {
                return event;
            }
            assert!(
                Instant::now() < deadline,
                "no {reason} Event about {name} within {TIMEOUT:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// The requests of `after` that `before` does not hold (the log only grows).
pub fn since(before: &[AuditEvent], after: Vec<AuditEvent>) -> Vec<AuditEvent> {
    after.into_iter().skip(before.len()).collect()
}
