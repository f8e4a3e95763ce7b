//! Commands run inside a running container, as `kubectl exec` runs them.

use std::time::Duration;

use super::{PodRunner, RunnerError};
use crate::container::Helper;
use crate::launch::Command;
use crate::spec::credentials;

impl PodRunner {
    /// Runs `argv` inside a running container, as `kubectl exec` does, with the
    /// container's environment; its exit code and output, `None` on timeout.
    pub async fn exec(
        &self,
        namespace: &str,
        name: &str,
        container: &str,
        argv: &[&str],
        timeout: Duration,
    ) -> Result<Option<(i32, String)>, RunnerError> {
        self.exec_plan(namespace, name, container, argv)?
            .run(timeout)
            .await
    }

    /// What [`Self::exec`] runs, prepared without running it, so that a caller sharing
    /// the runner behind a lock can release the lock while the command runs.
    pub fn exec_plan(
        &self,
        namespace: &str,
        name: &str,
        container: &str,
        argv: &[&str],
    ) -> Result<ExecPlan, RunnerError> {
        let entry = self
            .pods
            .get(&(namespace.to_owned(), name.to_owned()))
            .ok_or_else(|| RunnerError::UnknownPod(name.to_owned()))?;
        let status = entry.running.status();
        let running = status
            .containers
            .iter()
            .chain(&status.init_containers)
            .find(|status| status.name == container);
        let unrunnable = |reason: &str| RunnerError::Unrunnable {
            pod: name.to_owned(),
            reason: format!("container {container}: {reason}"),
        };
        let pid = running
            .and_then(|status| status.pid)
            .ok_or_else(|| unrunnable("not running"))?;
        let spec = entry.pod.spec.clone().unwrap_or_default();
        let rendered = spec
            .containers
            .iter()
            .chain(spec.init_containers.iter().flatten())
            .find(|candidate| candidate.name == container)
            .ok_or_else(|| unrunnable("not in the pod"))?;
        let image = self
            .options
            .images
            .get(rendered.image.as_deref().unwrap_or_default())
            .map_err(|error| unrunnable(&error.to_string()))?;
        let user = credentials(&entry.pod, rendered, image);
        let env = entry
            .running
            .environment(container)
            .ok_or_else(|| unrunnable("its environment cannot be built"))?;
        let command = Command {
            argv: argv.iter().map(|word| (*word).to_owned()).collect(),
            env,
            working_dir: "/".into(),
        };
        Ok(ExecPlan {
            helper: self.helper.clone(),
            pid,
            user,
            command,
        })
    }
}

/// A command to run inside a running container (see [`PodRunner::exec_plan`]).
#[derive(Clone, Debug)]
pub struct ExecPlan {
    helper: Helper,
    pid: u32,
    user: crate::launch::Credentials,
    command: Command,
}

impl ExecPlan {
    /// Runs it; its exit code and output, `None` on timeout.
    pub async fn run(self, timeout: Duration) -> Result<Option<(i32, String)>, RunnerError> {
        Ok(self
            .helper
            .exec_in(self.pid, &self.user, true, self.command, timeout)
            .await?)
    }
}
