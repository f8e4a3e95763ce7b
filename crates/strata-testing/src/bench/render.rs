//! Micro-benchmark of `render`: parse, validate, build and serialize one
//! cluster, the pure part of every reconcile and the whole of
//! `<operator> render -f`.

use std::time::{Duration, Instant};

use strata_operator::cli::{Operator, render_file};

use super::error::BenchError;

/// Untimed runs before measuring, to warm caches and the allocator.
const WARM_UP: usize = 200;

/// Timing of many renders of one manifest.
#[derive(Clone, Debug)]
pub struct RenderTiming {
    /// Number of timed renders.
    pub iterations: usize,
    /// Fastest render.
    pub min: Duration,
    /// Median render.
    pub median: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Objects in one rendering, to show the work is real.
    pub objects: usize,
}

/// Renders `yaml` `iterations` times and times each render on its own.
pub fn time_render<O: Operator>(yaml: &str, iterations: usize) -> Result<RenderTiming, BenchError> {
    let output = render_file::<O>(yaml)?;
    let objects = output.matches("\nkind: ").count() + usize::from(output.starts_with("kind: "));
    if objects == 0 {
        return Err(BenchError::Template(
            "rendering produced no objects".to_owned(),
        ));
    }
    for _ in 0..WARM_UP {
        std::hint::black_box(render_file::<O>(std::hint::black_box(yaml))?);
    }
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let started = Instant::now();
        std::hint::black_box(render_file::<O>(std::hint::black_box(yaml))?);
        samples.push(started.elapsed());
    }
    samples.sort_unstable();
    Ok(RenderTiming {
        iterations,
        min: percentile(&samples, 0),
        median: percentile(&samples, 50),
        p99: percentile(&samples, 99),
        objects,
    })
}

/// The sample at `percent` of sorted `samples` (nearest rank); zero if empty.
fn percentile(samples: &[Duration], percent: usize) -> Duration {
    let last = samples.len().saturating_sub(1);
    samples
        .get(last * percent / 100)
        .copied()
        .unwrap_or_default()
}
