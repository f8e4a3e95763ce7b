//! The real-control-plane mode (`STRATA_BENCH_API=real`): the same operator binary and
//! the same 1,000 clusters, on kube-apiserver, etcd, kube-controller-manager,
//! kube-scheduler and KWOK nodes ([`strata_testing::control_plane`]). The chart is
//! installed with the real Helm and the operator runs with its ServiceAccount's token,
//! so the API server's audit log tells its requests apart from everyone else's.
//!
//! It reports the operator's peak RSS, its CPU time per reconcile (from `/proc` and
//! its `strata_reconciles_total`), its requests per reconcile by verb (from the audit
//! log), the time until every cluster is Available, and its writes and LISTs over a
//! steady-state window after that.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};
use strata_testing::control_plane::{
    AuditEvent, ControlPlane, ControlPlaneOptions, OperatorProcess, pod_is_ready,
};
use zookeeper_operator::OPERATOR_NAME;
use zookeeper_operator::crd::ZookeeperCluster;

use super::{NAMESPACE, TIMEOUT, free_loopback_address, is_available, status_kib};

const OPERATOR_NAMESPACE: &str = "strata-operators";
/// What one KWOK node offers the scheduler (`kwok-stages.yaml`): 64 CPUs.
const NODE_MILLICPUS: usize = 64_000;
/// What one ZooKeeper server requests by default: 250m.
const SERVER_MILLICPUS: usize = 250;

/// Enough KWOK nodes for every server's CPU request, and one to spare. With too few,
/// the scheduler leaves the rest Pending for `Insufficient cpu`, as it should: the
/// first 1,000-cluster run had 4 nodes (256 CPUs), so only 1,024 servers ran.
fn nodes_for(clusters: usize) -> u16 {
    let millicpus = clusters * 3 * SERVER_MILLICPUS;
    u16::try_from(millicpus.div_ceil(NODE_MILLICPUS) + 1).unwrap_or(u16::MAX)
}
/// The client rate limit of the controller manager and scheduler: their default (20)
/// would make 3,000 pods, claims and bindings take many minutes.
const CONTROLLER_QPS: u32 = 300;
/// The unit of `/proc/<pid>/stat`'s times: Linux fixes USER_HZ at 100 for user space
/// on every architecture.
const USER_HZ: u64 = 100;
/// How often the clusters' conditions are read.
const POLL: Duration = Duration::from_secs(2);
/// Waited after the last cluster became Available, for the last status writes'
/// reconciles, before the steady-state window opens.
const SETTLE: Duration = Duration::from_secs(20);
/// The steady-state window: every watch stays open, so any request in it is one too
/// many.
const STEADY: Duration = Duration::from_secs(60);

/// What the real-control-plane mode measured.
pub struct RealFigures {
    clusters: usize,
    pods: usize,
    nodes: usize,
    started_in: Duration,
    all_available: Duration,
    operator_peak_kib: u64,
    operator_cpu: Duration,
    reconciles: u64,
    requests: BTreeMap<String, usize>,
    steady_writes: Vec<String>,
    steady_lists: usize,
    lease_renewals: usize,
}

impl std::fmt::Display for RealFigures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let total: usize = self.requests.values().sum();
        let per_reconcile = |count: usize| count as f64 / self.reconciles.max(1) as f64;
        writeln!(
            f,
            "operator in its own process on the real control plane, {} ZookeeperClusters, \
             {} Ready pods on {} KWOK nodes",
            self.clusters, self.pods, self.nodes
        )?;
        writeln!(
            f,
            "  control plane ready after       {:>8.1} s",
            self.started_in.as_secs_f64()
        )?;
        writeln!(
            f,
            "  every cluster Available after   {:>8.1} s",
            self.all_available.as_secs_f64()
        )?;
        writeln!(
            f,
            "  operator peak RSS (VmHWM)       {:>8.1} MiB",
            self.operator_peak_kib as f64 / 1024.0
        )?;
        writeln!(
            f,
            "  reconciles                      {:>8}",
            self.reconciles
        )?;
        writeln!(
            f,
            "  operator CPU per reconcile      {:>8.2} ms",
            self.operator_cpu.as_secs_f64() * 1000.0 / self.reconciles.max(1) as f64
        )?;
        writeln!(
            f,
            "  requests per reconcile          {:>8.2} ({total} in all)",
            per_reconcile(total)
        )?;
        for (verb, count) in &self.requests {
            writeln!(f, "    {verb:<28} {:>8.2} ({count})", per_reconcile(*count))?;
        }
        writeln!(
            f,
            "  steady state over {} s: {} writes, {} LISTs (besides {} renewals of the \
             leader-election Lease)",
            STEADY.as_secs(),
            self.steady_writes.len(),
            self.steady_lists,
            self.lease_renewals
        )?;
        for write in &self.steady_writes {
            writeln!(f, "    {write}")?;
        }
        Ok(())
    }
}

/// The operator's requests in `events`.
fn operator_requests(events: Vec<AuditEvent>) -> Vec<AuditEvent> {
    let user = format!("system:serviceaccount:{OPERATOR_NAMESPACE}:{OPERATOR_NAME}");
    events
        .into_iter()
        .filter(|event| event.user == user)
        .collect()
}

/// The leader renewing its Lease: the one write a steady leader makes, every
/// `LEASE_DURATION - RENEW_GRACE` (5 s).
fn is_lease_renewal(event: &AuditEvent) -> bool {
    event.verb == "patch" && event.resource == "leases" && event.name == OPERATOR_NAME
}

/// User time plus system time of process `pid`, from `/proc/<pid>/stat`.
fn cpu_time(pid: u32) -> Result<Duration, String> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).map_err(|error| format!("{path}: {error}"))?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let ticks: u64 = fields
        .get(11..13)
        .ok_or_else(|| format!("{path} is short"))?
        .iter()
        .map(|field| field.parse::<u64>().unwrap_or(0))
        .sum();
    Ok(Duration::from_secs_f64(ticks as f64 / USER_HZ as f64))
}

/// `strata_reconciles_total` of the cluster controller, from the operator's metrics.
async fn reconciles(metrics: &str) -> Result<u64, String> {
    let text = http_get(metrics).await?;
    Ok(text
        .lines()
        .filter(|line| line.starts_with("strata_reconciles_total{"))
        .filter_map(|line| line.rsplit_once(' '))
        .filter_map(|(_, value)| value.trim().parse::<f64>().ok())
        .map(|value| value as u64)
        .sum())
}

/// A plain HTTP GET of `url` (`http://host:port/path`) over a TCP stream.
async fn http_get(url: &str) -> Result<String, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://").ok_or("not an http URL")?;
    let (address, path) = rest.split_once('/').ok_or("no path")?;
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .map_err(|error| format!("{url}: {error}"))?;
    stream
        .write_all(format!("GET /{path} HTTP/1.0\r\nHost: {address}\r\n\r\n").as_bytes())
        .await
        .map_err(|error| format!("{url}: {error}"))?;
    let mut body = String::new();
    stream
        .read_to_string(&mut body)
        .await
        .map_err(|error| format!("{url}: {error}"))?;
    Ok(body)
}

pub async fn run(count: usize, template: ZookeeperCluster) -> Result<RealFigures, String> {
    let control_plane = ControlPlane::start(ControlPlaneOptions {
        nodes: nodes_for(count),
        controller_qps: Some(CONTROLLER_QPS),
        ..ControlPlaneOptions::default()
    })
    .await
    .map_err(|error| error.to_string())?;
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    control_plane
        .install_operator_chart(&workspace, OPERATOR_NAME, OPERATOR_NAMESPACE)
        .map_err(|error| error.to_string())?;
    let token = control_plane
        .service_account_token(OPERATOR_NAMESPACE, OPERATOR_NAME)
        .await
        .map_err(|error| error.to_string())?;
    let http = free_loopback_address()?.to_string();
    let mut operator = OperatorProcess::start(
        &control_plane,
        Path::new(env!("CARGO_BIN_EXE_zookeeper-operator")),
        "bench",
        OPERATOR_NAMESPACE,
        &token,
        &[("HTTP_ADDRESS", http.as_str()), ("LOG_LEVEL", "warn")],
    )
    .map_err(|error| error.to_string())?;
    let metrics = format!("http://{http}/metrics");

    let client = control_plane
        .client()
        .await
        .map_err(|error| error.to_string())?;
    let clusters: Api<ZookeeperCluster> = Api::namespaced(client, NAMESPACE);
    let started = Instant::now();
    for index in 0..count {
        let mut cluster = template.clone();
        cluster.metadata.name = Some(format!("zk-{index:04}"));
        cluster.metadata.namespace = Some(NAMESPACE.to_owned());
        clusters
            .create(&PostParams::default(), &cluster)
            .await
            .map_err(|error| format!("creating cluster {index}: {error}"))?;
    }
    let all_available = loop {
        operator.check_alive().map_err(|error| error.to_string())?;
        let list = clusters
            .list(&ListParams::default())
            .await
            .map_err(|error| error.to_string())?;
        let available = list
            .items
            .iter()
            .filter(|cluster| is_available(cluster))
            .count();
        if available == count {
            break started.elapsed();
        }
        if started.elapsed() > TIMEOUT {
            return Err(format!(
                "only {available} of {count} clusters became Available within {TIMEOUT:?}"
            ));
        }
        tokio::time::sleep(POLL).await;
    };
    tokio::time::sleep(SETTLE).await;
    let reconciled = reconciles(&metrics).await?;
    let operator_cpu = cpu_time(operator.pid())?;
    let before = operator_requests(control_plane.audit_events().map_err(|e| e.to_string())?);
    let mut requests: BTreeMap<String, usize> = BTreeMap::new();
    for event in &before {
        let key = if event.subresource.is_empty() {
            format!("{} {}", event.verb, event.resource)
        } else {
            format!("{} {}/{}", event.verb, event.resource, event.subresource)
        };
        *requests.entry(key).or_default() += 1;
    }
    tokio::time::sleep(STEADY).await;
    let after = operator_requests(control_plane.audit_events().map_err(|e| e.to_string())?);
    let seen: HashSet<&str> = before.iter().map(|event| event.audit_id.as_str()).collect();
    let window: Vec<&AuditEvent> = after
        .iter()
        .filter(|event| !seen.contains(event.audit_id.as_str()))
        .collect();
    let pods = Api::<Pod>::namespaced(clusters.clone().into_client(), NAMESPACE)
        .list(&ListParams::default())
        .await
        .map_err(|error| error.to_string())?
        .items
        .iter()
        .filter(|pod| pod_is_ready(pod))
        .count();
    operator.check_alive().map_err(|error| error.to_string())?;
    let pid = operator.pid().to_string();
    Ok(RealFigures {
        clusters: count,
        pods,
        nodes: control_plane.nodes().len(),
        started_in: control_plane.started_in(),
        all_available,
        operator_peak_kib: status_kib(&pid, "VmHWM:")?,
        operator_cpu,
        reconciles: reconciled,
        requests,
        steady_writes: window
            .iter()
            .filter(|event| event.is_write() && !is_lease_renewal(event))
            .map(|event| event.describe())
            .collect(),
        lease_renewals: window
            .iter()
            .filter(|event| is_lease_renewal(event))
            .count(),
        steady_lists: window.iter().filter(|event| event.verb == "list").count(),
    })
}
