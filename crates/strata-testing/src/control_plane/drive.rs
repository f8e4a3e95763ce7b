//! Driving an operator on the control plane from a test: running its controllers in
//! this process, and waiting for what the API server shows.

use std::time::{Duration, Instant};

use strata_operator::controller::OperatorRuntime;

/// An operator's controllers running in this process against a control plane, until
/// the value is dropped: what the end-to-end tests drive.
#[derive(Debug)]
pub struct RunningOperator {
    /// The operator's runtime: metrics and shutdown.
    pub runtime: OperatorRuntime,
    task: tokio::task::JoinHandle<()>,
}

impl RunningOperator {
    /// Starts `run` (an operator's controllers) as `operator_name` with `client`,
    /// watching the `default` namespace.
    pub fn start<F, Fut>(client: kube::Client, operator_name: &str, run: F) -> Self
    where
        F: FnOnce(OperatorRuntime) -> Fut,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        Self::start_in(client, operator_name, "default", run)
    }

    /// Like [`RunningOperator::start`], watching `namespace`: scenarios that share one
    /// control plane each get a namespace and an operator of their own.
    pub fn start_in<F, Fut>(
        client: kube::Client,
        operator_name: &str,
        namespace: &str,
        run: F,
    ) -> Self
    where
        F: FnOnce(OperatorRuntime) -> Fut,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let runtime = OperatorRuntime::new(client, operator_name, Some(namespace.to_owned()));
        let task = tokio::spawn(run(runtime.clone()));
        Self { runtime, task }
    }
}

impl Drop for RunningOperator {
    fn drop(&mut self) {
        self.runtime.shutdown.cancel();
        self.task.abort();
    }
}

/// Whether `pod` is Ready and not being deleted, as its conditions say: what the
/// end-to-end tests count.
pub fn pod_is_ready(pod: &k8s_openapi::api::core::v1::Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod
            .status
            .as_ref()
            .and_then(|status| status.conditions.as_ref())
            .is_some_and(|conditions| {
                conditions
                    .iter()
                    .any(|condition| condition.type_ == "Ready" && condition.status == "True")
            })
}

/// Polls `probe` every 250 ms until it returns something, and panics naming `what`
/// when `timeout` passes first: the wait of the end-to-end tests, whose probes ask
/// the API server.
pub async fn wait_until<T>(
    what: &str,
    timeout: Duration,
    mut probe: impl AsyncFnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "{what} did not happen within {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
