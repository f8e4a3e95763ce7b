//! One container's process, started through the helper `strata-pod-exec` (see
//! [`crate::launch`]) in a process group of its own, and stopped through that group, as
//! the kubelet stops a container's whole cgroup: a script's children (the `hdfs
//! namenode -format` a format script runs) go with it.
//!
//! Without a PID namespace the container's first process is not PID 1. The kubelet's
//! SIGTERM to a PID 1 that does not handle it is ignored; here it ends the process.
//! The JVMs handle SIGTERM either way, so the daemons stop as they do on a node.

use std::fs::{self, File};
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

use crate::launch::{Command as ContainerCommand, Credentials, Enter, Launch, SETUP_FAILED};

/// The environment variable naming the helper, for callers whose binary does not sit
/// next to it in Cargo's target directory.
pub const HELPER_VARIABLE: &str = "STRATA_POD_EXEC";
/// The helper's file name.
const HELPER_NAME: &str = "strata-pod-exec";
/// The kubelet's bound on a termination message.
const MESSAGE_BYTES: usize = 4096;
/// The kubelet's bounds on a message taken from the log (`FallbackToLogsOnError`):
/// the last 80 lines, of which at most the last 2048 bytes.
const LOG_MESSAGE_LINES: usize = 80;
const LOG_MESSAGE_BYTES: usize = 2048;

/// Why a container could not be started, entered or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ContainerError {
    /// The helper is not built.
    #[error(
        "the pod runner's helper `{HELPER_NAME}` is not at {0}; build it with \
         `cargo build -p strata-pod-runner` or name it in ${HELPER_VARIABLE}"
    )]
    HelperMissing(PathBuf),
    /// A file of the container could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The helper could not be started.
    #[error("cannot start {HELPER_NAME}: {0}")]
    Spawn(std::io::Error),
}

/// The helper program.
#[derive(Clone, Debug)]
pub struct Helper(PathBuf);

impl Helper {
    /// `$STRATA_POD_EXEC`, or `strata-pod-exec` in the Cargo target directory the
    /// running binary was built in (a test binary lives in its `deps/`).
    pub fn locate() -> Result<Self, ContainerError> {
        let path = match std::env::var_os(HELPER_VARIABLE) {
            Some(path) => PathBuf::from(path),
            None => {
                let exe = std::env::current_exe().map_err(ContainerError::Spawn)?;
                let dir = exe.parent().unwrap_or(Path::new("."));
                let profile = if dir.ends_with("deps") {
                    dir.parent().unwrap_or(dir)
                } else {
                    dir
                };
                profile.join(HELPER_NAME)
            }
        };
        if path.is_file() {
            Ok(Self(std::fs::canonicalize(&path).unwrap_or(path)))
        } else {
            Err(ContainerError::HelperMissing(path))
        }
    }

    /// Starts a container from `spec`. Its output goes to `log`.
    pub fn launch(&self, spec: &Launch, dir: &Path, log: &Path) -> Result<Running, ContainerError> {
        fs::create_dir_all(&spec.scratch).map_err(|source| ContainerError::Write {
            path: spec.scratch.clone(),
            source,
        })?;
        let spec_file = dir.join("launch.json");
        write_json(&spec_file, spec)?;
        let child = self.spawn("launch", &spec_file, log)?;
        Ok(Running::new(child, self.0.clone()))
    }

    /// Runs `command` inside the running container whose shim is `pid` as `user`, for
    /// at most `timeout`; returns its exit code and output, or `None` if it timed out or
    /// the container is still being set up (there is nothing to enter yet).
    pub async fn exec_in(
        &self,
        pid: u32,
        user: &Credentials,
        no_new_privileges: bool,
        command: ContainerCommand,
        timeout: Duration,
    ) -> Result<Option<(i32, String)>, ContainerError> {
        let Some(pid) = container_init(pid).filter(|init| !self.runs(*init)) else {
            return Ok(None);
        };
        let dir = tempfile::tempdir().map_err(ContainerError::Spawn)?;
        let spec_file = dir.path().join("enter.json");
        write_json(
            &spec_file,
            &Enter {
                pid,
                user: user.clone(),
                no_new_privileges,
                command,
            },
        )?;
        let output = dir.path().join("output");
        let mut running = Running::new(self.spawn("enter", &spec_file, &output)?, self.0.clone());
        let Ok(status) = tokio::time::timeout(timeout, running.wait()).await else {
            running.kill();
            running.wait().await;
            return Ok(None);
        };
        let text = fs::read_to_string(&output).unwrap_or_default();
        Ok(Some((status.code, text)))
    }

    /// Whether `pid` still runs the helper's program.
    fn runs(&self, pid: u32) -> bool {
        fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|program| program == self.0)
    }

    fn spawn(&self, mode: &str, spec: &Path, log: &Path) -> Result<Child, ContainerError> {
        let output = File::options()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|source| ContainerError::Write {
                path: log.to_owned(),
                source,
            })?;
        let errors = output.try_clone().map_err(ContainerError::Spawn)?;
        Command::new(&self.0)
            .arg(mode)
            .arg(spec)
            .env_clear()
            .stdin(Stdio::null())
            .stdout(output)
            .stderr(errors)
            .process_group(0)
            .spawn()
            .map_err(ContainerError::Spawn)
    }
}

fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), ContainerError> {
    let text = serde_json::to_vec_pretty(value).unwrap_or_default();
    fs::write(path, text).map_err(|source| ContainerError::Write {
        path: path.to_owned(),
        source,
    })
}

/// How a container's process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exit {
    /// The exit code, or 128 + the signal that ended it, as container runtimes report.
    pub code: i32,
    /// The signal that ended it, if any.
    pub signal: Option<i32>,
}

impl Exit {
    fn from_status(status: ExitStatus) -> Self {
        match (status.code(), status.signal()) {
            (Some(code), _) => Self { code, signal: None },
            (None, Some(signal)) => Self {
                code: 128 + signal,
                signal: Some(signal),
            },
            (None, None) => Self {
                code: SETUP_FAILED,
                signal: None,
            },
        }
    }
}

/// A started container's process.
#[derive(Debug)]
pub struct Running {
    child: Child,
    pid: u32,
    exit: Option<Exit>,
    /// The helper's program, which the process runs until it has set the container up.
    helper: PathBuf,
}

impl Running {
    fn new(child: Child, helper: PathBuf) -> Self {
        let pid = child.id().unwrap_or_default();
        Self {
            child,
            pid,
            exit: None,
            helper,
        }
    }

    /// Waits until the helper has set the container up and `exec`ed its command (the
    /// shim's child, PID 1 of the container, no longer runs the helper's program), or
    /// the process has ended. Until then the container is half built: a command entering
    /// its namespaces would find the mounts but not yet the hostname or the user, so
    /// probes wait for this.
    pub async fn until_exec(&mut self) {
        let built = |helper: &Path, shim: u32| {
            container_init(shim).is_some_and(|init| {
                fs::read_link(format!("/proc/{init}/exe")).is_ok_and(|program| program != helper)
            })
        };
        while self.try_exit().is_none() && !built(&self.helper, self.pid) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// The container's shim ([`crate::shim`]); its process group, which has the same
    /// id, holds every process of the container.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether it has ended, without waiting.
    pub fn try_exit(&mut self) -> Option<Exit> {
        if self.exit.is_none()
            && let Ok(Some(status)) = self.child.try_wait()
        {
            self.ended(status);
        }
        self.exit
    }

    /// Waits for it to end; whatever it left running in its group is killed.
    pub async fn wait(&mut self) -> Exit {
        if let Some(exit) = self.exit {
            return exit;
        }
        let status = self
            .child
            .wait()
            .await
            .unwrap_or_else(|_| ExitStatus::from_raw(SETUP_FAILED << 8));
        self.ended(status)
    }

    fn ended(&mut self, status: ExitStatus) -> Exit {
        self.signal(Signal::SIGKILL);
        let exit = Exit::from_status(status);
        self.exit = Some(exit);
        exit
    }

    /// SIGTERM to the container's PID 1, then SIGKILL to the group once `grace` has
    /// passed, as container runtimes stop a container: only PID 1 is asked, so a PID 1
    /// without a handler (a shell script without a `trap`) runs until the SIGKILL.
    pub async fn stop(&mut self, grace: Duration) -> Exit {
        if let Some(exit) = self.try_exit() {
            return exit;
        }
        if let Some(init) = container_init(self.pid).and_then(|pid| i32::try_from(pid).ok()) {
            let _ = kill(Pid::from_raw(init), Signal::SIGTERM);
        }
        if let Ok(exit) = tokio::time::timeout(grace, self.wait()).await {
            return exit;
        }
        self.kill();
        self.wait().await
    }

    /// SIGKILL to the group.
    pub fn kill(&self) {
        self.signal(Signal::SIGKILL);
    }

    fn signal(&self, signal: Signal) {
        if let Ok(raw) = i32::try_from(self.pid)
            && raw > 0
        {
            let _ = killpg(Pid::from_raw(raw), signal);
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.exit.is_none() {
            self.kill();
            let _ = self.child.start_kill();
        }
    }
}

/// The container's first process, PID 1 of its namespace: the only child of its shim
/// `shim`, once started.
fn container_init(shim: u32) -> Option<u32> {
    fs::read_to_string(format!("/proc/{shim}/task/{shim}/children"))
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The message the kubelet would report for a container that ended: the termination
/// log, else with `FallbackToLogsOnError` and a failure, the log's last lines.
pub fn termination_message(
    termination_log: &Path,
    log: &Path,
    fallback_to_logs: bool,
    exit: Exit,
) -> Option<String> {
    let written = fs::read(termination_log).unwrap_or_default();
    if !written.is_empty() {
        let bounded = &written[..written.len().min(MESSAGE_BYTES)];
        return Some(String::from_utf8_lossy(bounded).into_owned());
    }
    if !(fallback_to_logs && exit.code != 0) {
        return None;
    }
    let text = fs::read_to_string(log).ok()?;
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(LOG_MESSAGE_LINES)..].join("\n");
    let start = tail.len().saturating_sub(LOG_MESSAGE_BYTES);
    let start = (start..=tail.len())
        .find(|index| tail.is_char_boundary(*index))
        .unwrap_or(0);
    Some(tail[start..].to_owned()).filter(|message| !message.is_empty())
}

/// Creates the empty host file a container sees as `/dev/termination-log`, writable by
/// its user.
pub fn termination_log_file(path: &Path, user: &Credentials) -> Result<(), ContainerError> {
    let write = |source| ContainerError::Write {
        path: path.to_owned(),
        source,
    };
    File::create(path)
        .and_then(|mut file| file.flush())
        .map_err(write)?;
    nix::unistd::chown(
        path,
        Some(nix::unistd::Uid::from_raw(user.uid)),
        Some(nix::unistd::Gid::from_raw(user.gid)),
    )
    .map_err(|errno| write(errno.into()))
}
