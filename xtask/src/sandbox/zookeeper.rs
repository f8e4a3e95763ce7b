//! The ZooKeeper example on the runner's node, for real: its leader, a ZNode's path in
//! it, and an ensemble grown 1 → 3 that keeps what was written before each step.

use std::fs;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::POLL_PERIOD;
use super::demo::{DemoTarget, on_runner_documents, show};
use super::kubectl::Kubectl;
use super::operator_pods::OperatorPods;
use super::zookeeper_access::Ensemble;
use crate::operators;
use crate::tools::SandboxTools;

/// The ensemble the growth step creates, and its one role group's StatefulSet.
const GROWING: &str = "growing-zk";
/// How long one growth step may take: each adds a server and restarts the others.
const GROWTH_STEP_TIMEOUT: Duration = Duration::from_secs(300);
/// Where the growth step writes its znodes.
const GROWTH_PATH: &str = "/strata-demo";

/// The example's ensemble on the runner: one leader among its servers, then the ZNode
/// step against it, then an ensemble grown 1 → 3.
pub(super) async fn real_ensemble(
    workspace: &Path,
    tools: &SandboxTools,
    kubectl: &Kubectl,
    pods: &OperatorPods<'_>,
    target: &DemoTarget,
    step: operators::SandboxZookeeper,
) -> anyhow::Result<()> {
    let servers = server_pods(kubectl, target)?;
    let name = target.resource.rsplit('/').next().unwrap_or_default();
    let ensemble = Ensemble::read(kubectl, &target.namespace, name)?;
    let mut modes = Vec::new();
    for pod in &servers {
        let answer = ensemble.four_letter_word(pods, pod, "srvr")?;
        let mode = answer
            .lines()
            .find_map(|line| line.strip_prefix("Mode: "))
            .unwrap_or("unknown")
            .to_owned();
        println!("{pod}: {mode}");
        modes.push(mode);
    }
    let leaders = modes.iter().filter(|mode| *mode == "leader").count();
    if leaders != 1
        || modes
            .iter()
            .any(|mode| mode != "leader" && mode != "follower")
    {
        bail!("the ensemble {servers:?} does not have one leader and followers: {modes:?}");
    }
    eprintln!(
        "==> the {} real ZooKeeper servers elected one leader{}",
        servers.len(),
        if ensemble.tls() {
            " (asked over TLS, each server's name checked against the CA of the discovery ConfigMap)"
        } else {
            ""
        }
    );
    let first = servers.first().context("the ensemble has no server")?;
    znode_step(workspace, tools, kubectl, pods, step, &ensemble, first)?;
    grow_one_to_three(tools, kubectl, pods, target).await
}

/// A second ensemble, created with one server and grown to three a server at a time:
/// a znode written before each step is read after it, through the first server.
async fn grow_one_to_three(
    tools: &SandboxTools,
    kubectl: &Kubectl,
    pods: &OperatorPods<'_>,
    target: &DemoTarget,
) -> anyhow::Result<()> {
    let mut cluster: Value =
        serde_json::from_str(&target.kubectl(kubectl, "get", &["-o", "json"])?)?;
    let spec = cluster["spec"].take();
    let mut document = json!({
        "apiVersion": cluster["apiVersion"].take(),
        "kind": cluster["kind"].take(),
        "metadata": {"name": GROWING, "namespace": target.namespace},
        "spec": spec,
    });
    document["spec"][target.role.as_str()]["roleGroups"]["default"]["replicas"] = 1.into();
    let growing = DemoTarget {
        resource: format!(
            "{}/{GROWING}",
            target.resource.split('/').next().unwrap_or_default()
        ),
        namespace: target.namespace.clone(),
        role: target.role.clone(),
        timeout: target.timeout,
    };
    let file = on_runner_documents(&[document], &kubectl.home, "growing-zk.yaml")?;
    eprintln!(
        "==> kubectl apply --server-side -f growing-zk.yaml (one server, on the runner's node)"
    );
    kubectl.run(&["apply", "--server-side", "-f", &file.to_string_lossy()])?;
    show(kubectl, &growing, "Available=True", pods)?;
    let ensemble = Ensemble::read(kubectl, &target.namespace, GROWING)?;
    let first_pod = format!("{GROWING}-{}-default-0", role_name(&target.role));
    let mut written = Vec::new();
    for servers in 2..=3 {
        let znode = format!("{GROWTH_PATH}/before-{servers}-servers");
        if written.is_empty() {
            let _ = ensemble.cli(tools, pods, &first_pod, &["create", GROWTH_PATH, "demo"]);
        }
        ensemble.cli(
            tools,
            pods,
            &first_pod,
            &[
                "create",
                &znode,
                &format!("written with {} server(s)", servers - 1),
            ],
        )?;
        written.push(znode);
        eprintln!(
            "==> kubectl patch {} (replicas {servers}), after writing {}",
            growing.resource,
            written.last().map(String::as_str).unwrap_or_default()
        );
        growing.patch_role_group_replicas(kubectl, servers)?;
        let started = Instant::now();
        wait_settled(kubectl, &growing, servers).await?;
        println!("{}", growing.kubectl(kubectl, "get", &[])?);
        let children = ensemble.children(tools, pods, &first_pod, GROWTH_PATH)?;
        let missing: Vec<&String> = written
            .iter()
            .filter(|znode| {
                !children.contains(znode.trim_start_matches(&format!("{GROWTH_PATH}/")))
            })
            .collect();
        if !missing.is_empty() {
            bail!(
                "after growing to {servers} servers, {missing:?} are gone: {GROWTH_PATH} holds {children}"
            );
        }
        eprintln!(
            "==> {servers} servers in {:.0} s, every one Ready; {GROWTH_PATH} still holds {children}",
            started.elapsed().as_secs_f64()
        );
    }
    eprintln!("==> kubectl delete {}", growing.resource);
    growing.kubectl(kubectl, "delete", &["--wait=true"])?;
    Ok(())
}

/// Waits until the cluster has seen its latest spec, is Available and not
/// Progressing, and `servers` of its pods are Ready.
async fn wait_settled(
    kubectl: &Kubectl,
    target: &DemoTarget,
    servers: usize,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + GROWTH_STEP_TIMEOUT;
    loop {
        let cluster: Value =
            serde_json::from_str(&target.kubectl(kubectl, "get", &["-o", "json"])?)?;
        let generation = &cluster["metadata"]["generation"];
        let conditions = cluster["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let status_of = |kind: &str| {
            conditions
                .iter()
                .find(|condition| {
                    condition["type"] == kind && condition["observedGeneration"] == *generation
                })
                .and_then(|condition| condition["status"].as_str().map(str::to_owned))
        };
        let ready = target.children(
            kubectl,
            "pods",
            "jsonpath={range .items[*]}{.status.conditions[?(@.type==\"Ready\")].status}{\"\\n\"}{end}",
        )?;
        let ready = ready.lines().filter(|status| *status == "True").count();
        if status_of("Available").as_deref() == Some("True")
            && status_of("Progressing").as_deref() == Some("False")
            && ready == servers
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "{} did not settle at {servers} servers within {} s: {ready} pods Ready, conditions {}",
                target.resource,
                GROWTH_STEP_TIMEOUT.as_secs(),
                Value::Array(conditions)
            );
        }
        tokio::time::sleep(POLL_PERIOD).await;
    }
}

/// `servers` → `server`: the role's name in object names.
fn role_name(role: &str) -> &str {
    role.strip_suffix('s').unwrap_or(role)
}

/// The names of the cluster's pods, sorted.
fn server_pods(kubectl: &Kubectl, target: &DemoTarget) -> anyhow::Result<Vec<String>> {
    let names = target.children(kubectl, "pods", "jsonpath={.items[*].metadata.name}")?;
    let mut names: Vec<String> = names.split_whitespace().map(str::to_owned).collect();
    names.sort();
    Ok(names)
}

/// Sends a ZooKeeper four-letter word and returns the answer.
pub(super) fn four_letter_word(address: SocketAddr, word: &str) -> std::io::Result<String> {
    use std::io::{Read, Write};
    let timeout = Duration::from_secs(2);
    let mut stream = std::net::TcpStream::connect_timeout(&address, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.write_all(word.as_bytes())?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer)
}

/// Applies the sub-resource of `step`, waits for it to be Available, checks that its
/// discovery ConfigMap holds the published keys and that its path exists in the real
/// ensemble; then deletes it and checks that the finalizer removed the path.
fn znode_step(
    workspace: &Path,
    tools: &SandboxTools,
    kubectl: &Kubectl,
    pods: &OperatorPods<'_>,
    step: operators::SandboxZookeeper,
    ensemble: &Ensemble,
    server: &str,
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
        timeout: super::DEMO_TIMEOUT,
    };
    eprintln!(
        "==> kubectl apply --server-side -f {} (the operator reaches the real ensemble in-cluster; the demo reads it through {server})",
        step.manifest
    );
    kubectl.run(&["apply", "--server-side", "-f", &manifest.to_string_lossy()])?;
    show(kubectl, &target, "Available=True", pods)?;
    let data = &kubectl.config_map_data(namespace, name)?;
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
    let root = ensemble.children(tools, pods, server, "/")?;
    if node.is_empty() || !root.contains(node) {
        bail!("the path {path:?} of {resource} is not in the ensemble: {root}");
    }
    eprintln!("==> the path {path} exists in the real ZooKeeper");
    eprintln!("==> kubectl delete {resource}");
    kubectl.run(&["delete", "--namespace", namespace, &resource, "--wait=true"])?;
    let root = ensemble.children(tools, pods, server, "/")?;
    if root.contains(node) {
        bail!("the finalizer of {resource} left {path} in the ensemble: {root}");
    }
    eprintln!("==> its finalizer removed {path} from the real ZooKeeper");
    Ok(())
}
