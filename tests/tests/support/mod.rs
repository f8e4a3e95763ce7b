//! A controller running against the in-memory API, and ways to wait for it.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use kube::runtime::controller::Action;
use serde::de::DeserializeOwned;
use strata_operator::controller::{Context, ControllerSpec, OperatorRuntime, run_controller};
use strata_operator::error::{BackoffPolicy, ReconcileError};
use strata_test_apiserver::TestApiServer;

/// How long tests wait for the controller to reach a state.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// A running controller; stops it on drop.
pub struct Harness {
    pub server: TestApiServer,
    pub runtime: OperatorRuntime,
    pub namespace: &'static str,
    task: tokio::task::JoinHandle<()>,
}

impl Harness {
    /// Starts the controller for `K` with `spec` on a fresh in-memory API in
    /// which `register` has registered the custom resource kinds.
    pub fn start<K, F, Fut>(
        register: impl FnOnce(&TestApiServer),
        spec: ControllerSpec,
        reconcile: F,
    ) -> Self
    where
        K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + std::fmt::Debug
            + Send
            + Sync
            + 'static,
        F: Fn(Arc<K>, Arc<Context<()>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, ReconcileError>> + Send + 'static,
    {
        let server = TestApiServer::new();
        register(&server);
        let namespace = "default";
        let mut runtime = OperatorRuntime::new(
            server.client(),
            "widget-operator",
            Some(namespace.to_owned()),
        );
        runtime.backoff = BackoffPolicy {
            initial: Duration::from_millis(50),
            max: Duration::from_millis(500),
            invalid_spec: Duration::from_secs(1),
        };
        let controller_runtime = runtime.clone();
        let task = tokio::spawn(async move {
            run_controller::<K, _, _, _, _>(
                &controller_runtime,
                spec,
                (),
                |controller| controller,
                reconcile,
            )
            .await;
        });
        Self {
            server,
            runtime,
            namespace,
            task,
        }
    }

    /// Waits until the API has seen no request for a while: the controller
    /// has finished reacting to everything so far.
    pub async fn settle(&self) {
        let quiet = Duration::from_millis(300);
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        let mut seen = self.server.requests().len();
        loop {
            tokio::time::sleep(quiet).await;
            let now = self.server.requests().len();
            if now == seen || tokio::time::Instant::now() > deadline {
                return;
            }
            seen = now;
        }
    }

    /// Reconciles finished so far, from the operator's own metrics.
    pub fn reconciles(&self) -> u64 {
        self.runtime
            .metrics
            .encode()
            .lines()
            .find(|line| line.starts_with("strata_reconciles_total"))
            .and_then(|line| line.rsplit(' ').next())
            .and_then(|count| count.parse().ok())
            .unwrap_or(0)
    }

    /// Waits until at least one more reconcile than `before` has finished.
    pub async fn wait_for_reconcile_after(&self, before: u64) {
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        while self.reconciles() <= before {
            assert!(
                tokio::time::Instant::now() < deadline,
                "no reconcile happened"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.runtime.shutdown.cancel();
        self.task.abort();
    }
}
