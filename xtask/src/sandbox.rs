//! `cargo xtask sandbox`: the real operators on a real Kubernetes control plane on this
//! machine, installed by the real `helm` and driven by the real `kubectl`, with KWOK
//! playing three nodes and the pod runner a fourth, real one.
//!
//! 1. The control plane of [`strata_testing::control_plane`] starts: etcd,
//!    kube-apiserver (`Node,RBAC`), kube-controller-manager with every default
//!    controller (StatefulSet, Deployment, garbage collector, disruption, volume
//!    binder, ...), kube-scheduler, and KWOK with three nodes whose pods run without a
//!    process. The admin kubeconfig is copied to `target/sandbox/kubeconfig`.
//! 2. The pod runner registers node `strata-runner-0`, labelled and tainted
//!    `strata.dev/pod-runner=true:NoSchedule` (module `node`): its pods run as real
//!    processes, reach the API server in-cluster, and get projected ServiceAccount
//!    tokens.
//! 3. `helm install` of every registered operator's chart with `replicas=2` and the
//!    node's selector and toleration: the Deployment controller creates the pods, the
//!    scheduler binds them to the runner's node, and the runner starts the binary built
//!    from the workspace (the chart's image maps to it), with the chart's security
//!    context, probes and downward-API variables. The real RBAC authorizer answers
//!    their requests with what the chart grants; the sandbox fails at the end if the
//!    API server's audit log shows any operator request refused with 403. Their logs
//!    are copied to `target/sandbox/<pod>.log`.
//! 4. Without `--demo`, it prints how to use it and runs until Ctrl-C. With `--demo`
//!    (module `demo`), it applies each operator's example: the ZooKeeper, HDFS and Trino
//!    examples on the runner's node, for real (the demo adds the node's selector and
//!    toleration to each role's `podOverrides`; HDFS gets a real ZooKeeper and its
//!    ZNode first), Superset's on KWOK's. It waits for Available and checks the real
//!    products: a leader in the 3-server ensemble, a ZNode's path created and removed by
//!    its finalizer, an ensemble grown 1 → 3 keeping a znode written before each step,
//!    an active and a standby namenode with every datanode live and a file written and
//!    read through WebHDFS, and a `tpch` query through the Trino coordinator. It
//!    makes the pods fail (a JVM option the JVM refuses on the runner, KWOK's
//!    [`SIMULATED_FAILURE_ANNOTATION`](strata_testing::control_plane::SIMULATED_FAILURE_ANNOTATION)
//!    elsewhere) and waits for Degraded, with the Warning Event in `kubectl describe`;
//!    heals them; stops the cluster with the `operator-command` annotation and waits for
//!    Stopped, with its volume claims kept; removes the annotation and waits for
//!    Available; deletes it, and checks that the garbage collector removed its children
//!    and that its volume claims stay. Each step shows `kubectl get` (the CRD's printer
//!    columns) and the conditions.
//! 5. The leading ZooKeeper operator pod is killed (module `lease`); the standby takes the
//!    Lease over.
//! 6. The demo ends by proving the RBAC enforcement: `patch` on ConfigMaps is revoked
//!    from the first operator's ClusterRole, its example is applied, and the audit log
//!    must show the refused request; the role is then restored.
//!
//! Every pod the runner started is stopped by its PID when the sandbox ends, also on
//! Ctrl-C and on error. An operator container that restarts, or a control-plane
//! component that dies, ends the sandbox with its last log lines.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use strata_testing::control_plane::{AuditEvent, ControlPlane, ControlPlaneOptions};
use tokio::signal::unix::{SignalKind, signal};

use crate::operators::{self, Operator};
use crate::tools::{self, SandboxTools};

use self::kubectl::Kubectl;
use self::node::{RUNNER_LABEL, RUNNER_NODE, operator_image, placement, start_runner_node};
use self::operator_pods::OperatorPods;

mod demo;
mod hdfs;
mod kubectl;
mod lease;
mod node;
mod operator_pods;
mod rbac_check;
mod trino;
mod zookeeper;
mod zookeeper_access;

/// The namespace the charts are installed into.
pub const OPERATOR_NAMESPACE: &str = "strata-operators";
/// How many nodes KWOK plays: enough for a three-server ensemble on three nodes.
const NODES: u16 = 3;
/// How often the demo looks again while it waits.
const POLL_PERIOD: Duration = Duration::from_millis(500);
/// How long the demo waits for the garbage collector after deleting a cluster.
const GARBAGE_COLLECTION_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the demo waits for a condition of a cluster on KWOK's nodes.
const DEMO_TIMEOUT: &str = "120s";
/// How long the demo waits for a condition of a real product: a restart of a JVM
/// product takes its start-up time.
const REAL_DEMO_TIMEOUT: &str = "300s";
/// The operator replicas the sandbox installs: one leads, one stands by.
const OPERATOR_REPLICAS: u16 = 2;
/// How long an operator Deployment may take to roll out.
const OPERATOR_ROLLOUT_TIMEOUT: &str = "180s";

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
    let operators = operators::registered();
    let packages: Vec<&str> = operators.iter().map(|operator| operator.name).collect();
    let _built = crate::build::binaries(workspace, &packages, true)?;
    eprintln!("==> provisioning what the sandbox runs");
    let tools = tools::provision_sandbox(workspace)?;
    let dir = workspace.join("target").join("sandbox");
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    // The demo blocks on kubectl and helm; the node agent's tasks (the pods' status,
    // the API server relay, the forwards) need threads of their own meanwhile.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(8)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(sandbox(workspace, &dir, &tools, operators, options))
}

async fn sandbox(
    workspace: &Path,
    dir: &Path,
    tools: &SandboxTools,
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
    let agent = start_runner_node(
        dir,
        &target_dir(workspace),
        tools,
        &control_plane,
        operators,
    )
    .await?;
    eprintln!("==> the pod runner serves node {RUNNER_NODE} (label and taint {RUNNER_LABEL}=true)");
    let pods = OperatorPods {
        agent: &agent,
        dir: dir.to_owned(),
    };
    let kubectl = Kubectl {
        binary: tools.kubectl.clone(),
        helm: tools.helm.clone(),
        kubeconfig: kubeconfig.clone(),
        home: dir.to_owned(),
    };
    let outcome = run_sandbox(
        workspace,
        dir,
        tools,
        operators,
        options,
        &kubectl,
        &pods,
        &mut control_plane,
    )
    .await;
    pods.keep_logs();
    agent.shutdown().await;
    let denied: Vec<String> = refused_operator_requests(&control_plane)?
        .iter()
        .filter(|request| {
            outcome
                .as_ref()
                .map_or(true, |provoked| !provoked.contains(&request.audit_id))
        })
        .map(AuditEvent::describe)
        .collect();
    if !denied.is_empty() {
        let failure = outcome
            .as_ref()
            .err()
            .map(|error| format!("{error:#}\n"))
            .unwrap_or_default();
        bail!(
            "{failure}the chart's RBAC refused {} request(s) of the operators:\n  {}",
            denied.len(),
            denied.join("\n  ")
        );
    }
    let provoked = outcome?;
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

/// Installs the charts and runs the demo, or waits for Ctrl-C; returns the audit ids
/// of the refusals the RBAC check provoked on purpose.
#[allow(clippy::too_many_arguments)]
async fn run_sandbox(
    workspace: &Path,
    dir: &Path,
    tools: &SandboxTools,
    operators: &[Operator],
    options: SandboxOptions,
    kubectl: &Kubectl,
    pods: &OperatorPods<'_>,
    control_plane: &mut ControlPlane,
) -> anyhow::Result<Vec<String>> {
    for operator in operators {
        install_operator(workspace, kubectl, operator)?;
    }
    for operator in operators {
        eprintln!("==> kubectl rollout status deployment/{}", operator.name);
        let rolled_out = kubectl.in_namespace(
            "rollout",
            OPERATOR_NAMESPACE,
            &[
                "status",
                &format!("deployment/{}", operator.name),
                &format!("--timeout={OPERATOR_ROLLOUT_TIMEOUT}"),
            ],
        );
        pods.check()?;
        if let Err(error) = rolled_out {
            let listed =
                kubectl.in_namespace("get", OPERATOR_NAMESPACE, &["pods", "-o", "wide"])?;
            bail!("{error:#}\n{listed}");
        }
    }
    println!(
        "{}",
        kubectl.in_namespace("get", OPERATOR_NAMESPACE, &["pods", "-o", "wide"])?
    );
    if !options.demo {
        print_usage(&dir.join("kubeconfig"), workspace, operators);
        wait_for_ctrl_c(pods, control_plane).await?;
        return Ok(Vec::new());
    }
    demo::demo(workspace, tools, kubectl, operators, pods, control_plane).await?;
    if let Some(operator) = operators.first() {
        lease::leader_hands_over(kubectl, pods, operator).await?;
        return rbac_check::revoked_verb_is_named(
            workspace,
            dir,
            kubectl,
            control_plane,
            operator,
            pods,
        )
        .await;
    }
    Ok(Vec::new())
}

/// `helm install` of `operator`'s chart as a user would, onto the runner's node: two
/// replicas (one leads through the Lease), the image the runner maps to the binary
/// built from the workspace.
fn install_operator(
    workspace: &Path,
    kubectl: &Kubectl,
    operator: &Operator,
) -> anyhow::Result<()> {
    let (repository, tag) = operator_image(operator.name);
    let placement = placement();
    eprintln!(
        "==> helm install {} --set replicas={OPERATOR_REPLICAS} (image {repository}:{tag}, on node {RUNNER_NODE})",
        operator.name
    );
    kubectl.helm(&[
        "install",
        operator.name,
        &workspace.join("helm").join(operator.name).to_string_lossy(),
        "--namespace",
        OPERATOR_NAMESPACE,
        "--create-namespace",
        "--set",
        &format!("replicas={OPERATOR_REPLICAS}"),
        "--set",
        &format!("image.repository={repository}"),
        "--set",
        &format!("image.tag={tag}"),
        "--set-json",
        &format!("nodeSelector={}", placement["nodeSelector"]),
        "--set-json",
        &format!("tolerations={}", placement["tolerations"]),
    ])?;
    Ok(())
}

/// The refused requests of the operators' ServiceAccounts that the API server refused with 403.
fn refused_operator_requests(control_plane: &ControlPlane) -> anyhow::Result<Vec<AuditEvent>> {
    let operators = format!("system:serviceaccount:{OPERATOR_NAMESPACE}:");
    Ok(control_plane
        .audit_events()?
        .into_iter()
        .filter(|request| request.is_forbidden() && request.user.starts_with(&operators))
        .collect())
}

/// Where `cargo build` put the operators' binaries.
fn target_dir(workspace: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| workspace.join("target"), PathBuf::from)
        .join("debug")
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
    pods: &OperatorPods<'_>,
    control_plane: &mut ControlPlane,
) -> anyhow::Result<()> {
    // One listener for the whole wait, so a Ctrl-C during a check is not lost.
    let mut interrupts = signal(SignalKind::interrupt()).context("cannot listen for Ctrl-C")?;
    loop {
        tokio::select! {
            _ = interrupts.recv() => return Ok(()),
            () = tokio::time::sleep(Duration::from_secs(1)) => {
                pods.check()?;
                control_plane.check_alive()?;
            }
        }
    }
}
