//! `cargo xtask run -f FILE`: the real products from a manifest, with no cluster.
//!
//! It renders the custom resources in FILE with their operators (every registered
//! operator renders the documents of its kinds), plays the operators' part for what
//! they would only create at run time, runs every pod with the pod runner until Ctrl-C,
//! and forwards each container port to a loopback port of the host. Each line on stdout
//! is one of:
//!
//! - `forward <pod> <container port> 127.0.0.1:<host port>`, once per port;
//! - `ready <pod>`, when a pod turns Ready;
//! - `znode <pod> <path>`, once a ZNode's path is created through that server;
//! - `ignored <kind>/<name>`, for a rendered object no node has a part in;
//!
//! so a user can try the product, and a script can drive it.
//!
//! What it plays of the operators:
//! - every custom resource gets a uid, as the API server would give it, so a ZNode's
//!   discovery ConfigMap renders with its path;
//! - a ZNode's path is created in its ZooKeeper with the ZooKeeper operator's own client,
//!   once the ensemble is Ready;
//! - the HDFS operator's offline placeholder for the ZooKeeper quorum
//!   (`ZOOKEEPER-of-configmap-<name>:2181`) is replaced by the `ZOOKEEPER` value of that
//!   ConfigMap, as the operator reads it at run time;
//! - the Secrets `render` shows without values get them (`run/secrets.rs`): ZooKeeper's
//!   certificates, with the CA in its discovery ConfigMaps, and HDFS's ZKFC keystore.
//!
//! Images come from `cargo xtask tools`; a pod whose image has no local directory is
//! refused with its name. Needs root (network namespaces and mounts).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::Value;
use strata_pod_runner::image::Images;
use strata_pod_runner::manifest::{Applied, apply_all};
use strata_pod_runner::runner::{PodRunner, RunnerOptions};
use tokio::signal::unix::{SignalKind, signal};

use crate::operators::registered;
use crate::tools;

mod secrets;

/// The ZNode kind, whose path the ZooKeeper operator creates at run time.
const ZNODE_KIND: &str = "ZookeeperZnode";

/// Runs the manifest at `file` until Ctrl-C.
pub fn run(workspace: &Path, file: &Path) -> anyhow::Result<()> {
    let _built = crate::build::binaries(workspace, &[], true)?;
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let mut documents = strata_operator::render::parse_documents(&text)
        .with_context(|| format!("{} is not a manifest", file.display()))?;
    give_uids(&mut documents);
    let mut objects = Vec::new();
    for operator in registered() {
        let rendered = (operator.render)(&documents)
            .with_context(|| format!("{} cannot render {}", operator.name, file.display()))?;
        objects.extend(rendered.objects);
    }
    if objects.is_empty() {
        bail!(
            "{} holds no custom resource of a registered operator",
            file.display()
        );
    }
    resolve_zookeeper_placeholders(&mut objects);
    secrets::fill_secrets(&documents, &mut objects)?;
    let mut images = Images::default();
    for dir in image_directories(workspace, &documents)? {
        images
            .add(&dir)
            .with_context(|| format!("cannot use the image directory {}", dir.display()))?;
    }
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(serve(objects, znode_paths(&documents), images))
}

/// The image directories: those `cargo xtask test` exports, else the ones the
/// manifest's pods need, provisioned now (the Superset venv only for a Superset
/// manifest: it is minutes of PyPI downloads a ZooKeeper user should not wait for).
fn image_directories(
    workspace: &Path,
    documents: &[Value],
) -> anyhow::Result<Vec<std::path::PathBuf>> {
    let variables = [
        tools::env::HADOOP_IMAGE,
        tools::env::ZOOKEEPER_IMAGE,
        tools::env::TRINO_IMAGE,
        tools::env::SUPERSET_IMAGE,
        tools::env::STATSD_EXPORTER_IMAGE,
    ];
    let exported: Vec<std::path::PathBuf> = variables
        .into_iter()
        .filter_map(std::env::var_os)
        .map(std::path::PathBuf::from)
        .collect();
    if exported.len() == variables.len() {
        return Ok(exported);
    }
    let tools_dir = workspace.join("target").join("tools");
    std::fs::create_dir_all(&tools_dir)
        .with_context(|| format!("cannot create {}", tools_dir.display()))?;
    tools::step(
        "nftables (Debian package): the pod runner's Service addresses",
        tools::nftables::ensure,
    )?;
    let images = tools::provision_images(workspace, &tools_dir)?;
    let mut directories = vec![
        images.hadoop_image,
        images.zookeeper_image,
        images.trino_image,
    ];
    if needs_superset(documents) {
        let (superset, statsd_exporter) = tools::provision_superset_images(workspace)?;
        directories.extend([superset, statsd_exporter]);
    }
    Ok(directories)
}

/// Whether `documents` hold a Superset cluster, whose pods run the Superset image and
/// the statsd exporter beside it.
fn needs_superset(documents: &[Value]) -> bool {
    documents
        .iter()
        .any(|document| document["kind"] == "SupersetCluster")
}

/// Every custom resource gets a uid, derived from its kind and name so a second run
/// of the same manifest names the same ZooKeeper paths.
fn give_uids(documents: &mut [Value]) {
    for document in documents {
        let kind = document["kind"].as_str().unwrap_or_default().to_owned();
        let name = document["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if let Some(metadata) = document["metadata"].as_object_mut() {
            metadata.entry("uid").or_insert_with(|| {
                Value::String(format!("strata-run-{}-{name}", kind.to_lowercase()))
            });
        }
    }
}

/// Replaces the HDFS operator's offline quorum placeholder with the ZNode ConfigMap's
/// `ZOOKEEPER` value.
fn resolve_zookeeper_placeholders(objects: &mut [Value]) {
    let quorums: BTreeMap<String, String> = objects
        .iter()
        .filter(|object| object["kind"] == "ConfigMap")
        .filter_map(|object| {
            Some((
                object["metadata"]["name"].as_str()?.to_owned(),
                object["data"]["ZOOKEEPER"].as_str()?.to_owned(),
            ))
        })
        .collect();
    for object in objects
        .iter_mut()
        .filter(|object| object["kind"] == "ConfigMap")
    {
        let Some(data) = object["data"].as_object_mut() else {
            continue;
        };
        for value in data.values_mut() {
            if let Some(text) = value.as_str() {
                let mut replaced = text.to_owned();
                for (name, quorum) in &quorums {
                    replaced =
                        replaced.replace(&format!("ZOOKEEPER-of-configmap-{name}:2181"), quorum);
                }
                if replaced != text {
                    *value = Value::String(replaced);
                }
            }
        }
    }
}

/// The ZooKeeper cluster and path of each ZNode: `(cluster, /znode-<uid>)`.
fn znode_paths(documents: &[Value]) -> Vec<(String, String)> {
    documents
        .iter()
        .filter(|document| document["kind"] == ZNODE_KIND)
        .filter_map(|document| {
            let cluster = document["spec"]["clusterRef"]["name"].as_str()?.to_owned();
            let uid = document["metadata"]["uid"].as_str()?;
            Some((cluster, format!("/znode-{uid}")))
        })
        .collect()
}

async fn serve(
    objects: Vec<Value>,
    znodes: Vec<(String, String)>,
    images: Images,
) -> anyhow::Result<()> {
    // Listening from the start: a Ctrl-C that lands while a pod turns ready or a ZNode
    // is created is kept for the next wait, where a fresh `ctrl_c()` would miss it.
    let mut interrupts = signal(SignalKind::interrupt()).context("cannot listen for Ctrl-C")?;
    let mut runner = PodRunner::new(RunnerOptions::new(images))?;
    let applied = apply_all(&mut runner, &objects)?;
    let mut pods = Vec::new();
    for outcome in applied {
        match outcome {
            Applied::Started(names) => pods.extend(names),
            Applied::Ignored(what) => println!("ignored {what}"),
            Applied::Served(_) => {}
        }
    }
    let mut forwards = Vec::new();
    for ((namespace, pod), _) in runner.statuses() {
        for port in container_ports(&objects, &pod) {
            let local = runner.forward(&namespace, &pod, port).await?;
            forwards.push(format!("forward {pod} {port} {local}"));
        }
    }
    for line in forwards {
        println!("{line}");
    }
    let mut ready = BTreeSet::new();
    let mut pending_znodes = znodes;
    loop {
        for ((namespace, pod), status) in runner.statuses() {
            if status.ready() && ready.insert(pod.clone()) {
                println!("ready {pod}");
                let (now, later): (Vec<_>, Vec<_>) = pending_znodes
                    .into_iter()
                    .partition(|(cluster, _)| pod.starts_with(&format!("{cluster}-server-")));
                pending_znodes = later;
                let tls = container_ports(&objects, &pod)
                    .contains(&zookeeper_operator::config::tls::SECURE_CLIENT_PORT);
                for (_, path) in now {
                    create_znode(&runner, &namespace, &pod, &path, tls).await?;
                    println!("znode {pod} {path}");
                }
            }
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(500)) => {}
            _ = interrupts.recv() => break,
        }
    }
    runner.shutdown().await;
    Ok(())
}

/// The container ports of `pod` as its StatefulSet or Pod renders them.
fn container_ports(objects: &[Value], pod: &str) -> Vec<u16> {
    let spec = objects.iter().find_map(|object| {
        let name = object["metadata"]["name"].as_str()?;
        match object["kind"].as_str()? {
            "StatefulSet"
                if pod
                    .strip_prefix(name)
                    .and_then(|rest| rest.strip_prefix('-'))
                    .is_some_and(|ordinal| ordinal.parse::<u32>().is_ok()) =>
            {
                Some(object["spec"]["template"]["spec"].clone())
            }
            "Pod" if name == pod => Some(object["spec"].clone()),
            _ => None,
        }
    });
    spec.iter()
        .flat_map(|spec| spec["containers"].as_array().cloned().unwrap_or_default())
        .flat_map(|container| container["ports"].as_array().cloned().unwrap_or_default())
        .filter_map(|port| u16::try_from(port["containerPort"].as_u64()?).ok())
        .collect()
}

/// Creates a ZNode's path from inside the server pod with ZooKeeper's own Java client:
/// over TLS with the pod's certificate when the pod serves the secure port (there is
/// no plaintext port then), on the plaintext port otherwise. A path that exists
/// already is left as it is.
async fn create_znode(
    runner: &PodRunner,
    namespace: &str,
    pod: &str,
    path: &str,
    tls: bool,
) -> anyhow::Result<()> {
    let fqdn = runner
        .names(namespace, pod)
        .and_then(|names| names.into_iter().next())
        .with_context(|| format!("{pod} has no name"))?;
    let script = zookeeper_operator::build::container::java_client_script(
        tools::zookeeper_image::DISTRIBUTION,
        tls.then_some(fqdn.as_str()),
        &format!("create {path}"),
    );
    let (code, output) = runner
        .exec(
            namespace,
            pod,
            "zookeeper",
            &["bash", "-c", &script],
            Duration::from_secs(60),
        )
        .await?
        .with_context(|| format!("{pod}'s zookeeper container is not running"))?;
    if code == 0 || output.contains("Node already exists") {
        return Ok(());
    }
    bail!("cannot create the ZNode path {path} in {pod}: {output}")
}
