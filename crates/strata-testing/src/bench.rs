//! The reconcile benchmark every operator runs (`cargo bench -p <operator> --bench
//! reconcile`): the real operator reconciling many clusters copied from its example
//! against the in-memory API, and its `render` on its own.
//!
//! An operator's bench is a [`ReconcileBench`] and one call to [`run`]. The number of
//! clusters comes from `STRATA_BENCH_CLUSTERS` (default 1000). The process exits
//! non-zero when a target is missed: a steady-state reconcile that writes or lists, or
//! a render that takes 1 ms or more. See BENCHMARKS.md.

pub mod error;
pub mod fleet;
pub mod process;
pub mod render;
pub mod report;

use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use strata_operator::cli::Operator;
use strata_test_apiserver::TestApiServer;

use self::error::BenchError;
use self::fleet::{ClusterKind, RequestCounts};
use self::report::{PhaseFigures, Report};
use crate::Harness;

/// Clusters reconciled unless `STRATA_BENCH_CLUSTERS` says otherwise.
pub const DEFAULT_CLUSTERS: usize = 1000;

/// Timed renders in the micro-benchmark.
const RENDER_ITERATIONS: usize = 2000;

/// Upper bound on each phase, so a stuck operator fails the run instead of hanging it.
const PHASE_TIMEOUT: Duration = Duration::from_secs(600);

/// One operator's benchmark.
#[derive(Clone, Copy, Debug)]
pub struct ReconcileBench {
    /// The heading of the report, such as `ZooKeeper operator`.
    pub title: &'static str,
    /// The example manifest (absolute path) whose first cluster every benchmark
    /// cluster copies; shown relative to the workspace in the report.
    pub example: &'static str,
    /// Prefix of the cluster names (`zk` gives `zk-0000`, ...).
    pub name_prefix: &'static str,
    /// Resources (`plural.group`) counted for the stored-objects figure.
    pub stored_resources: &'static [&'static str],
    /// Starts the operator on `server` (its kinds registered) the way the bench wants
    /// it run: called inside the benchmark's async runtime.
    pub start: fn(TestApiServer) -> Harness,
}

/// Runs `bench` for the operator `O` and its cluster kind `K`: prints the tables and
/// says, through the exit code, whether every target is met.
pub fn run<O: Operator, K: ClusterKind>(bench: ReconcileBench) -> ExitCode {
    match measure::<O, K>(&bench) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("benchmark failed: {error}");
            ExitCode::FAILURE
        }
    }
}

fn measure<O: Operator, K: ClusterKind>(bench: &ReconcileBench) -> Result<bool, BenchError> {
    let clusters = cluster_count()?;
    let yaml = std::fs::read_to_string(bench.example).map_err(|source| BenchError::Example {
        path: bench.example.to_owned(),
        source,
    })?;
    println!("rendering {} {RENDER_ITERATIONS} times ...", bench.example);
    let render = render::time_render::<O>(&yaml, RENDER_ITERATIONS)?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(BenchError::Runtime)?;
    let baseline_peak_kib = process::peak_memory_kib()?;
    let phases = runtime.block_on(reconcile_phases::<K>(bench, &yaml, clusters))?;
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
    let example = bench
        .example
        .rsplit_once("/../../")
        .map_or(bench.example, |(_, relative)| relative);
    println!(
        "\n{}, {clusters} {}s ({example}), in-memory API, {} CPUs\n",
        bench.title,
        K::kind(&()),
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

/// Starts the operator, creates the clusters and waits for every one to have its
/// status (creation), then touches every cluster and waits again (steady state).
async fn reconcile_phases<K: ClusterKind>(
    bench: &ReconcileBench,
    yaml: &str,
    count: usize,
) -> Result<Phases, BenchError> {
    let template = fleet::cluster_template::<K>(yaml)?;
    let names = fleet::cluster_names(bench.name_prefix, count);
    let harness = (bench.start)(TestApiServer::new());
    wait_until_ready(&harness).await?;
    harness.server.reset_requests();

    println!("creating {count} clusters ...");
    let mark = Mark::now(&harness)?;
    fleet::create_all(&harness.server, &template, &names)?;
    let direct_creation = mark.started.elapsed();
    let settled = fleet::wait_until_settled::<K>(
        &harness,
        "creation",
        mark.reconciles + count as u64,
        PHASE_TIMEOUT,
        || fleet::clusters_with_status::<K>(&harness.server) == count,
    )
    .await?;
    let creation = mark.figures(&harness, count, settled)?;

    harness.server.reset_requests();
    println!("touching {count} clusters ...");
    let mark = Mark::now(&harness)?;
    fleet::touch_all::<K>(&harness.server, &names, "1")?;
    let settled = fleet::wait_until_settled::<K>(
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
        stored_objects: bench
            .stored_resources
            .iter()
            .map(|resource| harness.server.objects(resource).len())
            .sum(),
    })
}

/// Waits until every controller's caches have their first LIST, so the creation
/// phase starts from a running operator.
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
