//! The issue-3 benchmark: the real ZooKeeper operator reconciling many
//! ZookeeperClusters against the in-memory API, and the render step on its
//! own.
//!
//! Run with `cargo bench -p zookeeper-operator --bench reconcile`. The number
//! of clusters comes from `STRATA_BENCH_CLUSTERS` (default 1000). The process
//! exits non-zero when a target is missed: a steady-state reconcile that
//! writes or lists, or a render that takes 1 ms or more. See BENCHMARKS.md.

mod error;
mod fleet;
mod process;
mod render;
mod report;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use strata_test_apiserver::TestApiServer;
use strata_testing::Harness;
use zookeeper_operator::controller::znode::ClientServiceAddress;
use zookeeper_operator::controller::{self, RunOptions};
use zookeeper_operator::crd::{ZookeeperCluster, ZookeeperZnode};
use zookeeper_operator::{OPERATOR_NAME, validate::DEFAULT_CLUSTER_DOMAIN};

use crate::error::BenchError;
use crate::fleet::RequestCounts;
use crate::report::{PhaseFigures, Report};

/// The manifest every benchmark cluster is a copy of.
const EXAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/zookeeper/simple-cluster.yaml"
);

/// Clusters reconciled unless `STRATA_BENCH_CLUSTERS` says otherwise.
const DEFAULT_CLUSTERS: usize = 1000;

/// Timed renders in the micro-benchmark.
const RENDER_ITERATIONS: usize = 2000;

/// Upper bound on each phase, so a stuck operator fails the run instead of
/// hanging it.
const PHASE_TIMEOUT: Duration = Duration::from_secs(600);

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("benchmark failed: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Measures everything, prints the tables and says whether every target is met.
fn run() -> Result<bool, BenchError> {
    let clusters = cluster_count()?;
    let yaml = std::fs::read_to_string(EXAMPLE).map_err(|source| BenchError::Example {
        path: EXAMPLE.to_owned(),
        source,
    })?;
    println!("rendering {EXAMPLE} {RENDER_ITERATIONS} times ...");
    let render = render::time_render(&yaml, RENDER_ITERATIONS)?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(BenchError::Runtime)?;
    let baseline_peak_kib = process::peak_memory_kib()?;
    let phases = runtime.block_on(reconcile_phases(&yaml, clusters))?;
    let report = Report {
        creation: phases.creation,
        steady: phases.steady,
        direct_creation: phases.direct_creation,
        render,
        baseline_peak_kib,
        peak_kib: process::peak_memory_kib()?,
        stored_objects: phases.stored_objects,
    };

    let verdicts = report.verdicts();
    println!(
        "\nZooKeeper operator, {clusters} ZookeeperClusters \
         (examples/zookeeper/simple-cluster.yaml), in-memory API, {} CPUs\n",
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    println!("{}", report.to_table());
    print!("{}", report::verdict_table(&verdicts));
    Ok(verdicts.iter().all(|verdict| verdict.passed))
}

fn cluster_count() -> Result<usize, BenchError> {
    const VARIABLE: &str = "STRATA_BENCH_CLUSTERS";
    match std::env::var(VARIABLE) {
        Err(_) => Ok(DEFAULT_CLUSTERS),
        Ok(value) => value
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|count| *count > 0)
            .ok_or(BenchError::Setting {
                variable: VARIABLE,
                value,
            }),
    }
}

/// What the two operator phases measured.
struct Phases {
    creation: PhaseFigures,
    steady: PhaseFigures,
    direct_creation: Duration,
    stored_objects: usize,
}

/// Where a phase starts: the clock, the CPU time of the process and of the
/// benchmark's own thread, and the reconcile count.
struct Mark {
    started: Instant,
    cpu: Duration,
    driver_cpu: Duration,
    reconciles: u64,
}

impl Mark {
    fn now(harness: &Harness) -> Result<Self, BenchError> {
        Ok(Self {
            started: Instant::now(),
            cpu: process::cpu_time()?,
            driver_cpu: process::thread_cpu_time()?,
            reconciles: harness.reconciles(),
        })
    }

    fn figures(
        &self,
        harness: &Harness,
        clusters: usize,
        settled: fleet::Settled,
    ) -> Result<PhaseFigures, BenchError> {
        Ok(PhaseFigures {
            clusters,
            reconciles: settled.reconciles - self.reconciles,
            wall: settled.last_activity.duration_since(self.started),
            cpu: process::cpu_time()?.saturating_sub(self.cpu),
            driver_cpu: process::thread_cpu_time()?.saturating_sub(self.driver_cpu),
            requests: RequestCounts::of(&harness.server.requests()),
        })
    }
}

/// Starts the operator, creates the clusters and waits for every one to have
/// its status (creation), then touches every cluster and waits again
/// (steady state).
async fn reconcile_phases(yaml: &str, count: usize) -> Result<Phases, BenchError> {
    let template = fleet::cluster_template(yaml)?;
    let names = fleet::cluster_names(count);
    let server = TestApiServer::new();
    server
        .register::<ZookeeperCluster>()
        .register::<ZookeeperZnode>();
    let options = RunOptions {
        cluster_domain: DEFAULT_CLUSTER_DOMAIN.to_owned(),
        ensemble_address: Arc::new(ClientServiceAddress {
            cluster_domain: DEFAULT_CLUSTER_DOMAIN.to_owned(),
        }),
        zookeeper_timeout: Duration::from_secs(1),
        znode_check_period: controller::ZNODE_CHECK_PERIOD,
    };
    let harness = Harness::start(server, OPERATOR_NAME, move |runtime| {
        controller::run(runtime, options)
    });
    wait_until_ready(&harness).await?;
    harness.server.reset_requests();

    println!("creating {count} clusters ...");
    let mark = Mark::now(&harness)?;
    fleet::create_all(&harness.server, &template, &names)?;
    let direct_creation = mark.started.elapsed();
    let settled = fleet::wait_until_settled(
        &harness,
        "creation",
        mark.reconciles + count as u64,
        PHASE_TIMEOUT,
        || fleet::clusters_with_status(&harness.server) == count,
    )
    .await?;
    let creation = mark.figures(&harness, count, settled)?;

    harness.server.reset_requests();
    println!("touching {count} clusters ...");
    let mark = Mark::now(&harness)?;
    fleet::touch_all(&harness.server, &names, "1")?;
    let settled = fleet::wait_until_settled(
        &harness,
        "steady state",
        mark.reconciles + count as u64,
        PHASE_TIMEOUT,
        || true,
    )
    .await?;
    let steady = mark.figures(&harness, count, settled)?;

    Ok(Phases {
        creation,
        steady,
        direct_creation,
        stored_objects: stored_objects(&harness.server),
    })
}

/// Waits until every controller's caches have their first LIST, so the
/// creation phase starts from a running operator.
async fn wait_until_ready(harness: &Harness) -> Result<(), BenchError> {
    let ready = harness.runtime.ready_flag();
    let started = Instant::now();
    while !ready.load(Ordering::Acquire) {
        if started.elapsed() > PHASE_TIMEOUT {
            return Err(BenchError::Timeout {
                phase: "start-up",
                waited: PHASE_TIMEOUT,
                detail: "the caches never synced".to_owned(),
            });
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// Objects of the kinds the benchmark creates, for the memory figure's context.
fn stored_objects(server: &TestApiServer) -> usize {
    [
        "zookeeperclusters.zookeeper.strata.dev",
        "configmaps",
        "services",
        "statefulsets.apps",
        "poddisruptionbudgets.policy",
        "events.events.k8s.io",
        "events",
    ]
    .iter()
    .map(|resource| server.objects(resource).len())
    .sum()
}
