//! `cargo xtask sandbox`: the real operators on this machine, installed by the real
//! `helm` into the in-memory API and driven by the real `kubectl`, with no cluster.
//!
//! 1. The in-memory API ([`strata_test_apiserver`]) listens on a loopback address and a
//!    kubeconfig for it is written to `target/sandbox/kubeconfig`.
//! 2. A simulated data plane runs all the time: the StatefulSet controller and the
//!    kubelets of [`strata_testing::workloads::step_stateful_sets`], the claims of
//!    [`strata_testing::workloads::provision_claims`], and the Deployment, DaemonSet
//!    and Job controllers of [`strata_testing::workloads::step_deployments`],
//!    [`strata_testing::workloads::step_daemon_sets`] and
//!    [`strata_testing::workloads::step_jobs`], every half second, so pods
//!    appear, become Ready and go away like on a cluster, Jobs complete, and volumes
//!    stay.
//! 3. A real ZooKeeper (the Debian package's jars) on a loopback port, when an
//!    operator reaches an ensemble itself (the ZooKeeper operator's ZNode controller):
//!    its address goes to that operator through the variable its registry entry names
//!    ([`operators::SandboxZookeeper`]), since the operator cannot resolve the
//!    clusters' Service names here.
//! 4. `helm install` of every registered operator's chart, then each operator's binary
//!    (`<operator> run`) as a child process, with a kubeconfig whose token names the
//!    chart's ServiceAccount, and its log in `target/sandbox/<operator>.log`. RBAC is
//!    enforced for ServiceAccounts: an operator gets exactly what its chart's Roles and
//!    bindings grant, and a request they do not grant is a 403. The sandbox fails at
//!    the end if any operator request was refused.
//! 5. Without `--demo`, it prints how to use it and runs until Ctrl-C. With `--demo`, it
//!    applies each operator's example and waits for Available; for the ZooKeeper
//!    operator, applies a ZNode, waits for it, checks its discovery ConfigMap and that
//!    its path exists in the real ZooKeeper, deletes it and checks that the finalizer
//!    removed the path; makes its pods fail (and finds the Warning Event in
//!    `kubectl describe`)
//!    (`CrashLoopBackOff`, through `podOverrides` and the
//!    [`SIMULATED_FAILURE_ANNOTATION`](strata_testing::workloads::SIMULATED_FAILURE_ANNOTATION)) and waits for Degraded; heals them; stops the
//!    cluster with the `operator-command` annotation and waits for Stopped, with its
//!    volume claims kept; removes the annotation and waits for Available; deletes it,
//!    and checks that its children were garbage-collected and its volume claims stay.
//!    Each step shows `kubectl get` and the conditions.
//!
//! 6. The demo ends by proving the RBAC enforcement: `patch` on ConfigMaps is revoked
//!    from the first operator's ClusterRole, its example is applied, and the sandbox
//!    must name the refused request; the role is then restored.
//!
//! Every child is stopped by its PID when the sandbox ends, also on Ctrl-C and on error.
//! A child that dies ends the sandbox with its last log lines.

use std::collections::BTreeSet;
use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use strata_test_apiserver::{Listener, TestApiServer};
use strata_testing::workloads::{
    provision_claims, step_daemon_sets, step_deployments, step_jobs, step_stateful_sets,
};

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
/// How often the simulated data plane acts.
const DATA_PLANE_PERIOD: Duration = Duration::from_millis(500);
/// How long the demo waits for the garbage collector after deleting a cluster.
const GARBAGE_COLLECTION_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the demo waits for a condition.
const DEMO_TIMEOUT: &str = "120s";

/// What `cargo xtask sandbox` was asked for.
#[derive(Clone, Copy, Debug)]
pub struct SandboxOptions {
    /// Loopback port of the API; 0 picks a free one.
    pub port: u16,
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
    let server = TestApiServer::new();
    server.enforce_rbac();
    let address = SocketAddr::from(([127, 0, 0, 1], options.port));
    let listener = server
        .listen(address)
        .await
        .map_err(|error| anyhow::anyhow!("{error}"))?;
    let kubeconfig = dir.join("kubeconfig");
    fs::write(
        &kubeconfig,
        listener.kubeconfig("sandbox-admin", "sandbox-admin", "default"),
    )?;
    eprintln!("==> the in-memory API listens on {}", listener.url());

    let data_plane = tokio::spawn(simulate_data_plane(server.clone()));
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
        eprintln!("==> helm install {}", operator.name);
        kubectl.helm(&[
            "install",
            operator.name,
            &workspace.join("helm").join(operator.name).to_string_lossy(),
            "--namespace",
            OPERATOR_NAMESPACE,
            "--create-namespace",
        ])?;
        let env: Vec<(&str, String)> = operator
            .sandbox_zookeeper
            .zip(zookeeper.as_ref())
            .map(|(wanted, address)| (wanted.address_env, address.to_string()))
            .into_iter()
            .collect();
        children
            .0
            .push(start_operator(workspace, dir, &listener, operator, &env)?);
    }

    let mut provoked: Vec<usize> = Vec::new();
    let outcome = if options.demo {
        let shown = demo::demo(
            workspace,
            tools,
            &kubectl,
            operators,
            &mut children,
            zookeeper,
        )
        .await;
        match (shown, operators.first()) {
            (Ok(()), Some(operator)) => rbac_check::revoked_verb_is_named(
                workspace,
                dir,
                &kubectl,
                &server,
                operator,
                &mut children,
            )
            .await
            .map(|range| provoked = range),
            (shown, _) => shown,
        }
    } else {
        print_usage(&kubeconfig, workspace, operators);
        wait_for_ctrl_c(&mut children).await
    };
    data_plane.abort();
    drop(children);
    let denied: Vec<String> = server
        .denied()
        .iter()
        .enumerate()
        .filter(|(index, _)| !provoked.contains(index))
        .map(|(_, request)| rbac_check::describe_request(request))
        .collect();
    if !denied.is_empty() {
        let failure = outcome
            .err()
            .map(|error| {
                format!(
                    "{error:#}
"
                )
            })
            .unwrap_or_default();
        bail!(
            "{failure}the chart's RBAC refused {} request(s) of the operators:
  {}",
            denied.len(),
            denied.join(
                "
  "
            )
        );
    }
    outcome?;
    if provoked.is_empty() {
        eprintln!("==> no request of an operator was refused by its chart's RBAC");
    } else {
        eprintln!(
            "==> no request of an operator was refused by its chart's RBAC, apart from the {} \
             the revoked grant provoked",
            provoked.len()
        );
    }
    Ok(())
}

/// The StatefulSet controller, the kubelets and the garbage collector, for every
/// namespace, forever.
async fn simulate_data_plane(server: TestApiServer) {
    loop {
        let mut namespaces: BTreeSet<String> = BTreeSet::new();
        namespaces.extend(namespaces_of::<StatefulSet>(&server));
        namespaces.extend(namespaces_of::<Deployment>(&server));
        namespaces.extend(namespaces_of::<DaemonSet>(&server));
        namespaces.extend(namespaces_of::<Job>(&server));
        for namespace in &namespaces {
            let place = (&server, namespace.as_str());
            step_stateful_sets(place);
            provision_claims(place);
            step_deployments(place);
            step_daemon_sets(place);
            step_jobs(place);
        }
        // The garbage collector: children an operator applied while their owner was
        // being deleted.
        server.collect_orphans();
        tokio::time::sleep(DATA_PLANE_PERIOD).await;
    }
}

/// The namespaces that hold objects of kind `K`.
fn namespaces_of<K>(server: &TestApiServer) -> BTreeSet<String>
where
    K: kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned + Clone,
{
    server
        .list_typed::<K>()
        .into_iter()
        .filter_map(|object| object.meta().namespace.clone())
        .collect()
}

/// Starts `<operator> run` against the sandbox as the chart's ServiceAccount.
fn start_operator(
    workspace: &Path,
    dir: &Path,
    listener: &Listener,
    operator: &Operator,
    env: &[(&str, String)],
) -> anyhow::Result<(String, Child, PathBuf)> {
    let service_account = format!(
        "system:serviceaccount:{OPERATOR_NAMESPACE}:{}",
        operator.name
    );
    let kubeconfig = dir.join(format!("{}.kubeconfig", operator.name));
    fs::write(
        &kubeconfig,
        listener.kubeconfig(operator.name, &service_account, OPERATOR_NAMESPACE),
    )?;
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
        "==> started {} (pid {}), log in {}",
        operator.name,
        child.id(),
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

async fn wait_for_ctrl_c(children: &mut Children) -> anyhow::Result<()> {
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => return Ok(()),
            () = tokio::time::sleep(Duration::from_secs(1)) => children.check()?,
        }
    }
}
