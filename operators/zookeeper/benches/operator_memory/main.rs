//! The operator's own memory: the real `zookeeper-operator` binary, in its own
//! process, reaching the in-memory API over HTTP (the test API's listener),
//! with 1,000 ZookeeperClusters of 3 servers each, so 3,000 pods.
//!
//! The benchmark process is the sandbox: it serves the API, creates the
//! clusters from `examples/zookeeper/simple-cluster.yaml` and plays the
//! StatefulSet controller and the kubelet for every StatefulSet the operator
//! applies. It reports the operator's peak RSS (`VmHWM` of its process) once
//! every cluster is Available and the operator has settled, separately from
//! its own.
//!
//! `cargo bench -p zookeeper-operator --bench operator_memory`;
//! `STRATA_BENCH_CLUSTERS` changes the count. `STRATA_BENCH_API=real` runs the same
//! clusters on the real control plane instead (see `real.rs`; it needs
//! `STRATA_CONTROL_PLANE_BIN` and `STRATA_HELM` from `cargo xtask tools`). See
//! BENCHMARKS.md.

mod real;

use std::collections::BTreeSet;
use std::io::Read;
use std::net::SocketAddr;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::StatefulSet;
use kube::ResourceExt;
use strata_operator::render::{documents_of_kind, parse_documents};
use strata_status::{ConditionStatus, ConditionType};
use strata_test_apiserver::TestApiServer;
use strata_testing::workloads::run_group;
use zookeeper_operator::crd::{ZookeeperCluster, ZookeeperZnode};

const DEFAULT_CLUSTERS: usize = 1000;
const NAMESPACE: &str = "default";
const EXAMPLE: &str = include_str!("../../../../examples/zookeeper/simple-cluster.yaml");
/// Longest wait for every cluster to become Available.
const TIMEOUT: Duration = Duration::from_secs(900);
/// How often the sandbox looks for new StatefulSets and samples the operator.
const POLL: Duration = Duration::from_millis(250);
/// How long the operator is watched after the last cluster became Available:
/// long enough for the reconciles that the last status writes trigger.
const SETTLE: Duration = Duration::from_secs(10);

fn main() -> ExitCode {
    let count = match std::env::var("STRATA_BENCH_CLUSTERS") {
        Err(_) => DEFAULT_CLUSTERS,
        Ok(value) => match value.trim().parse::<usize>() {
            Ok(count) if count > 0 => count,
            _ => {
                eprintln!("STRATA_BENCH_CLUSTERS={value:?} is not a positive number");
                return ExitCode::FAILURE;
            }
        },
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("starting the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let real = std::env::var("STRATA_BENCH_API").is_ok_and(|api| api == "real");
    let measured = if real {
        runtime.block_on(async {
            real::run(count, example_cluster()?)
                .await
                .map(|figures| figures.to_string())
        })
    } else {
        runtime
            .block_on(run(count))
            .map(|figures| figures.to_string())
    };
    match measured {
        Ok(figures) => {
            println!("{figures}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("operator_memory: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The operator process; stopped by its PID when dropped, whatever happened.
struct Operator {
    child: Child,
    stderr_path: std::path::PathBuf,
}

impl Operator {
    fn start(kubeconfig: &std::path::Path, dir: &std::path::Path) -> Result<Self, String> {
        let http = free_loopback_address()?;
        let stderr_path = dir.join("operator.stderr");
        let stderr = std::fs::File::create(&stderr_path).map_err(|error| error.to_string())?;
        let child = Command::new(env!("CARGO_BIN_EXE_zookeeper-operator"))
            .arg("run")
            .env("KUBECONFIG", kubeconfig)
            .env("HTTP_ADDRESS", http.to_string())
            .env("WATCH_NAMESPACE", NAMESPACE)
            .env("POD_NAMESPACE", NAMESPACE)
            .env("LOG_LEVEL", "warn")
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .map_err(|error| format!("starting the operator: {error}"))?;
        Ok(Self { child, stderr_path })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Fails with the operator's last log lines when it has exited.
    fn check_alive(&mut self) -> Result<(), String> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(format!(
                "the operator exited with {status}; its last lines:\n{}",
                self.stderr_tail()
            )),
            Err(error) => Err(format!("waiting for the operator: {error}")),
        }
    }

    fn stderr_tail(&mut self) -> String {
        let mut text = String::new();
        if let Ok(mut file) = std::fs::File::open(&self.stderr_path) {
            let _ = file.read_to_string(&mut text);
        }
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// SIGTERM, then SIGKILL if it has not exited within the shutdown bound.
    fn stop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(25);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.stop();
        }
    }
}

/// The first ZookeeperCluster of the example, the template of every cluster.
fn example_cluster() -> Result<ZookeeperCluster, String> {
    documents_of_kind::<ZookeeperCluster>(
        &parse_documents(EXAMPLE).map_err(|error| error.to_string())?,
    )
    .map_err(|error| error.to_string())?
    .into_iter()
    .next()
    .ok_or_else(|| "the example has no ZookeeperCluster".to_owned())
}

fn free_loopback_address() -> Result<SocketAddr, String> {
    let socket = std::net::TcpListener::bind("127.0.0.1:0").map_err(|error| error.to_string())?;
    socket.local_addr().map_err(|error| error.to_string())
}

/// A `/proc/<pid>/status` field in KiB.
fn status_kib(pid: &str, field: &str) -> Result<u64, String> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).map_err(|error| format!("{path}: {error}"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .ok_or_else(|| format!("{path} has no {field}"))
}

struct Figures {
    clusters: usize,
    pods: usize,
    all_available: Duration,
    operator_peak_kib: u64,
    operator_settled_kib: u64,
    sandbox_peak_kib: u64,
}

impl std::fmt::Display for Figures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mib = |kib: u64| kib as f64 / 1024.0;
        writeln!(
            f,
            "operator in its own process, {} ZookeeperClusters, {} pods",
            self.clusters, self.pods
        )?;
        writeln!(
            f,
            "  every cluster Available after  {:>8.1} s",
            self.all_available.as_secs_f64()
        )?;
        writeln!(
            f,
            "  operator peak RSS (VmHWM)      {:>8.1} MiB",
            mib(self.operator_peak_kib)
        )?;
        writeln!(
            f,
            "  operator RSS after settling    {:>8.1} MiB",
            mib(self.operator_settled_kib)
        )?;
        write!(
            f,
            "  sandbox (API + simulation) peak {:>7.1} MiB",
            mib(self.sandbox_peak_kib)
        )
    }
}

async fn run(count: usize) -> Result<Figures, String> {
    let server = TestApiServer::new();
    server.register::<ZookeeperCluster>();
    server.register::<ZookeeperZnode>();
    let listener = server
        .listen("127.0.0.1:0".parse().map_err(|_| "address")?)
        .await
        .map_err(|error| error.to_string())?;
    let dir = tempfile::tempdir().map_err(|error| error.to_string())?;
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        listener.kubeconfig("zookeeper-operator", "operator", NAMESPACE),
    )
    .map_err(|error| error.to_string())?;

    let template = example_cluster()?;
    let mut operator = Operator::start(&kubeconfig, dir.path())?;
    let pid = operator.pid().to_string();
    let started = Instant::now();
    for index in 0..count {
        let mut cluster = template.clone();
        cluster.metadata.name = Some(format!("zk-{index:04}"));
        cluster.metadata.namespace = Some(NAMESPACE.to_owned());
        server.upsert(&cluster).map_err(|error| error.to_string())?;
    }

    let mut running: BTreeSet<String> = BTreeSet::new();
    let mut pods = 0;
    let all_available = loop {
        operator.check_alive()?;
        for stateful_set in server.list_typed::<StatefulSet>() {
            let name = stateful_set.name_any();
            let replicas = stateful_set.spec.replicas.unwrap_or(1);
            if !running.contains(&name) {
                let replicas = u16::try_from(replicas).map_err(|error| error.to_string())?;
                run_group((&server, NAMESPACE), &name, replicas);
                pods += usize::from(replicas);
                running.insert(name);
            }
        }
        let available = server
            .list_typed::<ZookeeperCluster>()
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
    operator.check_alive()?;
    let figures = Figures {
        clusters: count,
        pods,
        all_available,
        operator_peak_kib: status_kib(&pid, "VmHWM:")?,
        operator_settled_kib: status_kib(&pid, "VmRSS:")?,
        sandbox_peak_kib: status_kib("self", "VmHWM:")?,
    };
    operator.stop();
    Ok(figures)
}

/// Whether the cluster's Available condition is True: what both modes wait for.
fn is_available(cluster: &ZookeeperCluster) -> bool {
    cluster
        .status
        .as_ref()
        .and_then(|status| status.condition(ConditionType::Available))
        .is_some_and(|condition| condition.status == ConditionStatus::True)
}
