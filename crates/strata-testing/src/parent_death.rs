//! Long-running servers that end with whoever started them.
//!
//! A test run or a sandbox can die by SIGKILL: CI's time limit, a killed `cargo`, an
//! out-of-memory kill. Its children would then live on under PID 1, etcd and the API
//! server among them, holding their ports, data directories and every file descriptor
//! they inherited. So each long-running server starts through util-linux's `setpriv
//! --pdeathsig KILL`, which asks the kernel for a parent-death signal and then
//! `exec`s the server in the same process: the PID the caller stops is the server's.
//! The pod runner's helper does the same for every container (`prctl` in
//! `strata_pod_runner::shim`); here it needs no code that runs between fork and exec,
//! which this workspace does not allow (`unsafe_code = "forbid"`).
//!
//! The kernel sends the signal when the *thread* that started the process ends, not
//! the process. Every caller starts its servers from a thread that lives as long as
//! they should: a test's own thread, the sandbox's main thread, or a Tokio worker,
//! which lives until its runtime ends. Never start one from `spawn_blocking`, whose
//! threads end when idle.

use std::path::{Path, PathBuf};
use std::process::Command;

/// util-linux's `setpriv`, which Debian installs on every system (the package is
/// essential).
const SETPRIV: &str = "setpriv";

/// util-linux's `chrt`, from the same package.
const CHRT: &str = "chrt";

/// A [`Command`] that runs `program` with SIGKILL as its parent-death signal, through
/// `setpriv` when it is on `PATH`, else `program` alone.
pub fn command(program: &Path) -> Command {
    match on_path(SETPRIV) {
        Some(setpriv) => {
            let mut command = Command::new(setpriv);
            command.args(["--pdeathsig", "KILL", "--"]).arg(program);
            command
        }
        None => Command::new(program),
    }
}

/// [`command`] at the lowest CPU priority: `nice -n 19`, and Linux's `SCHED_IDLE`
/// policy through util-linux's `chrt --idle 0` when it is on `PATH`. `program` then
/// gets only the CPU time that the processes at the normal priority leave idle (a
/// `SCHED_IDLE` task weighs 3 against a normal task's 1,024, a niced one 15), so it can
/// run beside a suite whose probes time the product without slowing it.
pub fn lowest_priority_command(program: &Path) -> Command {
    let inner = command(program);
    let mut niced = Command::new("nice");
    niced.args(["-n", "19"]);
    if let Some(chrt) = on_path(CHRT) {
        niced.arg(chrt).args(["--idle", "0"]);
    }
    niced.arg(inner.get_program()).args(inner.get_args());
    niced
}

/// `program` in a directory of `PATH`.
fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// `nice` without arguments prints the niceness it runs at.
    fn niceness_of(mut command: Command) -> String {
        let output = command.output().expect("nice runs");
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    #[test]
    fn the_lowest_priority_command_runs_its_program_at_niceness_19() {
        assert_eq!(
            niceness_of(lowest_priority_command(Path::new("nice"))),
            "19"
        );
    }

    #[test]
    fn the_lowest_priority_command_runs_its_program_under_sched_idle() {
        let mut command = lowest_priority_command(Path::new("sh"));
        command.args(["-c", "chrt -p $$"]);
        let output = command.output().expect("sh runs");
        assert!(output.status.success(), "{output:?}");
        let policy = String::from_utf8_lossy(&output.stdout);
        assert!(policy.contains("SCHED_IDLE"), "{policy}");
    }
}
