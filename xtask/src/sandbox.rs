//! `cargo xtask sandbox`: the real operators on a real Kubernetes control plane on this
//! machine, installed by the real `helm` and driven by the real `kubectl`, with KWOK
//! playing the nodes.
//!
//! 1. The control plane of [`strata_testing::control_plane`] starts: etcd,
//!    kube-apiserver (`Node,RBAC`), kube-controller-manager with every default
//!    controller (StatefulSet, garbage collector, disruption, volume binder, ...),
//!    kube-scheduler, and KWOK with three nodes whose pods run without a process.
//!    The admin kubeconfig is copied to `target/sandbox/kubeconfig`.
//! 2. A real ZooKeeper (the jars of the 3.9.5 image directory) on a loopback port, when an
//!    operator reaches an ensemble itself (the ZooKeeper operator's ZNode controller):
//!    its address goes to that operator through the variable its registry entry names
//!    ([`operators::SandboxZookeeper`]), since KWOK's pods run no ZooKeeper.
//! 3. `helm install` of every registered operator's chart, with `replicas=0` (KWOK
//!    cannot run the operator's container); each operator's binary runs in its place
//!    (`<operator> run`) as a child process, with a kubeconfig holding a token of the
//!    chart's ServiceAccount from the TokenRequest API, and its log in
//!    `target/sandbox/<operator>.log`. The real RBAC authorizer answers its requests
//!    with what the chart grants; the sandbox fails at the end if the API server's
//!    audit log shows any operator request refused with 403.
//! 4. Without `--demo`, it prints how to use it and runs until Ctrl-C. With `--demo`, it
//!    applies each operator's example and waits for Available; for the ZooKeeper
//!    operator, applies a ZNode, waits for it, checks its discovery ConfigMap and that
//!    its path exists in the real ZooKeeper, deletes it and checks that the finalizer
//!    removed the path; makes its pods fail (through `podOverrides` and KWOK's
//!    [`SIMULATED_FAILURE_ANNOTATION`](strata_testing::control_plane::SIMULATED_FAILURE_ANNOTATION)) and waits for Degraded, with the Warning Event
//!    in `kubectl describe`; heals them; stops the cluster with the `operator-command`
//!    annotation and waits for Stopped, with its volume claims kept; removes the
//!    annotation and waits for Available; deletes it, and checks that the garbage
//!    collector removed its children and that its volume claims stay. Each step shows
//!    `kubectl get` (the CRD's printer columns) and the conditions.
//! 5. The demo ends by proving the RBAC enforcement: `patch` on ConfigMaps is revoked
//!    from the first operator's ClusterRole, its example is applied, and the audit log
//!    must show the refused request; the role is then restored.
//!
//! Every child is stopped by its PID when the sandbox ends, also on Ctrl-C and on error.
//! A child or control-plane component that dies ends the sandbox with its last log
//! lines.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};
use strata_testing::control_plane::{AuditEvent, ControlPlane, ControlPlaneOptions};

use crate::operators::{self, Operator};
use crate::tools::{self, Tools};

use self::children::{Children, log_file};
use self::kubectl::Kubectl;
use self::zookeeper::start_zookeeper;

mod children;
mod demo;
mod kubectl;
mod rbac_check;
mod zookeeper;

/// The namespace the charts are installed into.
pub const OPERATOR_NAMESPACE: &str = "strata-operators";
/// How many nodes KWOK plays: enough for a three-server ensemble on three nodes.
const NODES: u16 = 3;
/// How often the demo looks again while it waits.
const POLL_PERIOD: Duration = Duration::from_millis(500);
/// How long the demo waits for the garbage collector after deleting a cluster.
const GARBAGE_COLLECTION_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the demo waits for a condition.
const DEMO_TIMEOUT: &str = "120s";

/// What `cargo xtask sandbox` was asked for.
#[derive(Clone, Debug)]
pub struct SandboxOptions {
    /// Loopback address every control-plane component listens on.
    pub address: String,
    /// Run the scripted demo and exit.
    pub demo: bool,
}

/// Runs the sandbox until Ctrl-C, or through the demo.
pub fn run(workspace: &Path, options: SandboxOptions) -> anyhow::Result<()> {
    let tools = tools::provision(workspace)?;
    let operators = operators::registered();
    build_operators(workspace, operators)?;
    let dir = workspace.join("target").join("sandbox");
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(sandbox(workspace, &dir, &tools, operators, options))
}

/// `cargo build` of every operator binary, so the children start at once.
fn build_operators(workspace: &Path, operators: &[Operator]) -> anyhow::Result<()> {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command.current_dir(workspace).arg("build");
    for operator in operators {
        command.args(["--package", operator.name]);
    }
    for name in crate::pipeline::package_variables(std::env::vars_os().map(|(name, _)| name)) {
        command.env_remove(name);
    }
    let status = command.status().context("running cargo build")?;
    if !status.success() {
        bail!("building the operators failed: {status}");
    }
    Ok(())
}

async fn sandbox(
    workspace: &Path,
    dir: &Path,
    tools: &Tools,
    operators: &[Operator],
    options: SandboxOptions,
) -> anyhow::Result<()> {
    eprintln!("==> starting the control plane on {}", options.address);
    let mut control_plane = ControlPlane::start(ControlPlaneOptions {
        address: options.address.clone(),
        nodes: NODES,
        bin: Some(tools.control_plane_bin.clone()),
        controller_qps: None,
    })
    .await?;
    let kubeconfig = dir.join("kubeconfig");
    fs::copy(control_plane.kubeconfig(), &kubeconfig)
        .with_context(|| format!("writing {}", kubeconfig.display()))?;
    eprintln!(
        "==> the control plane serves {} (ready in {:.1} s; nodes {})",
        control_plane.server(),
        control_plane.started_in().as_secs_f64(),
        control_plane.nodes().join(", ")
    );

    let kubectl = Kubectl {
        binary: tools.kubectl.clone(),
        helm: tools.helm.clone(),
        kubeconfig: kubeconfig.clone(),
        home: dir.to_owned(),
    };
    let mut children = Children(Vec::new());
    let zookeeper = if operators
        .iter()
        .any(|operator| operator.sandbox_zookeeper.is_some())
    {
        let (address, child) = start_zookeeper(dir, tools)?;
        children.0.push(child);
        Some(address)
    } else {
        None
    };
    for operator in operators {
        eprintln!("==> helm install {} --set replicas=0", operator.name);
        kubectl.helm(&[
            "install",
            operator.name,
            &workspace.join("helm").join(operator.name).to_string_lossy(),
            "--namespace",
            OPERATOR_NAMESPACE,
            "--create-namespace",
            "--set",
            "replicas=0",
        ])?;
        let env: Vec<(&str, String)> = operator
            .sandbox_zookeeper
            .zip(zookeeper.as_ref())
            .map(|(wanted, address)| (wanted.address_env, address.to_string()))
            .into_iter()
            .collect();
        children
            .0
            .push(start_operator(workspace, dir, &control_plane, operator, &env).await?);
    }

    let mut provoked: Vec<String> = Vec::new();
    let outcome = if options.demo {
        let shown = demo::demo(
            workspace,
            tools,
            &kubectl,
            operators,
            &mut children,
            &mut control_plane,
            zookeeper,
        )
        .await;
        match (shown, operators.first()) {
            (Ok(()), Some(operator)) => rbac_check::revoked_verb_is_named(
                workspace,
                dir,
                &kubectl,
                &control_plane,
                operator,
                &mut children,
            )
            .await
            .map(|ids| provoked = ids),
            (shown, _) => shown,
        }
    } else {
        print_usage(&kubeconfig, workspace, operators);
        wait_for_ctrl_c(&mut children, &mut control_plane).await
    };
    drop(children);
    let denied: Vec<String> = refused_operator_requests(&control_plane)?
        .iter()
        .filter(|request| !provoked.contains(&request.audit_id))
        .map(AuditEvent::describe)
        .collect();
    if !denied.is_empty() {
        let failure = outcome
            .err()
            .map(|error| format!("{error:#}\n"))
            .unwrap_or_default();
        bail!(
            "{failure}the chart's RBAC refused {} request(s) of the operators:\n  {}",
            denied.len(),
            denied.join("\n  ")
        );
    }
    outcome?;
    if provoked.is_empty() {
        eprintln!("==> the audit log shows no request of an operator refused by its chart's RBAC");
    } else {
        eprintln!(
            "==> the audit log shows no request of an operator refused by its chart's RBAC, \
             apart from the {} the revoked grant provoked",
            provoked.len()
        );
    }
    Ok(())
}

/// The requests of the operators' ServiceAccounts that the API server refused with 403.
fn refused_operator_requests(control_plane: &ControlPlane) -> anyhow::Result<Vec<AuditEvent>> {
    let operators = format!("system:serviceaccount:{OPERATOR_NAMESPACE}:");
    Ok(control_plane
        .audit_events()?
        .into_iter()
        .filter(|request| request.is_forbidden() && request.user.starts_with(&operators))
        .collect())
}

/// Starts `<operator> run` against the control plane as the chart's ServiceAccount,
/// with a token from the TokenRequest API.
async fn start_operator(
    workspace: &Path,
    dir: &Path,
    control_plane: &ControlPlane,
    operator: &Operator,
    env: &[(&str, String)],
) -> anyhow::Result<(String, Child, PathBuf)> {
    let token = control_plane
        .service_account_token(OPERATOR_NAMESPACE, operator.name)
        .await?;
    let kubeconfig = dir.join(format!("{}.kubeconfig", operator.name));
    control_plane.write_kubeconfig(&kubeconfig, &token)?;
    let log = dir.join(format!("{}.log", operator.name));
    let binary = workspace.join("target").join("debug").join(operator.name);
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|target| target.join("debug").join(operator.name))
        .filter(|path| path.is_file())
        .unwrap_or(binary);
    let output = log_file(&log)?;
    let child = Command::new(&target)
        .arg("run")
        .env("KUBECONFIG", &kubeconfig)
        .env("POD_NAMESPACE", OPERATOR_NAMESPACE)
        .env("POD_NAME", format!("{}-sandbox", operator.name))
        .env("HTTP_ADDRESS", "127.0.0.1:0")
        .env("KUBERNETES_CLUSTER_DOMAIN", "cluster.local")
        .env("LOG_FORMAT", "text")
        .envs(env.iter().map(|(name, value)| (*name, value)))
        .stdin(Stdio::null())
        .stdout(output.try_clone()?)
        .stderr(output)
        .spawn()
        .with_context(|| format!("starting {}", target.display()))?;
    eprintln!(
        "==> started {} (pid {}) as system:serviceaccount:{OPERATOR_NAMESPACE}:{}, log in {}",
        operator.name,
        child.id(),
        operator.name,
        log.display()
    );
    Ok((operator.name.to_owned(), child, log))
}

fn print_usage(kubeconfig: &Path, workspace: &Path, operators: &[Operator]) {
    eprintln!("\nThe sandbox runs. In another shell:\n");
    eprintln!("  export KUBECONFIG={}", kubeconfig.display());
    for operator in operators {
        for manifest in operator
            .sandbox_prerequisite
            .iter()
            .chain([&operator.example])
        {
            eprintln!(
                "  kubectl apply --server-side -f {}",
                workspace.join(manifest).display()
            );
        }
    }
    let kinds: Vec<String> = operators
        .iter()
        .flat_map(|operator| (operator.crds)())
        .map(|crd| crd.spec.names.plural)
        .filter(|plural| plural.ends_with("clusters"))
        .collect();
    eprintln!("  kubectl get {} --watch", kinds.join(","));
    eprintln!("  kubectl describe {}\n", kinds.join(","));
    eprintln!("Ctrl-C stops the sandbox and every operator it started.");
}

async fn wait_for_ctrl_c(
    children: &mut Children,
    control_plane: &mut ControlPlane,
) -> anyhow::Result<()> {
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => return Ok(()),
            () = tokio::time::sleep(Duration::from_secs(1)) => {
                children.check()?;
                control_plane.check_alive()?;
            }
        }
    }
}
