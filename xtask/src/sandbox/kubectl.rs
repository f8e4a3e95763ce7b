//! The provisioned kubectl and helm, pointed at the sandbox.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::bail;
use strata_testing::process::{Stop, run_bounded};

/// The provisioned kubectl and helm, pointed at the sandbox.
pub(super) struct Kubectl {
    pub(super) binary: PathBuf,
    pub(super) helm: PathBuf,
    pub(super) kubeconfig: PathBuf,
    pub(super) home: PathBuf,
}

impl Kubectl {
    pub(super) fn run(&self, args: &[&str]) -> anyhow::Result<String> {
        output(
            Command::new(&self.binary)
                .arg("--kubeconfig")
                .arg(&self.kubeconfig)
                .args(args),
            "kubectl",
            args,
            Stop::Program,
        )
    }

    /// The `data` of the ConfigMap `name` in `namespace`.
    pub(super) fn config_map_data(
        &self,
        namespace: &str,
        name: &str,
    ) -> anyhow::Result<serde_json::Value> {
        let text = self.in_namespace("get", namespace, &["configmap", name, "-o", "json"])?;
        let mut config_map: serde_json::Value = serde_json::from_str(&text)?;
        Ok(config_map["data"].take())
    }

    /// `kubectl <verb> --namespace <namespace> <args>`.
    pub(super) fn in_namespace(
        &self,
        verb: &str,
        namespace: &str,
        args: &[&str],
    ) -> anyhow::Result<String> {
        let mut all = vec![verb, "--namespace", namespace];
        all.extend_from_slice(args);
        self.run(&all)
    }

    pub(super) fn helm(&self, args: &[&str]) -> anyhow::Result<String> {
        output(
            Command::new(&self.helm)
                .arg("--kubeconfig")
                .arg(&self.kubeconfig)
                .args(args)
                .env("HELM_CACHE_HOME", self.home.join("helm-cache"))
                .env("HELM_CONFIG_HOME", self.home.join("helm-config"))
                .env("HELM_DATA_HOME", self.home.join("helm-data")),
            "helm",
            args,
            Stop::Program,
        )
    }
}

/// The longest one kubectl, helm or `zkCli.sh` call may take. Each waits on its own
/// terms (`--wait`, `--timeout`) far below this; the bound is for a call that hangs,
/// so the step fails naming it instead of hanging the demo and CI.
const CALL_BOUND: Duration = Duration::from_secs(300);

/// Runs `command` within [`CALL_BOUND`]; `stop` says what an overrun stops
/// ([`Stop::Program`] keeps Ctrl-C reaching a single binary).
pub(super) fn output(
    command: &mut Command,
    program: &str,
    args: &[&str],
    stop: Stop,
) -> anyhow::Result<String> {
    let finished = run_bounded(command, &format!("{program} {args:?}"), CALL_BOUND, stop)?;
    if !finished.status.success() {
        bail!(
            "{program} {args:?} failed ({}): {}{}",
            finished.status,
            finished.stdout,
            finished.stderr
        );
    }
    Ok(finished.stdout)
}
