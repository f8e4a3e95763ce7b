//! Why the control plane could not start or answer.

use std::time::Duration;

use crate::tools;

/// Why the control plane could not start or answer.
#[derive(Debug, thiserror::Error)]
pub enum ControlPlaneError {
    /// The binaries are not provisioned.
    #[error(transparent)]
    MissingTool(#[from] tools::MissingTool),
    /// A file or process operation failed.
    #[error("{doing}: {source}")]
    Io {
        /// What was being done.
        doing: String,
        /// The cause.
        source: std::io::Error,
    },
    /// No free port.
    #[error("no free port on {address}: {message}")]
    Port {
        /// The address.
        address: String,
        /// Why.
        message: String,
    },
    /// A component exited.
    #[error("{component} exited ({status}); its last log lines:\n{log_tail}")]
    Died {
        /// Which one.
        component: &'static str,
        /// Its exit status.
        status: String,
        /// The end of its log.
        log_tail: String,
    },
    /// A component did not become ready in time.
    #[error(
        "{component} was not ready within {timeout:?} ({waiting}); its last log lines:\n{log_tail}"
    )]
    NotReady {
        /// Which one.
        component: &'static str,
        /// The bound.
        timeout: Duration,
        /// What was awaited.
        waiting: String,
        /// The end of its log.
        log_tail: String,
    },
    /// The API refused or failed a request the harness makes.
    #[error("{doing}: {source}")]
    Api {
        /// What was being done.
        doing: String,
        /// The client error.
        source: kube::Error,
    },
    /// A generated file could not be made.
    #[error("{0}")]
    Generate(String),
}

/// An I/O failure while `doing` something.
pub(super) fn io(doing: &str, source: std::io::Error) -> ControlPlaneError {
    ControlPlaneError::Io {
        doing: doing.to_owned(),
        source,
    }
}
