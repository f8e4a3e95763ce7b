//! The shell scripts the containers run, kept as files under `src/scripts/` so they are
//! tested as they ship (`tests/format_script.rs` runs them against a fake `hdfs`).

/// The namenode's init container: formats a new namespace once, on one designated pod,
/// bootstraps every other namenode from the active one, and stops with a reason on any
/// state it cannot handle safely.
pub const FORMAT_NAMENODE: &str = include_str!("../scripts/format-namenode.sh");

/// The ZKFC sidecar: creates the failover znode when it is missing, then runs `zkfc`.
pub const START_ZKFC: &str = include_str!("../scripts/start-zkfc.sh");

/// The namenode container's preStop hook: an active namenode hands the active role to
/// a standby before it stops.
pub const HAND_OVER_ACTIVE: &str = include_str!("../scripts/hand-over-active.sh");

/// The namenode's refresh-nodes sidecar: re-reads the exclude list whenever the
/// operator changes it, so decommissioning starts without a namenode restart.
pub const REFRESH_NODES: &str = include_str!("../scripts/refresh-nodes.sh");
