//! The shell scripts the pods run, kept as files under `src/scripts/` so they can be
//! read, linted and run by tests as they are.

/// The worker's preStop hook: `PUT /v1/info/state "SHUTTING_DOWN"`, then wait until the
/// JVM exits.
pub const GRACEFUL_SHUTDOWN: &str = include_str!("../scripts/graceful-shutdown.sh");
/// The readiness probe: `GET /v1/info` says `"starting": false`.
pub const READY: &str = include_str!("../scripts/ready.sh");
/// The container's entry point: joins list values with commas, then execs the launcher.
pub const START: &str = include_str!("../scripts/start.sh");
