//! Why the benchmark could not produce its figures (as opposed to figures
//! that miss a target, which the bench's report judges).

use std::time::Duration;

use strata_operator::render::RenderError;
use strata_test_apiserver::DirectError;

/// A failure that stops the benchmark before it can judge the targets.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A `/proc` file could not be read.
    #[error("reading {path}: {source}")]
    Proc {
        /// The file.
        path: &'static str,
        /// The I/O failure.
        source: std::io::Error,
    },
    /// A `/proc` file did not have the expected shape.
    #[error("unexpected content in {path}: {line}")]
    ProcFormat {
        /// The file.
        path: &'static str,
        /// What was looked for or found.
        line: String,
    },
    /// The example manifest could not be read.
    #[error("reading the example manifest {path}: {source}")]
    Example {
        /// The manifest's path.
        path: String,
        /// The I/O failure.
        source: std::io::Error,
    },
    /// The example manifest holds no usable cluster.
    #[error("the example manifest holds no cluster: {0}")]
    Template(String),
    /// Rendering the example failed.
    #[error("rendering the example: {0}")]
    Render(#[from] RenderError),
    /// A direct write to the in-memory API failed.
    #[error("writing to the in-memory API: {0}")]
    Direct(#[from] DirectError),
    /// The operator did not settle in time.
    #[error("{phase}: the operator did not settle within {waited:?} ({detail})")]
    Timeout {
        /// The benchmark phase.
        phase: &'static str,
        /// How long the benchmark waited.
        waited: Duration,
        /// What was missing.
        detail: String,
    },
    /// The async runtime could not start.
    #[error("starting the async runtime: {0}")]
    Runtime(std::io::Error),
    /// The cluster count from the environment is not a positive number.
    #[error("{variable} must be a positive number, got {value:?}")]
    Setting {
        /// The environment variable.
        variable: &'static str,
        /// Its value.
        value: String,
    },
}
