//! The shell scripts the pods run, kept as files under `src/scripts/` so they can be
//! read, linted and run by tests as they are.

/// The worker's preStop hook: `PUT /v1/info/state "SHUTTING_DOWN"`, then wait until the
/// JVM exits.
pub const GRACEFUL_SHUTDOWN: &str = include_str!("../scripts/graceful-shutdown.sh");
/// What the probe and the hook share: how they reach the node's own server, over TLS
/// for the name its certificate covers.
pub const TRINO_HTTP: &str = include_str!("../scripts/trino-http.sh");
/// The readiness probe: `GET /v1/info` says `"starting": false`.
pub const READY: &str = include_str!("../scripts/ready.sh");
/// The container's entry point: assembles the keystore, joins list values with commas,
/// then execs the launcher.
pub const START: &str = include_str!("../scripts/start.sh");
