//! A running operator against the in-memory API, for the reconcile tests of
//! every operator.

use std::future::Future;
use std::time::Duration;

use strata_test_apiserver::TestApiServer;

use strata_operator::controller::OperatorRuntime;
use strata_operator::error::BackoffPolicy;

/// How long tests wait for the controller to reach a state.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// A running operator; stops it on drop.
pub struct Harness {
    /// The in-memory API the operator talks to.
    pub server: TestApiServer,
    /// The operator's runtime: metrics and shutdown.
    pub runtime: OperatorRuntime,
    /// The namespace the operator watches.
    pub namespace: &'static str,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Harness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Harness")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl Harness {
    /// Starts `run` (an operator's controllers) as `operator_name` on
    /// `server`, watching the `default` namespace, with short backoffs.
    pub fn start<F, Fut>(server: TestApiServer, operator_name: &str, run: F) -> Self
    where
        F: FnOnce(OperatorRuntime) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let namespace = "default";
        let mut runtime =
            OperatorRuntime::new(server.client(), operator_name, Some(namespace.to_owned()));
        runtime.backoff = BackoffPolicy {
            initial: Duration::from_millis(50),
            max: Duration::from_millis(500),
            invalid_spec: Duration::from_secs(1),
        };
        let task = tokio::spawn(run(runtime.clone()));
        Self {
            server,
            runtime,
            namespace,
            task,
        }
    }

    /// Waits until the API has seen no request for a while: the operator has
    /// finished reacting to everything so far.
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

    /// Reconciles finished so far by all controllers, from the operator's own
    /// metrics.
    pub fn reconciles(&self) -> u64 {
        reconciles(&self.runtime)
    }

    /// Waits until at least one more reconcile than `before` has finished.
    ///
    /// Returns false on timeout, so the caller's assertion names what it
    /// waited for.
    pub async fn wait_for_reconcile_after(&self, before: u64) -> bool {
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        while self.reconciles() <= before {
            if tokio::time::Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        true
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.runtime.shutdown.cancel();
        self.task.abort();
    }
}

/// Reconciles `runtime`'s controllers finished so far, from its own metrics: what tests
/// wait on, in memory and on the real control plane.
pub fn reconciles(runtime: &OperatorRuntime) -> u64 {
    runtime
        .metrics
        .encode()
        .lines()
        .filter(|line| line.starts_with("strata_reconciles_total"))
        .filter_map(|line| line.rsplit(' ').next())
        .filter_map(|count| count.parse::<u64>().ok())
        .sum()
}
