//! The helper's outer process, as a container runtime's shim: it makes the PID namespace
//! the container's processes live in, starts the helper again inside it, and ends the
//! way that process ends.
//!
//! A container's first process is PID 1 of its own PID namespace, and the kernel gives
//! PID 1 a rule no other process has: a signal sent from outside the namespace reaches it
//! only if it installed a handler (SIGKILL excepted). So a shell script without a `trap`
//! ignores the kubelet's SIGTERM and runs until the grace period ends in SIGKILL, as in
//! Kubernetes. A PID namespace only applies to the children of the process that entered
//! it, hence the second process. The shim blocks the signals the runner sends to the
//! container's process group, so only PID 1 decides what a SIGTERM does; a SIGKILL to
//! the group ends both, and the kernel then ends every process of the namespace.

use std::convert::Infallible;
use std::fs::File;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, ExitStatus};

use nix::sched::{CloneFlags, setns, unshare};
use nix::sys::prctl;
use nix::sys::signal::{SigSet, Signal, raise};

use crate::isolate::{StepError, step};
use crate::launch::SETUP_FAILED;

/// The signals the shim leaves to PID 1: those a runner or a terminal sends.
const LEFT_TO_PID_1: [Signal; 4] = [
    Signal::SIGTERM,
    Signal::SIGINT,
    Signal::SIGHUP,
    Signal::SIGQUIT,
];

/// The helper's modes that run inside the PID namespace.
#[derive(Clone, Copy, Debug)]
pub enum Inner {
    /// Builds the container and `exec`s its command, as PID 1.
    LaunchInit,
    /// Joins a running container's other namespaces and `exec`s a command.
    EnterInside,
}

impl Inner {
    /// The helper's command-line mode.
    pub fn mode(self) -> &'static str {
        match self {
            Self::LaunchInit => "launch-init",
            Self::EnterInside => "enter-inside",
        }
    }
}

/// Starts a container: a new PID namespace (with new mount and UTS namespaces, in the
/// pod's network namespace, which PID 1 inherits), and the helper in it as PID 1.
pub fn launch(netns: &Path, spec_file: &Path) -> Result<Infallible, StepError> {
    let netns_file = step(File::open(netns), || {
        format!("open the pod's network namespace {}", netns.display())
    })?;
    step(setns(&netns_file, CloneFlags::CLONE_NEWNET), || {
        format!("setns({}, CLONE_NEWNET)", netns.display())
    })?;
    step(
        unshare(CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWUTS | CloneFlags::CLONE_NEWPID),
        || "unshare(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWPID)".to_owned(),
    )?;
    supervise(Inner::LaunchInit, spec_file)
}

/// Runs a command in a running container: joins the PID namespace of its first process
/// `pid`, and starts the helper in it to join the rest.
pub fn enter(pid: u32, spec_file: &Path) -> Result<Infallible, StepError> {
    let path = format!("/proc/{pid}/ns/pid");
    let namespace = step(File::open(&path), || format!("open {path}"))?;
    step(setns(&namespace, CloneFlags::CLONE_NEWPID), || {
        format!("setns({path})")
    })?;
    supervise(Inner::EnterInside, spec_file)
}

/// Starts the helper again in `inner` mode, waits for it, and ends as it ended.
fn supervise(inner: Inner, spec_file: &Path) -> Result<Infallible, StepError> {
    // As root, and before anything can outlive us: a runner that dies takes the
    // shim with it, and the inner process (its parent-death signal is set after the
    // user change) follows.
    step(prctl::set_pdeathsig(Signal::SIGKILL), || {
        "prctl(PR_SET_PDEATHSIG)".to_owned()
    })?;
    let left_to_pid_1: SigSet = LEFT_TO_PID_1.into_iter().collect();
    step(left_to_pid_1.thread_block(), || {
        format!("block {LEFT_TO_PID_1:?} in the shim")
    })?;
    let helper = step(std::env::current_exe(), || {
        "find the helper's own program".to_owned()
    })?;
    // The child inherits the mask; the inner mode clears it first.
    let mut child = step(
        Command::new(&helper)
            .arg(inner.mode())
            .arg(spec_file)
            .spawn(),
        || format!("start {} {}", helper.display(), inner.mode()),
    )?;
    let status = step(child.wait(), || format!("wait for {}", inner.mode()))?;
    end_as(status)
}

/// Exits with `status`'s code, or dies of its signal.
fn end_as(status: ExitStatus) -> ! {
    if let Some(code) = status.code() {
        std::process::exit(code);
    }
    if let Some(signal) = status.signal().and_then(|raw| Signal::try_from(raw).ok()) {
        let only: SigSet = [signal].into_iter().collect();
        let _ = only.thread_unblock();
        let _ = raise(signal);
        std::process::exit(128 + signal as i32);
    }
    std::process::exit(SETUP_FAILED)
}
