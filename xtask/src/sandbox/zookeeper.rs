//! The real ZooKeeper the sandbox runs for operators that reach an ensemble themselves, and the demo step that checks a ZNode's path in it.

use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::Value;

use super::children::{Children, last_lines, log_file};
use super::demo::{DemoTarget, show};
use super::kubectl::{Kubectl, output};
use crate::operators;
use crate::tools::Tools;
use strata_testing::process::Stop;

/// Starts a standalone ZooKeeper (the jars of the 3.9.5 image directory) on a free loopback port,
/// with its data and log under `dir/zookeeper`, and waits until it answers `ruok`.
pub(super) fn start_zookeeper(
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

/// The children of `path` in the ensemble at `address`, by the ZooKeeper CLI
/// (`ZooKeeperMain`, which `zkCli.sh` runs): its `[a, b]` line, without the client's
/// log lines.
pub(super) fn zookeeper_children(
    tools: &Tools,
    address: SocketAddr,
    path: &str,
) -> anyhow::Result<String> {
    let printed = output(
        Command::new(&tools.java)
            .args(["-Xmx64m", "-cp", &tools.zookeeper_classpath])
            .arg("org.apache.zookeeper.ZooKeeperMain")
            .args(["-server", &address.to_string(), "ls", path]),
        "the ZooKeeper CLI",
        &["ls", path],
        Stop::Group,
    )?;
    printed
        .lines()
        .rev()
        .find(|line| line.starts_with('['))
        .map(str::to_owned)
        .with_context(|| format!("the ZooKeeper CLI printed no children of {path}: {printed}"))
}

/// Applies the sub-resource of `step`, waits for it to be Available, checks that its
/// discovery ConfigMap holds the published keys and that its path exists in the real
/// ensemble; then deletes it and checks that the finalizer removed the path.
pub(super) fn znode_step(
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
