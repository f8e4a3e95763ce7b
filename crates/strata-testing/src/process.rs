//! A program run to completion within a time bound.
//!
//! Tests and the sandbox run external programs (a product's shell script, kubectl,
//! helm, `zkCli.sh`) that can hang: a wait loop that never ends, a server that never
//! answers. A hung program must fail its step, naming itself and what it printed,
//! instead of hanging the test run until CI's own limit.
//!
//! With [`Stop::Group`] the program runs in its own process group, and an overrun
//! stops the whole group by its id (the program's PID): wrapper scripts such as
//! `zkCli.sh` start `java` without `exec`, and stopping only the script would leave the
//! JVM running. Such a program does not get the terminal's Ctrl-C, so a single binary
//! (kubectl, helm) runs with [`Stop::Program`] instead, in the caller's group. Output
//! goes to temporary files rather than pipes, so an orphan holding a pipe open cannot
//! block the reader either.

use std::fs::File;
use std::io::{Read, Seek};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// A program that ended within its bound.
#[derive(Debug)]
pub struct Finished {
    /// How it ended.
    pub status: ExitStatus,
    /// What it wrote on stdout.
    pub stdout: String,
    /// What it wrote on stderr.
    pub stderr: String,
}

/// Why a bounded run gave no [`Finished`].
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The program could not be started, or its output not be read.
    #[error("{program}: {source}")]
    Io {
        /// The program, as the caller names it.
        program: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The program ran longer than its bound; its process group was stopped.
    #[error(
        "{program} ran longer than {bound:?} and was stopped with its process group \
         {pgid}; what it wrote until then:\n{output}"
    )]
    TimedOut {
        /// The program, as the caller names it.
        program: String,
        /// The bound it overran.
        bound: Duration,
        /// Its process group id, which is its PID.
        pgid: u32,
        /// Its stdout and stderr until it was stopped.
        output: String,
    },
}

/// What an overrun stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The program and everything it started: it runs in a process group of its own.
    Group,
    /// The program alone; it stays in the caller's process group, where Ctrl-C reaches
    /// it.
    Program,
}

/// How often the run checks whether the program has ended.
const POLL: Duration = Duration::from_millis(5);

/// Runs `command` (named `program` in errors) to completion, for at most `bound`;
/// an overrun stops what `stop` says. Standard input is closed.
pub fn run_bounded(
    command: &mut Command,
    program: &str,
    bound: Duration,
    stop: Stop,
) -> Result<Finished, RunError> {
    let io = |source| RunError::Io {
        program: program.to_owned(),
        source,
    };
    let stdout = tempfile::tempfile().map_err(io)?;
    let stderr = tempfile::tempfile().map_err(io)?;
    command
        .stdin(Stdio::null())
        .stdout(stdout.try_clone().map_err(io)?)
        .stderr(stderr.try_clone().map_err(io)?);
    if stop == Stop::Group {
        command.process_group(0);
    }
    let started = Instant::now();
    let mut child = command.spawn().map_err(io)?;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(io)? {
            break Some(status);
        }
        if started.elapsed() > bound {
            break None;
        }
        std::thread::sleep(POLL);
    };
    let Some(status) = status else {
        let pgid = child.id();
        // The group's id is the child's PID (`process_group(0)`): this stops the
        // program and everything it started.
        if stop == Stop::Group
            && let Ok(raw) = i32::try_from(pgid)
        {
            let _ = killpg(Pid::from_raw(raw), Signal::SIGKILL);
        }
        let _ = child.kill();
        let _ = child.wait();
        let output = format!(
            "{}{}",
            read_all(stdout).map_err(io)?,
            read_all(stderr).map_err(io)?
        );
        return Err(RunError::TimedOut {
            program: program.to_owned(),
            bound,
            pgid,
            output,
        });
    };
    Ok(Finished {
        status,
        stdout: read_all(stdout).map_err(io)?,
        stderr: read_all(stderr).map_err(io)?,
    })
}

fn read_all(mut file: File) -> std::io::Result<String> {
    file.rewind()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Starts `command` as a long-running server: stdin closed, stdout and stderr both into
/// `log` (created or truncated), so a test can quote what it printed when it fails. The
/// caller owns the child and stops it by its PID.
///
/// # Errors
///
/// When the log cannot be created or the program cannot be started; the message names
/// the file or the program.
pub fn spawn_logged(
    command: &mut Command,
    log: &std::path::Path,
) -> Result<std::process::Child, String> {
    let stdout = File::create(log).map_err(|error| format!("{}: {error}", log.display()))?;
    let stderr = stdout
        .try_clone()
        .map_err(|error| format!("{}: {error}", log.display()))?;
    command
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .map_err(|error| format!("{:?}: {error}", command.get_program()))
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[test]
    fn a_program_that_ends_in_time_gives_its_status_and_both_outputs() {
        let finished = run_bounded(
            Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]),
            "sh",
            Duration::from_secs(10),
            Stop::Program,
        )
        .expect("sh ends in time");
        assert_eq!(finished.status.code(), Some(3));
        assert_eq!(finished.stdout, "out\n");
        assert_eq!(finished.stderr, "err\n");
    }

    /// The process group in a `/proc/<pid>/stat` line: the third field after the name.
    fn process_group(stat: &str) -> Option<String> {
        let after_name = stat.rsplit_once(')')?.1;
        after_name.split_whitespace().nth(2).map(str::to_owned)
    }

    #[rstest]
    #[case::a_single_binary_gets_the_terminals_ctrl_c(Stop::Program, true)]
    #[case::a_script_runs_in_a_group_of_its_own(Stop::Group, false)]
    fn the_program_runs_in_the_process_group_stop_asks_for(
        #[case] stop: Stop,
        #[case] in_callers_group: bool,
    ) {
        let finished = run_bounded(
            Command::new("sh").args(["-c", "cat /proc/$$/stat"]),
            "sh",
            Duration::from_secs(10),
            stop,
        )
        .expect("sh ends in time");
        let own = std::fs::read_to_string("/proc/self/stat").expect("read /proc/self/stat");
        assert_eq!(
            process_group(&finished.stdout) == process_group(&own),
            in_callers_group,
            "{}",
            finished.stdout
        );
    }

    #[test]
    fn an_overrun_stops_the_program_and_what_it_started() {
        // The script starts a grandchild and waits for it, as `zkCli.sh` waits for java.
        let error = run_bounded(
            Command::new("sh").args(["-c", "sleep 30 & echo $!; wait"]),
            "sh",
            Duration::from_millis(300),
            Stop::Group,
        )
        .expect_err("the script overruns");
        let RunError::TimedOut { output, .. } = &error else {
            panic!("expected a timeout, got {error}");
        };
        assert!(error.to_string().contains("ran longer than"), "{error}");
        let grandchild: u32 = output.trim().parse().expect("the script printed a PID");
        // A killed orphan is gone, or a zombie until its new parent reaps it.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let state = std::fs::read_to_string(format!("/proc/{grandchild}/stat"))
                .ok()
                .and_then(|stat| {
                    let after_name = stat.rsplit_once(')')?.1.trim_start().to_owned();
                    after_name.chars().next()
                });
            match state {
                None | Some('Z' | 'X') => break,
                Some(state) if Instant::now() > deadline => {
                    panic!("the grandchild {grandchild} still runs (state {state})")
                }
                Some(_) => std::thread::sleep(POLL),
            }
        }
    }
}
