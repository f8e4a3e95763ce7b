//! What the runner hands its helper, `strata-pod-exec`, to start one container or to run
//! a command inside a running one. The helper is a program of its own because the
//! namespace and mount calls must run in a single-threaded process between fork and exec,
//! and the workspace forbids the `unsafe` a `pre_exec` closure needs. It reads one of
//! these as JSON, makes the calls in the order `docs/pod-runner.md` gives, and `exec`s
//! the container's command, so the runner's child PID is the container's process.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The exit code of the helper when it could not set up the container, as container
/// runtimes use it (126 and 127 keep their shell meanings: not executable, not found).
pub const SETUP_FAILED: i32 = 125;
/// The exit code when the command is not found on the container's `PATH`.
pub const COMMAND_NOT_FOUND: i32 = 127;

/// Starts a container: a network namespace to join, a fresh mount and UTS namespace
/// whose root is an overlay of the host's `/` with the image and volumes bound in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Launch {
    /// The pod's network namespace (`/run/netns/<name>`).
    pub netns: PathBuf,
    /// An empty host directory; a tmpfs mounted there, in the container's mount
    /// namespace only, holds the overlay's writable layer.
    pub scratch: PathBuf,
    /// The pod's hostname.
    pub hostname: String,
    /// Bind mounts in order, parents before children: image paths, then volumes, then
    /// `/etc/hosts`.
    pub binds: Vec<Bind>,
    /// The host file the container sees as `/dev/termination-log`.
    pub termination_log: PathBuf,
    /// `readOnlyRootFilesystem`.
    pub read_only_root: bool,
    /// Who the command runs as.
    pub user: Credentials,
    /// `allowPrivilegeEscalation: false`.
    pub no_new_privileges: bool,
    /// The command and the environment, as the container sees them.
    pub command: Command,
}

/// Runs a command inside a running container (exec probes, `preStop`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Enter {
    /// The container's process, whose namespaces the command joins.
    pub pid: u32,
    /// Who the command runs as.
    pub user: Credentials,
    /// `allowPrivilegeEscalation: false`.
    pub no_new_privileges: bool,
    /// The command and the environment.
    pub command: Command,
}

/// One bind mount.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bind {
    /// The host path (a directory or a file).
    pub source: PathBuf,
    /// The absolute path inside the container.
    pub target: PathBuf,
    /// Mounted read-only.
    pub read_only: bool,
}

/// The ids a command runs with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Credentials {
    /// `runAsUser`.
    pub uid: u32,
    /// `runAsGroup`.
    pub gid: u32,
    /// `fsGroup` and `supplementalGroups`.
    pub groups: Vec<u32>,
}

/// A command line with its environment and working directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Command {
    /// `command` followed by `args`; a first word without `/` is looked up on the
    /// environment's `PATH` inside the container.
    pub argv: Vec<String>,
    /// The whole environment: the image's, then the container's.
    pub env: Vec<(String, String)>,
    /// `workingDir`, or the image's.
    pub working_dir: PathBuf,
}
