//! The CPU time of one test binary and of every process it started, through a cgroup
//! of its own.
//!
//! `wait4`'s count covers only the descendants that were waited for. The pod runner's
//! helper waits for its container, but a helper killed outright leaves its JVM to die
//! by its parent-death signal and to be reaped by PID 1, and that JVM's CPU time is
//! then nobody's: measured on the Trino suite, `wait4` saw about half of what `vmstat`
//! did. A process stays in its cgroup whoever reaps it, so the cgroup's count is whole.
//! Without a cgroup this process may write (not root, no cgroup file system), the
//! count falls back to `wait4`'s, shown as a lower bound.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// The cgroup v1 `cpuacct` hierarchy, as Debian mounts it beside v2's.
const CPUACCT_ROOT: &str = "/sys/fs/cgroup/cpuacct";
/// A pure cgroup v2 hierarchy.
const UNIFIED_ROOT: &str = "/sys/fs/cgroup";

/// How much CPU time a binary used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuTime {
    /// Everything it and its descendants used (its cgroup's count).
    Whole(Duration),
    /// What it and the descendants it waited for used (`wait4`'s count): no less.
    AtLeast(Duration),
}

impl CpuTime {
    /// The time counted.
    pub fn duration(self) -> Duration {
        match self {
            Self::Whole(time) | Self::AtLeast(time) => time,
        }
    }
}

impl std::fmt::Display for CpuTime {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let seconds = self.duration().as_secs_f64();
        match self {
            Self::Whole(_) => write!(formatter, "{seconds:.1} CPU-s"),
            Self::AtLeast(_) => write!(formatter, "at least {seconds:.1} CPU-s"),
        }
    }
}

/// Which hierarchy a cgroup is in, which decides the file that counts its CPU time.
#[derive(Debug, Clone, Copy)]
enum Hierarchy {
    /// `cpuacct.usage`, in nanoseconds.
    CpuAcct,
    /// `cpu.stat`'s `usage_usec`, in microseconds.
    Unified,
}

/// A cgroup made for one binary, removed once its processes have ended.
#[derive(Debug)]
pub struct CpuAccount {
    dir: PathBuf,
    hierarchy: Hierarchy,
}

impl CpuAccount {
    /// A new cgroup named `name` (unique in this run), or `None` where none can be
    /// made.
    pub fn create(name: &str) -> Option<Self> {
        let (root, hierarchy) = if Path::new(CPUACCT_ROOT).join("cpuacct.usage").is_file() {
            (CPUACCT_ROOT, Hierarchy::CpuAcct)
        } else if Path::new(UNIFIED_ROOT).join("cgroup.controllers").is_file() {
            (UNIFIED_ROOT, Hierarchy::Unified)
        } else {
            return None;
        };
        let dir = Path::new(root).join(format!("strata-{}-{name}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        Some(Self { dir, hierarchy })
    }

    /// `command`, started so that its process joins the cgroup before it runs
    /// `command`'s program, through `sh`, which writes its own PID to the cgroup and
    /// then `exec`s the program: moving the process in after it started would miss
    /// the children it forked meanwhile (a shell forks within a millisecond). A shell
    /// the kernel refuses goes on outside the cgroup.
    pub fn start_inside(&self, command: &Command) -> Command {
        let mut inside = Command::new("sh");
        inside
            .args([
                "-c",
                r#"echo $$ > "$1" 2>/dev/null; shift; exec "$@""#,
                "sh",
            ])
            .arg(self.dir.join("cgroup.procs"))
            .arg(command.get_program())
            .args(command.get_args());
        for (name, value) in command.get_envs() {
            match value {
                Some(value) => inside.env(name, value),
                None => inside.env_remove(name),
            };
        }
        if let Some(dir) = command.get_current_dir() {
            inside.current_dir(dir);
        }
        inside
    }

    /// The CPU time the cgroup's processes used so far; `None` for none at all, which
    /// means no process joined it.
    pub fn used(&self) -> Option<Duration> {
        let used = match self.hierarchy {
            Hierarchy::CpuAcct => {
                let text = std::fs::read_to_string(self.dir.join("cpuacct.usage")).ok()?;
                text.trim().parse().ok().map(Duration::from_nanos)
            }
            Hierarchy::Unified => {
                let text = std::fs::read_to_string(self.dir.join("cpu.stat")).ok()?;
                usage_usec(&text).map(Duration::from_micros)
            }
        };
        used.filter(|used| !used.is_zero())
    }
}

impl Drop for CpuAccount {
    /// Removes the cgroup once its last process has ended: a JVM killed with its
    /// helper may take a moment to die. One that outlives the wait leaves the empty
    /// directory behind for good, which is harmless.
    fn drop(&mut self) {
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Runs `command` as [`Command::output`] does, and returns also the CPU time it and
/// its descendants used, counted in a cgroup `name` where one can be made, else by
/// `wait4`.
pub fn output(command: Command, name: &str) -> std::io::Result<(Output, CpuTime)> {
    use wait4::Wait4;

    let account = CpuAccount::create(name);
    let mut command = match &account {
        Some(account) => account.start_inside(&command),
        None => command,
    };
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let (stdout, stderr) = std::thread::scope(|scope| {
        let stdout = scope.spawn(|| read_all(stdout));
        let stderr = read_all(stderr);
        (stdout.join().unwrap_or_default(), stderr)
    });
    let used = child.wait4()?;
    let cpu = match account.as_ref().and_then(CpuAccount::used) {
        Some(whole) => CpuTime::Whole(whole),
        None => CpuTime::AtLeast(used.rusage.utime + used.rusage.stime),
    };
    let output = Output {
        status: used.status,
        stdout,
        stderr,
    };
    Ok((output, cpu))
}

/// Everything a child's pipe gives; a pipe that fails mid-read keeps what it gave, and
/// the exit status decides.
fn read_all(pipe: Option<impl Read>) -> Vec<u8> {
    let mut bytes = Vec::new();
    if let Some(mut pipe) = pipe {
        let _ = pipe.read_to_end(&mut bytes);
    }
    bytes
}

/// `usage_usec` of a cgroup v2 `cpu.stat`.
fn usage_usec(cpu_stat: &str) -> Option<u64> {
    cpu_stat
        .lines()
        .find_map(|line| line.strip_prefix("usage_usec "))
        .and_then(|value| value.trim().parse().ok())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use pretty_assertions::assert_eq;
    use rstest::rstest;

    use super::*;

    /// A shell that counts to 300,000 in a child shell it waits for: its CPU time is the
    /// child's as much as its own.
    #[test]
    fn a_binarys_cpu_time_counts_the_children_it_waited_for() {
        let mut command = Command::new("sh");
        command.args([
            "-c",
            "sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; echo counted'; echo oops >&2; exit 3",
        ]);
        let (output, cpu) = output(command, "cpu-test").unwrap();
        assert_eq!(output.status.code(), Some(3));
        assert_eq!(String::from_utf8_lossy(&output.stdout), "counted\n");
        assert_eq!(String::from_utf8_lossy(&output.stderr), "oops\n");
        assert!(cpu.duration() > Duration::from_millis(100), "{cpu:?}");
    }

    /// A busy loop orphaned at once, as a JVM is when its helper is killed: PID 1
    /// reaps it, so only a cgroup counts its time.
    #[test]
    fn a_binarys_cpu_time_counts_what_it_never_waited_for_where_a_cgroup_can_be_made() {
        let cgroups = CpuAccount::create("probe").is_some();
        let mut command = Command::new("sh");
        command.args([
            "-c",
            "( (i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done) & ); sleep 2",
        ]);
        let (output, cpu) = output(command, "orphan-test").unwrap();
        assert!(output.status.success(), "{output:?}");
        if cgroups {
            assert!(
                matches!(cpu, CpuTime::Whole(time) if time > Duration::from_millis(100)),
                "{cpu:?}"
            );
        } else {
            assert!(
                matches!(cpu, CpuTime::AtLeast(time) if time < Duration::from_millis(100)),
                "{cpu:?}"
            );
        }
    }

    #[rstest]
    #[case::whole(CpuTime::Whole(Duration::from_millis(12_345)), "12.3 CPU-s")]
    #[case::at_least(CpuTime::AtLeast(Duration::from_millis(500)), "at least 0.5 CPU-s")]
    fn the_cpu_time_says_whether_it_is_whole(#[case] time: CpuTime, #[case] shown: &str) {
        assert_eq!(time.to_string(), shown);
    }

    #[rstest]
    #[case::usage("usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n", Some(1500))]
    #[case::none("user_usec 1000\n", None)]
    fn cgroup_v2_counts_in_usage_usec(#[case] text: &str, #[case] expected: Option<u64>) {
        assert_eq!(usage_usec(text), expected);
    }
}
