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

/// A [`Command`] that runs `program` with SIGKILL as its parent-death signal, through
/// `setpriv` when it is on `PATH`, else `program` alone.
pub fn command(program: &Path) -> Command {
    match setpriv() {
        Some(setpriv) => {
            let mut command = Command::new(setpriv);
            command.args(["--pdeathsig", "KILL", "--"]).arg(program);
            command
        }
        None => Command::new(program),
    }
}

/// `setpriv` on `PATH`.
fn setpriv() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(SETPRIV))
        .find(|candidate| candidate.is_file())
}
