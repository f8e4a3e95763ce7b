//! The programs the end-to-end tests run against the control plane: the real Helm and
//! kubectl with the admin's credentials, and an operator binary as its own process with
//! its chart's identity (what the leader-election test kills).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::ControlPlane;
use super::error::{ControlPlaneError, io};
use crate::process::{Stop, run_bounded};
use crate::tools::{self, HELM, KUBECTL};

/// How long one `helm` call may take.
const HELM_BOUND: Duration = Duration::from_secs(120);

impl ControlPlane {
    /// `helm install <release> <chart> --namespace <namespace> --create-namespace
    /// --set ...` with the real Helm ([`HELM`]) and the admin kubeconfig, so the real
    /// apiextensions server registers the chart's CRDs and the real RBAC holds its roles.
    pub fn helm_install(
        &self,
        release: &str,
        chart: &Path,
        namespace: &str,
        set: &[&str],
    ) -> Result<(), ControlPlaneError> {
        let home = self.dir().join("helm");
        let mut command = Command::new(tools::required_path(HELM)?);
        command
            .arg("--kubeconfig")
            .arg(self.kubeconfig())
            .args(["install", release])
            .arg(chart)
            .args(["--namespace", namespace, "--create-namespace"])
            .env("HELM_CACHE_HOME", home.join("cache"))
            .env("HELM_CONFIG_HOME", home.join("config"))
            .env("HELM_DATA_HOME", home.join("data"));
        for value in set {
            command.args(["--set", value]);
        }
        let doing = format!("helm install {release} {}", chart.display());
        let finished = run_bounded(&mut command, &doing, HELM_BOUND, Stop::Program)
            .map_err(|error| ControlPlaneError::Generate(format!("{doing}: {error}")))?;
        if !finished.status.success() {
            return Err(ControlPlaneError::Generate(format!(
                "{doing} failed ({}): {}{}",
                finished.status, finished.stdout, finished.stderr
            )));
        }
        Ok(())
    }

    /// `helm install <operator> <workspace>/helm/<operator> --set replicas=0`: the
    /// chart's CRDs, RBAC and ServiceAccount without the operator's pod, which KWOK
    /// could not run; the operator then runs as an [`OperatorProcess`] with a token of
    /// the chart's ServiceAccount.
    pub fn install_operator_chart(
        &self,
        workspace: &Path,
        operator: &str,
        namespace: &str,
    ) -> Result<(), ControlPlaneError> {
        self.helm_install(
            operator,
            &workspace.join("helm").join(operator),
            namespace,
            &["replicas=0"],
        )
    }

    /// The real kubectl ([`KUBECTL`]) with the admin kubeconfig: its output, or its
    /// output as the error when it fails.
    pub fn kubectl(&self, args: &[&str]) -> Result<String, String> {
        let program = tools::required_path(KUBECTL).map_err(|error| error.to_string())?;
        let output = Command::new(program)
            .arg("--kubeconfig")
            .arg(self.kubeconfig())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|error| format!("kubectl {args:?}: {error}"))?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        if output.status.success() {
            Ok(text)
        } else {
            Err(text)
        }
    }
}

/// `<binary> run` against a control plane until the value is dropped (or
/// [`OperatorProcess::kill`]), with a kubeconfig that authenticates with a
/// ServiceAccount token, and its output in a log file.
#[derive(Debug)]
pub struct OperatorProcess {
    name: String,
    child: Child,
    log: PathBuf,
}

impl OperatorProcess {
    /// Starts `binary run` as `pod_name` (its Lease holder identity) with the token in
    /// `token`, leader election in `namespace`, and `env` on top; the log goes to
    /// `<control plane dir>/<pod_name>.log`.
    pub fn start(
        control_plane: &ControlPlane,
        binary: &Path,
        pod_name: &str,
        namespace: &str,
        token: &str,
        env: &[(&str, &str)],
    ) -> Result<Self, ControlPlaneError> {
        let kubeconfig = control_plane.dir().join(format!("{pod_name}.kubeconfig"));
        control_plane.write_kubeconfig(&kubeconfig, token)?;
        let log = control_plane.dir().join(format!("{pod_name}.log"));
        let output = fs::File::create(&log)
            .map_err(|source| io(&format!("creating {}", log.display()), source))?;
        let error_output = output
            .try_clone()
            .map_err(|source| io("duplicating a log file handle", source))?;
        let child = crate::parent_death::command(binary)
            .arg("run")
            .env("KUBECONFIG", &kubeconfig)
            .env("POD_NAMESPACE", namespace)
            .env("POD_NAME", pod_name)
            .env("HTTP_ADDRESS", "127.0.0.1:0")
            .env("KUBERNETES_CLUSTER_DOMAIN", "cluster.local")
            .env("LOG_FORMAT", "text")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(output)
            .stderr(error_output)
            .spawn()
            .map_err(|source| io(&format!("starting {}", binary.display()), source))?;
        Ok(Self {
            name: pod_name.to_owned(),
            child,
            log,
        })
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The last `lines` lines of its log, for failure messages.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// An error naming it, with its last log lines, when it has exited.
    pub fn check_alive(&mut self) -> Result<(), ControlPlaneError> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(ControlPlaneError::Generate(format!(
                "{} exited ({status}); its last log lines:\n{}",
                self.name,
                self.log_tail(30)
            ))),
            Err(source) => Err(io(&format!("waiting for {}", self.name), source)),
        }
    }

    /// SIGKILL, as a node that dies or the OOM killer: no shutdown hook runs, so the
    /// Lease is not released.
    pub fn kill(&mut self) {
        if self.child.kill().is_ok() {
            let _ = self.child.wait();
        }
    }
}

impl Drop for OperatorProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
