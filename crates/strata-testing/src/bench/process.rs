//! What this process costs, read from `/proc/self`: CPU time and peak memory.
//!
//! The in-memory API server runs in the same process as the operator, so both
//! figures cover the two together. `/proc` needs no `unsafe` (the workspace
//! forbids it) and no extra crate.

use std::time::Duration;

use super::error::BenchError;

/// Clock ticks per second of `utime`/`stime` in `/proc/self/stat`. Linux
/// reports them in `USER_HZ`, which is 100 on every architecture we build for.
const TICKS_PER_SECOND: u64 = 100;

/// User plus system CPU time of the whole process so far, threads that have
/// already exited included, with a resolution of 10 ms.
pub fn cpu_time() -> Result<Duration, BenchError> {
    cpu_time_of("/proc/self/stat")
}

/// CPU time of the calling thread so far. The benchmark drives the operator
/// from the main thread (`block_on`), while the runtime's workers run the
/// operator and the in-memory API; this separates the two.
pub fn thread_cpu_time() -> Result<Duration, BenchError> {
    cpu_time_of("/proc/thread-self/stat")
}

fn cpu_time_of(path: &'static str) -> Result<Duration, BenchError> {
    let stat = read(path)?;
    parse_cpu_ticks(&stat)
        .map(|ticks| Duration::from_millis(ticks * 1000 / TICKS_PER_SECOND))
        .ok_or_else(|| BenchError::ProcFormat {
            path,
            line: stat.trim().to_owned(),
        })
}

/// Peak resident set size (`VmHWM`) so far, in KiB.
pub fn peak_memory_kib() -> Result<u64, BenchError> {
    status_field("VmHWM:")
}

fn status_field(name: &'static str) -> Result<u64, BenchError> {
    let status = read("/proc/self/status")?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(name))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .ok_or(BenchError::ProcFormat {
            path: "/proc/self/status",
            line: name.to_owned(),
        })
}

/// `utime + stime` from a `/proc/<pid>/stat` line. The command name in field 2
/// may contain spaces and parentheses, so fields are counted from the last `)`:
/// the token after it is field 3 (state), utime is field 14 and stime field 15.
fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    let (_, after_name) = stat.rsplit_once(')')?;
    let mut fields = after_name.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(user + system)
}

fn read(path: &'static str) -> Result<String, BenchError> {
    std::fs::read_to_string(path).map_err(|source| BenchError::Proc { path, source })
}
