//! The shared runtime on the real control plane (`strata_testing::control_plane`): the
//! test operator of `support/widget.rs`, a real kube-runtime `Controller` built from the
//! shared crates, against kube-apiserver, its garbage collector, StatefulSet controller
//! and KWOK's kubelets.
//!
//! What each test proves is Kubernetes semantics meeting our apply and status steps:
//! owner references and field managers, server-side apply economy and drift repair,
//! pruning that spares claims, conditions from real pods, pause and stop, objects the
//! operator does not own, and watches of referenced objects. The operator runs as its
//! own ServiceAccount, so the API server's audit log tells its requests from the
//! test's. What the real API cannot give (injected 500s, conflicts, slow answers) stays
//! on the in-memory API, in `controller_e2e.rs`.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

#[allow(dead_code)] // the in-memory tests use the rest of it
#[path = "../support/widget.rs"]
mod widget;

mod children;
mod conditions;
mod operation;
mod ownership;
mod references;

use std::fmt::Debug;
use std::time::{Duration, Instant};

use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{CustomResourceExt, Resource};
use serde::de::DeserializeOwned;
use serde_json::json;
use strata_operator::controller::run_controller;
use strata_operator::error::BackoffPolicy;
use strata_status::{ClusterCondition, ConditionStatus, ConditionType};
use strata_testing::control_plane::{
    AuditEvent, ControlPlane, ControlPlaneOptions, RunningOperator,
};

use crate::widget::{OPERATOR, Widget, definition, reconcile};

/// How long one wait may take: reconciles are driven by watches, and KWOK makes a pod
/// Ready within a second, so anything slower than this is a bug.
const TIMEOUT: Duration = Duration::from_secs(60);
/// The operator's identity: `default/widget-operator`.
const OPERATOR_USER: &str = "system:serviceaccount:default:widget-operator";
/// How long the operator must send nothing for the test to call it settled.
const QUIET: Duration = Duration::from_secs(2);

/// A control plane with the Widget CRD and the widget operator running as its own
/// ServiceAccount (bound to `cluster-admin`: RBAC is proven by the products' charts).
struct Widgets {
    control_plane: ControlPlane,
    /// The admin: what the test acts as, a user or another tool.
    client: kube::Client,
    operator: RunningOperator,
}

impl Widgets {
    /// With the runtime's default backoff: a failure that needs the user is retried
    /// after five minutes, so every recovery within a test's minute was requeued by a
    /// watch.
    async fn start() -> Self {
        Self::start_with(BackoffPolicy::default()).await
    }

    async fn start_with(backoff: BackoffPolicy) -> Self {
        let control_plane = ControlPlane::start(ControlPlaneOptions::default())
            .await
            .unwrap_or_else(|error| panic!("the control plane starts: {error}"));
        control_plane
            .install_crds(&[Widget::crd()])
            .await
            .expect("the Widget CRD is established");
        let client = control_plane.client().await.expect("an admin client");
        let operator_client = control_plane
            .cluster_admin_client("default", OPERATOR)
            .await
            .expect("the operator's own identity");
        let operator = RunningOperator::start(operator_client, OPERATOR, move |mut runtime| {
            runtime.backoff = backoff;
            async move {
                run_controller(&runtime, &definition(), (), reconcile).await;
            }
        });
        Self {
            control_plane,
            client,
            operator,
        }
    }

    fn api<K>(&self) -> Api<K>
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
    {
        Api::namespaced(self.client.clone(), "default")
    }

    async fn create(&self, widget: &Widget) -> Widget {
        self.api::<Widget>()
            .create(&PostParams::default(), widget)
            .await
            .expect("the widget is created")
    }

    async fn patch_spec(&self, name: &str, spec: serde_json::Value) {
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
    async fn merge<K>(&self, name: &str, patch: serde_json::Value)
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + Debug,
    {
        self.api::<K>()
            .patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .unwrap_or_else(|error| panic!("{} {name} is patched: {error}", K::kind(&())));
    }

    /// Waits until `probe` finds what it looks for in `name`.
    async fn wait_for<K, T>(&self, name: &str, what: &str, probe: impl Fn(&K) -> Option<T>) -> T
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + Debug,
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
    async fn exists<K>(&self, name: &str) -> K
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + Debug,
    {
        self.wait_for(
            name,
            &format!("{} {name} existing", K::kind(&())),
            |found: &K| Some(found.clone()),
        )
        .await
    }

    /// Waits until the widget's condition has `status` (and `reason`, when given).
    async fn wait_for_condition(
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
    fn operator_requests(&self) -> Vec<AuditEvent> {
        self.control_plane
            .audit_events()
            .expect("the audit log")
            .into_iter()
            .filter(|event| event.user == OPERATOR_USER)
            .collect()
    }

    /// Reconciles the operator finished.
    fn reconciles(&self) -> u64 {
        self.operator
            .runtime
            .metrics
            .encode()
            .lines()
            .filter(|line| line.starts_with("strata_reconciles_total"))
            .filter_map(|line| line.rsplit(' ').next())
            .filter_map(|count| count.parse::<u64>().ok())
            .sum()
    }

    /// Waits until a reconcile after `before` has finished and the operator has sent
    /// nothing for [`QUIET`]; returns its requests up to then.
    async fn settle_after(&self, before: u64) -> Vec<AuditEvent> {
        let deadline = Instant::now() + TIMEOUT;
        while self.reconciles() <= before {
            assert!(Instant::now() < deadline, "no reconcile after {before}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.settle().await
    }

    /// Waits until the operator has sent nothing for [`QUIET`]; returns its requests.
    async fn settle(&self) -> Vec<AuditEvent> {
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
    async fn events(&self, name: &str, reason: &str) -> Vec<k8s_openapi::api::events::v1::Event> {
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
    async fn wait_for_event(
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
fn since(before: &[AuditEvent], after: Vec<AuditEvent>) -> Vec<AuditEvent> {
    after.into_iter().skip(before.len()).collect()
}
