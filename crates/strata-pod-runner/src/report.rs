//! What a test or a user waiting on pods needs when the wait fails: each pod's phase,
//! its containers' states and the tail of each container's log, and waits that give
//! that report when they run out.

use std::time::{Duration, Instant};

use crate::runner::PodRunner;

/// Log lines per container in a [`PodRunner::report`].
const LOG_LINES: usize = 8;

impl PodRunner {
    /// Each pod's phase and containers, with the last lines of each container's log.
    pub fn report(&self) -> String {
        let mut text = String::new();
        for ((namespace, pod), status) in self.statuses() {
            text.push_str(&format!(
                "pod {pod}: {} ready={}\n",
                status.phase,
                status.ready()
            ));
            for container in status.init_containers.iter().chain(&status.containers) {
                text.push_str(&format!(
                    "  {} {:?} ready={} restarts={} last={:?}\n",
                    container.name,
                    container.state,
                    container.ready,
                    container.restart_count,
                    container.last_state
                ));
                let log = self
                    .log(&namespace, &pod, &container.name, container.restart_count)
                    .and_then(|path| std::fs::read_to_string(path).ok())
                    .unwrap_or_default();
                let lines: Vec<&str> = log.lines().collect();
                for line in &lines[lines.len().saturating_sub(LOG_LINES)..] {
                    text.push_str(&format!("    | {line}\n"));
                }
            }
        }
        text
    }

    /// Waits until `test` holds, checking every half second; when `timeout` runs out,
    /// the error names `what` and carries the [`report`](Self::report).
    pub async fn wait_until(
        &self,
        timeout: Duration,
        what: &str,
        test: impl Fn(&PodRunner) -> bool,
    ) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if test(self) {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        Err(format!("waited {timeout:?} for {what}:\n{}", self.report()))
    }

    /// Waits until every pod of `pods` in `namespace` is Ready.
    pub async fn wait_ready(
        &self,
        namespace: &str,
        pods: &[&str],
        timeout: Duration,
    ) -> Result<(), String> {
        self.wait_until(timeout, "every pod Ready", |runner| {
            pods.iter().all(|pod| {
                runner
                    .status(namespace, pod)
                    .is_some_and(|status| status.ready())
            })
        })
        .await
    }
}
