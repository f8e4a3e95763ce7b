//! The HDFS example on the runner's node, for real (Hadoop 3.4.2, with the real
//! ZooKeeper of `xtask/sandbox/hdfs-zookeeper.yaml` for the failover controllers): one
//! namenode active and the other standby, every datanode live, and a file written
//! through WebHDFS to a datanode and read back.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use hdfs_operator::config::topology::NAMENODE_HTTP_PORT;
use serde_json::Value;
use strata_pod_runner::agent::Forwards;
use strata_testing::http::request;

use super::POLL_PERIOD;
use super::demo::DemoTarget;
use super::operator_pods::OperatorPods;

/// The example's namenodes and datanodes.
const NAMENODES: u32 = 2;
const DATANODES: u64 = 3;
/// How long the cluster may take to settle after it is Available: the failover
/// controllers elect the active namenode, the datanodes register with both.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(180);
/// The file the demo writes, and what it holds.
const FILE: &str = "/strata-sandbox.txt";
const CONTENT: &str = "written through WebHDFS to a real datanode in the sandbox\n";

/// Checks the HA states, the live datanodes, then writes and reads [`FILE`].
pub(super) async fn real_cluster(
    pods: &OperatorPods<'_>,
    target: &DemoTarget,
) -> anyhow::Result<()> {
    let forwards = pods.agent.forwards();
    let cluster = target.name().to_owned();
    tokio::task::spawn_blocking(move || check(&forwards, &cluster)).await?
}

fn check(forwards: &Forwards, cluster: &str) -> anyhow::Result<()> {
    let started = Instant::now();
    let namenodes: Vec<String> = (0..NAMENODES)
        .map(|ordinal| format!("{cluster}-namenode-default-{ordinal}"))
        .collect();
    let (active, states) = settle("one active and one standby namenode", || {
        let states = namenodes
            .iter()
            .map(|pod| ha_state(forwards, pod).map(|state| (pod.clone(), state)))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let active: Vec<&String> = states
            .iter()
            .filter(|(_, state)| state == "active")
            .map(|(pod, _)| pod)
            .collect();
        let standby = states
            .iter()
            .filter(|(_, state)| state == "standby")
            .count();
        match (active.as_slice(), standby) {
            ([active], 1) => Ok(((*active).clone(), states.clone())),
            _ => bail!("namenode states {states:?}"),
        }
    })?;
    for (pod, state) in &states {
        println!("{pod}: {state}");
    }
    let live = settle("every datanode live", || {
        let bean = jmx(
            forwards,
            &active,
            "Hadoop:service=NameNode,name=FSNamesystemState",
        )?;
        let live = bean["NumLiveDataNodes"].as_u64().unwrap_or_default();
        if live == DATANODES {
            Ok(live)
        } else {
            bail!("{live} live datanodes on {active}")
        }
    })?;
    println!("{active}: {live} live datanodes");
    eprintln!(
        "==> the real namenodes settled, {active} active, after {:.1} s",
        started.elapsed().as_secs_f64()
    );
    write_and_read(forwards, &active)?;
    println!("{FILE}: {}", CONTENT.trim_end());
    eprintln!("==> a file written through WebHDFS to a real datanode was read back");
    Ok(())
}

/// Calls `attempt` every few poll periods until it succeeds or [`SETTLE_TIMEOUT`] ends.
fn settle<T>(what: &str, mut attempt: impl FnMut() -> anyhow::Result<T>) -> anyhow::Result<T> {
    let started = Instant::now();
    loop {
        match attempt() {
            Ok(value) => return Ok(value),
            Err(error) if started.elapsed() < SETTLE_TIMEOUT => {
                eprintln!("    not yet {what}: {error:#}");
                std::thread::sleep(POLL_PERIOD * 4);
            }
            Err(error) => return Err(error.context(format!("waiting for {what}"))),
        }
    }
}

/// The host's end of the runner's forward to `host:port` (a pod's name, FQDN or
/// address).
fn forwarded(forwards: &Forwards, host: &str, port: u16) -> anyhow::Result<String> {
    forwards
        .read()
        .ok()
        .and_then(|forwards| forwards.get(&format!("{host}:{port}")).copied())
        .map(|address| address.to_string())
        .with_context(|| format!("the runner forwards no port {port} of {host}"))
}

/// The first bean of a JMX query on a namenode's HTTP port.
fn jmx(forwards: &Forwards, namenode: &str, query: &str) -> anyhow::Result<Value> {
    let address = forwarded(forwards, namenode, NAMENODE_HTTP_PORT)?;
    let answer = request(&address, "GET", &format!("/jmx?qry={query}"), &[], None)
        .map_err(anyhow::Error::msg)?;
    let json = answer.json().map_err(anyhow::Error::msg)?;
    Ok(json["beans"][0].clone())
}

/// `active`, `standby` or `initializing`, as the namenode itself reports it.
fn ha_state(forwards: &Forwards, namenode: &str) -> anyhow::Result<String> {
    let bean = jmx(
        forwards,
        namenode,
        "Hadoop:service=NameNode,name=NameNodeStatus",
    )?;
    bean["State"]
        .as_str()
        .map(str::to_owned)
        .with_context(|| format!("{namenode} reports no HA state: {bean}"))
}

/// Writes [`FILE`] and reads it back, as a WebHDFS client does: the namenode names a
/// datanode, which takes or serves the bytes. The user is the owner of `/` (HDFS's
/// superuser, the namenodes' own user), with WebHDFS's simple authentication.
fn write_and_read(forwards: &Forwards, namenode: &str) -> anyhow::Result<()> {
    let address = forwarded(forwards, namenode, NAMENODE_HTTP_PORT)?;
    let root = request(&address, "GET", "/webhdfs/v1/?op=GETFILESTATUS", &[], None)
        .map_err(anyhow::Error::msg)?
        .json()
        .map_err(anyhow::Error::msg)?;
    let user = root["FileStatus"]["owner"]
        .as_str()
        .with_context(|| format!("/ has no owner: {root}"))?
        .to_owned();
    let create =
        format!("/webhdfs/v1{FILE}?op=CREATE&overwrite=true&noredirect=true&user.name={user}");
    let (datanode, path) = datanode_location(forwards, &address, "PUT", &create)?;
    let written = request(
        &datanode,
        "PUT",
        &path,
        &[("Content-Type", "application/octet-stream")],
        Some(CONTENT),
    )
    .map_err(anyhow::Error::msg)?;
    if written.status != 201 {
        bail!(
            "a datanode answered {} to the write: {}",
            written.status,
            written.body
        );
    }
    let open = format!("/webhdfs/v1{FILE}?op=OPEN&noredirect=true&user.name={user}");
    let (datanode, path) = datanode_location(forwards, &address, "GET", &open)?;
    let read = request(&datanode, "GET", &path, &[], None).map_err(anyhow::Error::msg)?;
    if read.status != 200 || read.body != CONTENT {
        bail!("reading {FILE} answered {}: {:?}", read.status, read.body);
    }
    Ok(())
}

/// Asks the namenode at `address` where to go (`noredirect=true`), and returns the
/// forward of that datanode with the path to ask it.
fn datanode_location(
    forwards: &Forwards,
    address: &str,
    method: &str,
    path: &str,
) -> anyhow::Result<(String, String)> {
    let answer = request(address, method, path, &[], None).map_err(anyhow::Error::msg)?;
    let json = answer.json().map_err(anyhow::Error::msg)?;
    let location = json["Location"]
        .as_str()
        .with_context(|| format!("{method} {path} named no datanode: {json}"))?;
    let rest = location
        .strip_prefix("http://")
        .with_context(|| format!("a datanode location that is not http: {location}"))?;
    let (authority, datanode_path) = rest
        .find('/')
        .map(|slash| (&rest[..slash], &rest[slash..]))
        .with_context(|| format!("a datanode location without a path: {location}"))?;
    let (host, port) = authority
        .rsplit_once(':')
        .and_then(|(host, port)| Some((host, port.parse::<u16>().ok()?)))
        .with_context(|| format!("a datanode location without a port: {location}"))?;
    Ok((forwarded(forwards, host, port)?, datanode_path.to_owned()))
}
