//! `cargo xtask sandbox`: the real operators on this machine, installed by the real
//! `helm` into the in-memory API and driven by the real `kubectl`, with no cluster.
//!
//! 1. The in-memory API ([`strata_test_apiserver`]) listens on a loopback address and a
//!    kubeconfig for it is written to `target/sandbox/kubeconfig`.
//! 2. A simulated data plane runs all the time: the StatefulSet controller and the
//!    kubelets of [`strata_testing::workloads::step_stateful_sets`], the claims of
//!    [`strata_testing::workloads::provision_claims`], and the Deployment, DaemonSet
//!    and Job controllers of [`strata_testing::workloads::step_deployments`],
//!    [`step_daemon_sets`](strata_testing::workloads::step_daemon_sets) and
//!    [`step_jobs`](strata_testing::workloads::step_jobs), every half second, so pods
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
//!    [`SIMULATED_FAILURE_ANNOTATION`]) and waits for Degraded; heals them; stops the
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
use serde_json::{Value, json};
use strata_test_apiserver::{Listener, TestApiServer};
use strata_testing::workloads::{
    SIMULATED_FAILURE_ANNOTATION, provision_claims, step_daemon_sets, step_deployments, step_jobs,
    step_stateful_sets,
};

use crate::operators::{self, Operator};
use crate::tools::{self, Tools};

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

/// The operator processes; dropping them stops each by its PID.
struct Children(Vec<(String, Child, PathBuf)>);

impl Children {
    /// Fails with the last log lines of the first child that has exited.
    fn check(&mut self) -> anyhow::Result<()> {
        for (name, child, log) in &mut self.0 {
            if let Some(status) = child.try_wait()? {
                bail!(
                    "{name} exited ({status}); the last lines of {}:\n{}",
                    log.display(),
                    last_lines(log, 20)
                );
            }
        }
        Ok(())
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        for (name, child, _) in &mut self.0 {
            if child.kill().is_ok() {
                let _ = child.wait();
                eprintln!("    stopped {name} (pid {})", child.id());
            }
        }
    }
}

fn last_lines(path: &Path, count: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(count)..].join("\n")
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
        let shown = demo(
            workspace,
            tools,
            &kubectl,
            operators,
            &mut children,
            zookeeper,
        )
        .await;
        match (shown, operators.first()) {
            (Ok(()), Some(operator)) => {
                revoked_verb_is_named(workspace, dir, &kubectl, &server, operator, &mut children)
                    .await
                    .map(|range| provoked = range)
            }
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
        .map(|(_, request)| describe_request(request))
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

/// `path`, truncated, for a child's output.
fn log_file(path: &Path) -> anyhow::Result<fs::File> {
    fs::File::create(path).with_context(|| format!("creating {}", path.display()))
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

/// Starts a standalone ZooKeeper (the Debian package's jars) on a free loopback port,
/// with its data and log under `dir/zookeeper`, and waits until it answers `ruok`.
fn start_zookeeper(
    dir: &Path,
    tools: &Tools,
) -> anyhow::Result<(SocketAddr, (String, Child, PathBuf))> {
    let home = dir.join("zookeeper");
    let data = home.join("data");
    if data.exists() {
        fs::remove_dir_all(&data).with_context(|| format!("clearing {}", data.display()))?;
    }
    fs::create_dir_all(&data).with_context(|| format!("creating {}", data.display()))?;
    let address = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .context("finding a free loopback port for ZooKeeper")?;
    let config = home.join("zoo.cfg");
    fs::write(
        &config,
        format!(
            "tickTime=2000\ndataDir={}\nclientPort={}\nclientPortAddress=127.0.0.1\n\
             admin.enableServer=false\n4lw.commands.whitelist=ruok,srvr\n",
            data.display(),
            address.port()
        ),
    )?;
    let log = home.join("zookeeper.log");
    let output = log_file(&log)?;
    let child = Command::new(&tools.java)
        .args([
            "-Xmx128m",
            "-XX:+UseSerialGC",
            "-cp",
            &tools.zookeeper_classpath,
        ])
        .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(output.try_clone()?)
        .stderr(output)
        .spawn()
        .context("starting ZooKeeper")?;
    let mut started = ("zookeeper".to_owned(), child, log);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if four_letter_word(address, "ruok").is_ok_and(|answer| answer == "imok") {
            break;
        }
        if let Some(status) = started.1.try_wait()? {
            bail!(
                "ZooKeeper exited ({status}); the last lines of {}:\n{}",
                started.2.display(),
                last_lines(&started.2, 20)
            );
        }
        if std::time::Instant::now() > deadline {
            bail!(
                "ZooKeeper did not answer on {address} within 60 s; the last lines of {}:\n{}",
                started.2.display(),
                last_lines(&started.2, 20)
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!(
        "==> started ZooKeeper on {address} (pid {}), for the operators that reach an \
         ensemble themselves",
        started.1.id()
    );
    Ok((address, started))
}

/// Sends a ZooKeeper four-letter word and returns the answer.
fn four_letter_word(address: SocketAddr, word: &str) -> std::io::Result<String> {
    use std::io::{Read, Write};
    let timeout = Duration::from_secs(2);
    let mut stream = std::net::TcpStream::connect_timeout(&address, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.write_all(word.as_bytes())?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer)
}

/// The children of `path` in the ensemble at `address`, by the ZooKeeper CLI.
fn zookeeper_children(tools: &Tools, address: SocketAddr, path: &str) -> anyhow::Result<String> {
    let cli = tools.zookeeper_home.join("bin").join("zkCli.sh");
    output(
        Command::new(&cli).args(["-server", &address.to_string(), "ls", path]),
        "zkCli.sh",
        &["ls", path],
    )
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

/// Applies each operator's example and shows it Available; makes its pods fail
/// (through `podOverrides` and [`SIMULATED_FAILURE_ANNOTATION`]) and shows Degraded;
/// heals it and shows Available again; stops it and shows Stopped.
async fn demo(
    workspace: &Path,
    tools: &Tools,
    kubectl: &Kubectl,
    operators: &[Operator],
    children: &mut Children,
    zookeeper: Option<SocketAddr>,
) -> anyhow::Result<()> {
    for operator in operators {
        let example = workspace.join(operator.example);
        let target = first_resource(&example)?;
        let prerequisite = operator
            .sandbox_prerequisite
            .map(|path| workspace.join(path).to_string_lossy().into_owned());
        if let (Some(path), Some(prerequisite)) = (operator.sandbox_prerequisite, &prerequisite) {
            eprintln!(
                "==> kubectl apply --server-side -f {path} (what another operator would publish)"
            );
            kubectl.run(&["apply", "--server-side", "-f", prerequisite])?;
        }
        eprintln!("==> kubectl apply --server-side -f {}", operator.example);
        kubectl.run(&["apply", "--server-side", "-f", &example.to_string_lossy()])?;
        show(kubectl, &target, "Available=True", children)?;
        if let (Some(step), Some(address)) = (operator.sandbox_zookeeper, zookeeper) {
            znode_step(workspace, tools, kubectl, children, step, address)?;
        }

        let failing = json!({"metadata": {"annotations": {SIMULATED_FAILURE_ANNOTATION: "CrashLoopBackOff"}}});
        eprintln!(
            "==> simulated CrashLoopBackOff through spec.{}.podOverrides",
            target.role
        );
        target.patch_role(kubectl, &failing)?;
        show(kubectl, &target, "Degraded=True", children)?;
        describe_shows_degraded_event(kubectl, &target)?;
        eprintln!("==> podOverrides removed");
        target.patch_role(kubectl, &Value::Null)?;
        show(kubectl, &target, "Available=True", children)?;
        let claims = volume_claims(kubectl, &target)?;

        eprintln!(
            "==> kubectl annotate {} operator-command=Stopped",
            target.resource
        );
        kubectl.run(&[
            "annotate",
            "--namespace",
            &target.namespace,
            &target.resource,
            "operator-command=Stopped",
        ])?;
        show(kubectl, &target, "Stopped=True", children)?;
        let cluster = target
            .resource
            .split_once('/')
            .map_or(target.resource.as_str(), |(_, name)| name);
        let replicas = kubectl.run(&[
            "get",
            "--namespace",
            &target.namespace,
            "statefulsets",
            "--selector",
            &format!("app.kubernetes.io/instance={cluster}"),
            "-o",
            "jsonpath={.items[*].spec.replicas}",
        ])?;
        if replicas.split_whitespace().any(|count| count != "0") {
            bail!(
                "{} is stopped, but its StatefulSets have replicas {replicas:?}",
                target.resource
            );
        }
        let kept = volume_claims(kubectl, &target)?;
        if let Some(lost) = claims.iter().find(|claim| !kept.contains(claim)) {
            bail!(
                "{} is stopped, and its volume claim {lost} is gone",
                target.resource
            );
        }
        eprintln!(
            "==> stopped: every StatefulSet at 0 replicas ({}), its {} volume claims stay; \
             kubectl annotate {} operator-command-",
            replicas.trim(),
            kept.len(),
            target.resource
        );
        kubectl.run(&[
            "annotate",
            "--namespace",
            &target.namespace,
            &target.resource,
            "operator-command-",
        ])?;
        show(kubectl, &target, "Available=True", children)?;

        eprintln!("==> kubectl delete {}", target.resource);
        kubectl.run(&[
            "delete",
            "--namespace",
            &target.namespace,
            &target.resource,
            "--wait=true",
        ])?;
        if let Some(prerequisite) = &prerequisite {
            kubectl.run(&["delete", "-f", prerequisite, "--wait=true"])?;
        }
        // Like a cluster's garbage collector, the sandbox's removes the children
        // in the background (a reconcile that was running when the owner went may
        // apply one more child), so the demo waits for it as a user would.
        let mut waited = Duration::ZERO;
        let objects = loop {
            let left = kubectl.run(&[
                "get",
                "--namespace",
                &target.namespace,
                "statefulsets,configmaps,services,persistentvolumeclaims",
                "-o",
                "name",
            ])?;
            let objects: Vec<String> = left.lines().map(str::to_owned).collect();
            let children_left = objects
                .iter()
                .any(|object| !object.starts_with("persistentvolumeclaim/"));
            if !children_left {
                println!("{left}");
                break objects;
            }
            if waited >= GARBAGE_COLLECTION_TIMEOUT {
                bail!(
                    "children of {} outlived it by {} s: {objects:?}",
                    target.resource,
                    waited.as_secs()
                );
            }
            tokio::time::sleep(DATA_PLANE_PERIOD).await;
            waited += DATA_PLANE_PERIOD;
        };
        if objects.is_empty() {
            bail!("the volumes of {} went away with it", target.resource);
        }
        eprintln!(
            "==> its children were garbage-collected; its {} volume claims stay",
            objects.len()
        );
    }
    eprintln!("==> the demo finished");
    Ok(())
}

/// Applies the sub-resource of `step`, waits for it to be Available, checks that its
/// discovery ConfigMap holds the published keys and that its path exists in the real
/// ensemble; then deletes it and checks that the finalizer removed the path.
fn znode_step(
    workspace: &Path,
    tools: &Tools,
    kubectl: &Kubectl,
    children: &mut Children,
    step: operators::SandboxZookeeper,
    address: SocketAddr,
) -> anyhow::Result<()> {
    let manifest = workspace.join(step.manifest);
    let text = fs::read_to_string(&manifest)?;
    let documents = strata_testing::yaml::documents(&text)
        .map_err(|error| anyhow::anyhow!("{}: {error}", manifest.display()))?;
    let document = documents
        .first()
        .with_context(|| format!("{} has no document", manifest.display()))?;
    let name = document["metadata"]["name"].as_str().unwrap_or_default();
    let namespace = document["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default");
    let resource = format!(
        "{}/{name}",
        document["kind"].as_str().unwrap_or_default().to_lowercase()
    );
    let target = DemoTarget {
        resource: resource.clone(),
        namespace: namespace.to_owned(),
        role: String::new(),
    };
    eprintln!(
        "==> kubectl apply --server-side -f {} (the ensemble is a real ZooKeeper on {address})",
        step.manifest
    );
    kubectl.run(&["apply", "--server-side", "-f", &manifest.to_string_lossy()])?;
    show(kubectl, &target, "Available=True", children)?;
    let published: Value = serde_json::from_str(&kubectl.run(&[
        "get",
        "--namespace",
        namespace,
        "configmap",
        name,
        "-o",
        "json",
    ])?)?;
    let data = &published["data"];
    println!("configmap/{name}: {data}");
    let missing: Vec<&str> = step
        .published_keys
        .iter()
        .copied()
        .filter(|key| data.get(key).is_none())
        .collect();
    if !missing.is_empty() {
        bail!("the discovery ConfigMap {name} lacks {missing:?}: {data}");
    }
    let path = data[step.path_key].as_str().unwrap_or_default();
    let node = path.trim_start_matches('/');
    let root = zookeeper_children(tools, address, "/")?;
    if node.is_empty() || !root.contains(node) {
        bail!("the path {path:?} of {resource} is not in the ensemble: {root}");
    }
    eprintln!("==> the path {path} exists in the real ZooKeeper");
    eprintln!("==> kubectl delete {resource}");
    kubectl.run(&["delete", "--namespace", namespace, &resource, "--wait=true"])?;
    let root = zookeeper_children(tools, address, "/")?;
    if root.contains(node) {
        bail!("the finalizer of {resource} left {path} in the ensemble: {root}");
    }
    eprintln!("==> its finalizer removed {path} from the real ZooKeeper");
    Ok(())
}

/// The volume claims of the demo's cluster: `<template>-<cluster>-<role>-<group>-<n>`.
fn volume_claims(kubectl: &Kubectl, target: &DemoTarget) -> anyhow::Result<Vec<String>> {
    let cluster = target
        .resource
        .split_once('/')
        .map_or(target.resource.as_str(), |(_, name)| name);
    let marker = format!("-{cluster}-");
    Ok(kubectl
        .run(&[
            "get",
            "--namespace",
            &target.namespace,
            "persistentvolumeclaims",
            "-o",
            "name",
        ])?
        .lines()
        .filter(|claim| claim.contains(&marker))
        .map(str::to_owned)
        .collect())
}

/// `kubectl describe` of a Degraded resource lists a Warning Event with the Degraded
/// condition's reason, as the operator published it.
fn describe_shows_degraded_event(kubectl: &Kubectl, target: &DemoTarget) -> anyhow::Result<()> {
    let reason = kubectl.run(&[
        "get",
        "--namespace",
        &target.namespace,
        &target.resource,
        "-o",
        "jsonpath={.status.conditions[?(@.type==\"Degraded\")].reason}",
    ])?;
    let described = kubectl.run(&[
        "describe",
        "--namespace",
        &target.namespace,
        &target.resource,
    ])?;
    let events = described
        .split_once("Events:")
        .map(|(_, events)| events)
        .unwrap_or_default();
    let line = events
        .lines()
        .find(|line| line.contains("Warning") && line.contains(reason.trim()));
    match line {
        Some(line) => {
            eprintln!("==> kubectl describe {} lists the Event:", target.resource);
            println!("{}", line.trim());
            Ok(())
        }
        None => bail!(
            "kubectl describe {} shows no Warning Event {reason:?}:\n{described}",
            target.resource
        ),
    }
}

/// `user verb group/resource name`, as the refusal report names a request.
fn describe_request(request: &strata_test_apiserver::RequestRecord) -> String {
    format!(
        "{} {} {}/{} {}",
        request.user.as_deref().unwrap_or_default(),
        request.verb,
        request.group,
        request.resource,
        request.name.as_deref().unwrap_or_default()
    )
}

/// The RBAC enforcement proves itself: `patch` on core ConfigMaps is revoked from
/// `operator`'s ClusterRole, its example is applied, and the sandbox must name the
/// refused request; then the role is restored and the example deleted. Returns the
/// indices of the refusals this step provoked (that user's `patch` on ConfigMaps),
/// which the final check does not count; any other refusal still fails the sandbox.
async fn revoked_verb_is_named(
    workspace: &Path,
    dir: &Path,
    kubectl: &Kubectl,
    server: &TestApiServer,
    operator: &Operator,
    children: &mut Children,
) -> anyhow::Result<Vec<usize>> {
    let role_file = |name: &str, role: &Value| -> anyhow::Result<PathBuf> {
        let path = dir.join(name);
        fs::write(&path, serde_json::to_string_pretty(role)?)?;
        Ok(path)
    };
    let mut original: Value = serde_json::from_str(&kubectl.run(&[
        "get",
        "clusterrole",
        operator.name,
        "-o",
        "json",
    ])?)?;
    if let Some(metadata) = original["metadata"].as_object_mut() {
        for field in [
            "resourceVersion",
            "managedFields",
            "uid",
            "creationTimestamp",
        ] {
            metadata.remove(field);
        }
    }
    let revoked = without_configmap_patch(&original);
    let revoked_file = role_file("revoked-clusterrole.json", &revoked)?;
    let original_file = role_file("original-clusterrole.json", &original)?;
    eprintln!(
        "==> kubectl replace clusterrole/{}: patch on ConfigMaps revoked",
        operator.name
    );
    kubectl.run(&["replace", "-f", &revoked_file.to_string_lossy()])?;
    let start = server.denied().len();
    let example = workspace.join(operator.example);
    let target = first_resource(&example)?;
    let user = format!(
        "system:serviceaccount:{OPERATOR_NAMESPACE}:{}",
        operator.name
    );
    let provoked = |request: &strata_test_apiserver::RequestRecord| {
        request.user.as_deref() == Some(user.as_str())
            && request.verb.to_string() == "patch"
            && request.group.is_empty()
            && request.resource == "configmaps"
    };
    let named = async {
        kubectl.run(&["apply", "--server-side", "-f", &example.to_string_lossy()])?;
        let mut waited = Duration::ZERO;
        loop {
            children.check()?;
            if let Some(request) = server.denied().iter().skip(start).find(|r| provoked(r)) {
                return anyhow::Ok(describe_request(request));
            }
            if waited >= Duration::from_secs(30) {
                bail!(
                    "with patch on ConfigMaps revoked, no refused request of {} was named in \
                     30 s",
                    operator.name
                );
            }
            tokio::time::sleep(DATA_PLANE_PERIOD).await;
            waited += DATA_PLANE_PERIOD;
        }
    }
    .await;
    // The role comes back whatever happened, so the other checks see the chart's own.
    kubectl.run(&["replace", "-f", &original_file.to_string_lossy()])?;
    eprintln!("==> the sandbox names the refused request: {}", named?);
    kubectl.run(&[
        "delete",
        "--namespace",
        &target.namespace,
        &target.resource,
        "--wait=true",
    ])?;
    eprintln!(
        "==> clusterrole/{} restored and {} deleted",
        operator.name, target.resource
    );
    Ok(server
        .denied()
        .iter()
        .enumerate()
        .skip(start)
        .filter(|(_, request)| provoked(request))
        .map(|(index, _)| index)
        .collect())
}

/// `role` with `patch` on core ConfigMaps removed (server-side apply, which creates
/// and updates them, is a PATCH); the other resources of the rule keep their verbs.
fn without_configmap_patch(role: &Value) -> Value {
    let mut role = role.clone();
    let rules = role["rules"].as_array().cloned().unwrap_or_default();
    let mut changed = Vec::new();
    for rule in rules {
        let core = rule["apiGroups"]
            .as_array()
            .is_some_and(|groups| groups.iter().any(|group| group == ""));
        let resources = rule["resources"].as_array().cloned().unwrap_or_default();
        if !core || !resources.iter().any(|resource| resource == "configmaps") {
            changed.push(rule);
            continue;
        }
        let others: Vec<Value> = resources
            .into_iter()
            .filter(|resource| resource != "configmaps")
            .collect();
        if !others.is_empty() {
            let mut rest = rule.clone();
            rest["resources"] = Value::Array(others);
            changed.push(rest);
        }
        let mut configmaps = rule.clone();
        configmaps["resources"] = json!(["configmaps"]);
        configmaps["verbs"] = Value::Array(
            rule["verbs"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|verb| *verb != "patch" && *verb != "*")
                .cloned()
                .collect(),
        );
        changed.push(configmaps);
    }
    role["rules"] = Value::Array(changed);
    role
}

/// Waits for `condition` (`Type=Status`) and prints `kubectl get` and the conditions.
fn show(
    kubectl: &Kubectl,
    target: &DemoTarget,
    condition: &str,
    children: &mut Children,
) -> anyhow::Result<()> {
    eprintln!(
        "==> kubectl wait {} --for=condition={condition}",
        target.resource
    );
    let waited = kubectl.run(&[
        "wait",
        "--namespace",
        &target.namespace,
        &target.resource,
        &format!("--for=condition={condition}"),
        &format!("--timeout={DEMO_TIMEOUT}"),
    ]);
    children.check()?;
    waited?;
    println!(
        "{}",
        kubectl.run(&["get", "--namespace", &target.namespace, &target.resource])?
    );
    let conditions = kubectl.run(&[
        "get",
        "--namespace",
        &target.namespace,
        &target.resource,
        "-o",
        "jsonpath={range .status.conditions[*]}{.type}={.status} ({.reason}): {.message}{\"\\n\"}{end}",
    ])?;
    println!("{conditions}");
    Ok(())
}

/// The object a demo drives: `<kind>/<name>`, its namespace and its first role.
struct DemoTarget {
    resource: String,
    namespace: String,
    role: String,
}

impl DemoTarget {
    /// Sets (or with `null`, removes) the role's `podOverrides` with a merge patch.
    fn patch_role(&self, kubectl: &Kubectl, pod_overrides: &Value) -> anyhow::Result<()> {
        let patch = json!({"spec": {self.role.as_str(): {"podOverrides": pod_overrides}}});
        kubectl.run(&[
            "patch",
            "--namespace",
            &self.namespace,
            &self.resource,
            "--type",
            "merge",
            "-p",
            &patch.to_string(),
        ])?;
        Ok(())
    }
}

/// The first document of an example: `<kind>/<name>`, its namespace, and the first
/// `spec` field that holds `roleGroups` (its first role).
fn first_resource(example: &Path) -> anyhow::Result<DemoTarget> {
    let text = fs::read_to_string(example)?;
    let documents = strata_testing::yaml::documents(&text)
        .map_err(|error| anyhow::anyhow!("{}: {error}", example.display()))?;
    let first = documents
        .first()
        .with_context(|| format!("{} has no document", example.display()))?;
    let kind = first["kind"].as_str().unwrap_or_default().to_lowercase();
    let name = first["metadata"]["name"].as_str().unwrap_or_default();
    let role = first["spec"]
        .as_object()
        .and_then(|spec| {
            spec.iter()
                .find(|(_, value)| value.get("roleGroups").is_some())
                .map(|(key, _)| key.clone())
        })
        .with_context(|| format!("{} has no role with roleGroups", example.display()))?;
    Ok(DemoTarget {
        resource: format!("{kind}/{name}"),
        namespace: first["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default")
            .to_owned(),
        role,
    })
}

/// The provisioned kubectl and helm, pointed at the sandbox.
struct Kubectl {
    binary: PathBuf,
    helm: PathBuf,
    kubeconfig: PathBuf,
    home: PathBuf,
}

impl Kubectl {
    fn run(&self, args: &[&str]) -> anyhow::Result<String> {
        output(
            Command::new(&self.binary)
                .arg("--kubeconfig")
                .arg(&self.kubeconfig)
                .args(args),
            "kubectl",
            args,
        )
    }

    fn helm(&self, args: &[&str]) -> anyhow::Result<String> {
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
        )
    }
}

fn output(command: &mut Command, program: &str, args: &[&str]) -> anyhow::Result<String> {
    let output = command
        .output()
        .with_context(|| format!("starting {program}"))?;
    if !output.status.success() {
        bail!(
            "{program} {args:?} failed ({}): {}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revoking_patch_on_configmaps_keeps_every_other_grant() {
        let role = json!({"rules": [
            {"apiGroups": [""], "resources": ["configmaps", "services"],
             "verbs": ["get", "list", "watch", "create", "patch", "delete"]},
            {"apiGroups": ["apps"], "resources": ["statefulsets"], "verbs": ["create"]}
        ]});
        let revoked = without_configmap_patch(&role);
        assert_eq!(
            revoked["rules"],
            json!([
                {"apiGroups": [""], "resources": ["services"],
                 "verbs": ["get", "list", "watch", "create", "patch", "delete"]},
                {"apiGroups": [""], "resources": ["configmaps"],
                 "verbs": ["get", "list", "watch", "create", "delete"]},
                {"apiGroups": ["apps"], "resources": ["statefulsets"], "verbs": ["create"]}
            ])
        );
    }
}
