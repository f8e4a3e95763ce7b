//! Figures of each phase, the table printed at the end, and the targets the
//! benchmark holds the operator to.

use std::time::Duration;

use super::fleet::RequestCounts;
use super::render::RenderTiming;

/// A render must take less than this (median), so `render` in CI pipelines
/// and the build step of every reconcile stay cheap.
pub const RENDER_TARGET: Duration = Duration::from_millis(1);

/// What one phase of the reconcile benchmark cost.
#[derive(Clone, Debug)]
pub struct PhaseFigures {
    /// Clusters the phase acted on.
    pub clusters: usize,
    /// Reconciles finished during the phase, from the operator's metrics.
    pub reconciles: u64,
    /// From the phase's first change to the operator's last activity.
    pub wall: Duration,
    /// CPU time of the whole process (operator, in-memory API and the
    /// benchmark itself).
    pub cpu: Duration,
    /// CPU time of the benchmark's own thread: the direct writes that start
    /// the phase and the polling that waits for its end.
    pub driver_cpu: Duration,
    /// Requests the operator sent.
    pub requests: RequestCounts,
}

impl PhaseFigures {
    fn reconciles_per_second(&self) -> f64 {
        ratio(self.reconciles as f64, self.wall.as_secs_f64())
    }

    fn cpu_per_reconcile(&self) -> Duration {
        Duration::from_secs_f64(ratio(self.cpu.as_secs_f64(), self.reconciles as f64))
    }

    /// CPU time of the operator and the in-memory API, per reconcile.
    fn worker_cpu_per_reconcile(&self) -> Duration {
        let workers = self.cpu.saturating_sub(self.driver_cpu);
        Duration::from_secs_f64(ratio(workers.as_secs_f64(), self.reconciles as f64))
    }

    fn requests_per_reconcile(&self) -> f64 {
        ratio(self.requests.total as f64, self.reconciles as f64)
    }

    fn requests_per_cluster(&self) -> f64 {
        ratio(self.requests.total as f64, self.clusters as f64)
    }
}

/// Everything the benchmark measured.
#[derive(Clone, Debug)]
pub struct Report {
    /// Creating the clusters until every one has its objects and status.
    pub creation: PhaseFigures,
    /// Touching every cluster's annotation once everything is settled.
    pub steady: PhaseFigures,
    /// How long storing the clusters directly in the in-memory API took.
    pub direct_creation: Duration,
    /// The render micro-benchmark.
    pub render: RenderTiming,
    /// Peak resident memory before the operator started, in KiB.
    pub baseline_peak_kib: u64,
    /// Peak resident memory at the end, in KiB.
    pub peak_kib: u64,
    /// Objects the API stored at the end.
    pub stored_objects: usize,
}

/// One target and whether the figures meet it.
#[derive(Clone, Debug)]
pub struct Verdict {
    /// What is required.
    pub target: String,
    /// What was measured.
    pub measured: String,
    /// Whether it is met.
    pub passed: bool,
}

impl Report {
    /// The targets of issue 3: a steady-state reconcile writes nothing and
    /// lists nothing, every touched cluster was reconciled, a render takes
    /// less than 1 ms.
    pub fn verdicts(&self) -> Vec<Verdict> {
        let steady = &self.steady;
        vec![
            Verdict {
                target: "steady state: 0 write requests".to_owned(),
                measured: steady.requests.writes.to_string(),
                passed: steady.requests.writes == 0,
            },
            Verdict {
                target: "steady state: 0 LIST requests".to_owned(),
                measured: steady.requests.lists.to_string(),
                passed: steady.requests.lists == 0,
            },
            Verdict {
                target: format!(
                    "steady state: every one of {} touched clusters reconciled",
                    steady.clusters
                ),
                measured: format!("{} reconciles", steady.reconciles),
                passed: steady.reconciles >= steady.clusters as u64,
            },
            Verdict {
                target: format!("render median < {}", millis(RENDER_TARGET)),
                measured: millis(self.render.median),
                passed: self.render.median < RENDER_TARGET,
            },
        ]
    }

    /// The report as Markdown tables, ready to paste into BENCHMARKS.md.
    pub fn to_table(&self) -> String {
        let (creation, steady) = (&self.creation, &self.steady);
        let mut rows: Vec<[String; 3]> = Vec::new();
        let mut row = |name: &str, first: String, second: String| {
            rows.push([name.to_owned(), first, second]);
        };
        row(
            "clusters",
            creation.clusters.to_string(),
            steady.clusters.to_string(),
        );
        row(
            "reconciles",
            creation.reconciles.to_string(),
            steady.reconciles.to_string(),
        );
        row(
            "reconciles per cluster",
            format!(
                "{:.2}",
                ratio(creation.reconciles as f64, creation.clusters as f64)
            ),
            format!(
                "{:.2}",
                ratio(steady.reconciles as f64, steady.clusters as f64)
            ),
        );
        row("wall time", seconds(creation.wall), seconds(steady.wall));
        row(
            "reconciles per second",
            format!("{:.0}", creation.reconciles_per_second()),
            format!("{:.0}", steady.reconciles_per_second()),
        );
        row(
            "CPU time (process)",
            seconds(creation.cpu),
            seconds(steady.cpu),
        );
        row(
            "CPU time per reconcile",
            millis(creation.cpu_per_reconcile()),
            millis(steady.cpu_per_reconcile()),
        );
        row(
            "  of which benchmark thread",
            seconds(creation.driver_cpu),
            seconds(steady.driver_cpu),
        );
        row(
            "  operator + API per reconcile",
            millis(creation.worker_cpu_per_reconcile()),
            millis(steady.worker_cpu_per_reconcile()),
        );
        row(
            "API requests",
            creation.requests.total.to_string(),
            steady.requests.total.to_string(),
        );
        row(
            "API requests per reconcile",
            format!("{:.2}", creation.requests_per_reconcile()),
            format!("{:.2}", steady.requests_per_reconcile()),
        );
        row(
            "API requests per cluster",
            format!("{:.2}", creation.requests_per_cluster()),
            format!("{:.2}", steady.requests_per_cluster()),
        );
        for (name, pick) in [
            (
                "  writes",
                (|counts: &RequestCounts| counts.writes) as fn(&RequestCounts) -> usize,
            ),
            ("  LISTs", |counts| counts.lists),
            ("  GETs", |counts| counts.gets),
        ] {
            row(
                name,
                pick(&creation.requests).to_string(),
                pick(&steady.requests).to_string(),
            );
        }

        let mut out = markdown(["figure", "creation", "steady state"], &rows);
        out.push('\n');
        out.push_str(&self.breakdown_table());
        out.push('\n');
        let render = &self.render;
        let other_rows = vec![
            [
                format!(
                    "render one cluster ({} objects), median of {}",
                    render.objects, render.iterations
                ),
                millis(render.median),
            ],
            ["render, fastest".to_owned(), millis(render.min)],
            ["render, 99th percentile".to_owned(), millis(render.p99)],
            [
                "peak memory (VmHWM) before the operator started".to_owned(),
                mebibytes(self.baseline_peak_kib),
            ],
            [
                "peak memory (VmHWM) at the end".to_owned(),
                mebibytes(self.peak_kib),
            ],
            [
                "objects stored in the in-memory API".to_owned(),
                self.stored_objects.to_string(),
            ],
            [
                "storing the clusters directly (part of creation wall time)".to_owned(),
                seconds(self.direct_creation),
            ],
        ];
        out.push_str(&markdown(["figure", "value"], &other_rows));
        out
    }

    fn breakdown_table(&self) -> String {
        let mut kinds: Vec<&String> = self
            .creation
            .requests
            .by_kind
            .keys()
            .chain(self.steady.requests.by_kind.keys())
            .collect();
        kinds.sort();
        kinds.dedup();
        let count = |counts: &RequestCounts, kind: &str| {
            counts.by_kind.get(kind).copied().unwrap_or_default()
        };
        let rows: Vec<[String; 3]> = kinds
            .into_iter()
            .map(|kind| {
                [
                    kind.clone(),
                    count(&self.creation.requests, kind).to_string(),
                    count(&self.steady.requests, kind).to_string(),
                ]
            })
            .collect();
        markdown(["request", "creation", "steady state"], &rows)
    }
}

/// The targets as a table and the closing `N passed, N failed` line.
pub fn verdict_table(verdicts: &[Verdict]) -> String {
    let rows: Vec<[String; 3]> = verdicts
        .iter()
        .map(|verdict| {
            [
                verdict.target.clone(),
                verdict.measured.clone(),
                if verdict.passed { "PASS" } else { "FAIL" }.to_owned(),
            ]
        })
        .collect();
    let passed = verdicts.iter().filter(|verdict| verdict.passed).count();
    let mut out = markdown(["target", "measured", "result"], &rows);
    out.push_str(&format!(
        "\ntargets: {passed} passed, {} failed\n",
        verdicts.len() - passed
    ));
    out
}

/// A Markdown table with the first column left-aligned and the others right-aligned.
fn markdown<const N: usize>(header: [&str; N], rows: &[[String; N]]) -> String {
    let header = header.map(str::to_owned);
    let widths: [usize; N] = std::array::from_fn(|column| {
        std::iter::once(&header)
            .chain(rows)
            .map(|row| row[column].len())
            .max()
            .unwrap_or(0)
    });
    let line = |row: &[String; N]| {
        let mut out = String::from("|");
        for (column, cell) in row.iter().enumerate() {
            let width = widths[column];
            if column == 0 {
                out.push_str(&format!(" {cell:<width$} |"));
            } else {
                out.push_str(&format!(" {cell:>width$} |"));
            }
        }
        out.push('\n');
        out
    };
    let mut out = line(&header);
    out.push('|');
    for (column, width) in widths.iter().enumerate() {
        let dashes = "-".repeat(width + 1);
        if column == 0 {
            out.push_str(&format!("{dashes}-|"));
        } else {
            out.push_str(&format!("{dashes}:|"));
        }
    }
    out.push('\n');
    for row in rows {
        out.push_str(&line(row));
    }
    out
}

fn ratio(numerator: f64, denominator: f64) -> f64 {
    if denominator > 0.0 {
        numerator / denominator
    } else {
        0.0
    }
}

fn seconds(duration: Duration) -> String {
    format!("{:.2} s", duration.as_secs_f64())
}

fn millis(duration: Duration) -> String {
    format!("{:.3} ms", duration.as_secs_f64() * 1000.0)
}

fn mebibytes(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}
