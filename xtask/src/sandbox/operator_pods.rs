//! The operators' pods on the runner's node, as the demo watches them: an operator
//! container that restarted (a crash) ends the sandbox with its last log lines, and
//! every operator log is copied into the sandbox directory when the sandbox ends.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::bail;
use strata_pod_runner::agent::NodeAgent;

use super::OPERATOR_NAMESPACE;

/// The container the charts name.
const OPERATOR_CONTAINER: &str = "operator";

/// The operators' pods on `agent`'s node.
pub(super) struct OperatorPods<'a> {
    pub(super) agent: &'a NodeAgent,
    pub(super) dir: PathBuf,
}

impl OperatorPods<'_> {
    /// Fails with the last log lines of an operator container that restarted.
    pub(super) fn check(&self) -> anyhow::Result<()> {
        let runner = self.agent.runner();
        let Some(runner) = locked(&runner) else {
            return Ok(());
        };
        for (pod, restarts) in restarts(&runner) {
            if restarts > 0 {
                let log = runner.log(OPERATOR_NAMESPACE, &pod, OPERATOR_CONTAINER, restarts - 1);
                bail!(
                    "the operator pod {pod} restarted {restarts} time(s); the last lines of its \
                     previous run:\n{}",
                    log.as_deref()
                        .map(|log| last_lines(log, 20))
                        .unwrap_or_default()
                );
            }
        }
        Ok(())
    }

    /// The last `count` lines of `pod`'s current operator container, so that a step
    /// that waited in vain on an operator can say what that operator was doing.
    pub(super) fn last_log_lines(&self, pod: &str, count: usize) -> String {
        let runner = self.agent.runner();
        let Some(runner) = locked(&runner) else {
            return String::new();
        };
        let attempt = restarts(&runner)
            .into_iter()
            .find_map(|(name, restarts)| (name == pod).then_some(restarts))
            .unwrap_or_default();
        runner
            .log(OPERATOR_NAMESPACE, pod, OPERATOR_CONTAINER, attempt)
            .map(|log| last_lines(&log, count))
            .unwrap_or_default()
    }

    /// Copies each operator container's log (every run) to `<dir>/<pod>.log`.
    pub(super) fn keep_logs(&self) {
        let runner = self.agent.runner();
        let Some(runner) = locked(&runner) else {
            return;
        };
        for (pod, restarts) in restarts(&runner) {
            let text: String = (0..=restarts)
                .filter_map(|attempt| {
                    runner.log(OPERATOR_NAMESPACE, &pod, OPERATOR_CONTAINER, attempt)
                })
                .map(|log| fs::read_to_string(log).unwrap_or_default())
                .collect();
            let _ = fs::write(self.dir.join(format!("{pod}.log")), text);
        }
    }
}

/// Each operator pod's name and its container's restarts.
fn restarts(runner: &strata_pod_runner::runner::PodRunner) -> Vec<(String, i32)> {
    runner
        .statuses()
        .into_iter()
        .filter(|((namespace, _), _)| namespace == OPERATOR_NAMESPACE)
        .map(|((_, pod), status)| {
            let restarts = status
                .containers
                .iter()
                .map(|container| container.restart_count)
                .max()
                .unwrap_or_default();
            (pod, restarts)
        })
        .collect()
}

/// The runner, once the agent lets go of it (it holds it only briefly).
fn locked(
    runner: &tokio::sync::Mutex<strata_pod_runner::runner::PodRunner>,
) -> Option<tokio::sync::MutexGuard<'_, strata_pod_runner::runner::PodRunner>> {
    for _ in 0..200 {
        if let Ok(guard) = runner.try_lock() {
            return Some(guard);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

/// The last `count` lines of the file at `path`.
pub(super) fn last_lines(path: &Path, count: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(count)..].join("\n")
}
