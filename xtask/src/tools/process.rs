//! Running external programs with errors that say what was run and what it printed.

use std::{
    env,
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
    time::Duration,
};

use anyhow::{Context, bail};

/// Lines of a failed command's output repeated in the error message.
const TAIL_LINES: usize = 20;

/// Runs `command` quietly and returns its stdout, or its stderr when stdout is empty
/// (`java -version` prints there). On failure the error carries the output's tail.
pub fn capture(command: &mut Command) -> anyhow::Result<String> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot start {command:?}"))?;
    check(command, &output)?;
    let stdout = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if stdout.is_empty() {
        Ok(String::from_utf8_lossy(&output.stderr).trim().to_owned())
    } else {
        Ok(stdout)
    }
}

/// Runs `command` with its output shown to the user, for long installs and test steps.
/// Its standard output goes to our standard error, so that `cargo xtask tools` prints
/// nothing but its `export` lines on standard output, even while it installs.
pub fn visible(command: &mut Command) -> anyhow::Result<()> {
    let status = command
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::io::stderr()))
        .status()
        .with_context(|| format!("cannot start {command:?}"))?;
    if !status.success() {
        bail!("{command:?} failed with {status}");
    }
    Ok(())
}

/// `<python> -m pip install --quiet --disable-pip-version-check <args>`, shown as
/// [`visible`] shows it: every venv and package install of the tools goes through it.
pub fn pip_install<I, S>(python: &Path, args: I) -> anyhow::Result<()>
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    visible(
        Command::new(python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(args),
    )
}

/// `apt-get install` of one Debian package, without recommends.
pub fn apt_install(package: &str) -> anyhow::Result<()> {
    visible(Command::new("apt-get").args(["update", "-qq"]))?;
    visible(
        Command::new("apt-get")
            .args(["install", "-y", "-qq", "--no-install-recommends", package])
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
}

/// Finds an executable on `PATH`, like `command -v`.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = env::var_os("PATH")?;
    env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

/// True for a regular file with an execute bit.
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// True when this process runs as root, read from `/proc/self/status` (no `unsafe`).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find_map(|line| line.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1))
            == Some("0")
    })
}

fn check(command: &Command, output: &Output) -> anyhow::Result<()> {
    if output.status.success() {
        return Ok(());
    }
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    bail!(
        "{command:?} failed with {}; last output:\n{}",
        output.status,
        tail(&text, TAIL_LINES)
    )
}

/// The last `count` lines of `text`.
fn tail(text: &str, count: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(count)..].join("\n")
}

/// `elapsed` as people read it: `42 s`, or `3 min 07 s`.
pub fn minutes(elapsed: Duration) -> String {
    let seconds = elapsed.as_secs();
    if seconds < 60 {
        format!("{seconds} s")
    } else {
        format!("{} min {:02} s", seconds / 60, seconds % 60)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn capture_returns_stdout_and_falls_back_to_stderr() {
        let out = capture(Command::new("sh").args(["-c", "echo out"])).expect("runs");
        assert_eq!(out, "out");
        let err = capture(Command::new("sh").args(["-c", "echo err >&2"])).expect("runs");
        assert_eq!(err, "err");
    }

    #[test]
    fn capture_failure_names_the_command_and_shows_the_output_tail() {
        let error =
            capture(Command::new("sh").args(["-c", "echo boom >&2; exit 3"])).expect_err("fails");
        let message = format!("{error:#}");
        assert!(message.contains("\"sh\""), "{message}");
        assert!(message.contains("boom"), "{message}");
        assert!(message.contains("exit status: 3"), "{message}");
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail("a", 5), "a");
    }

    #[test]
    fn which_finds_sh_and_not_a_made_up_name() {
        assert!(which("sh").is_some());
        assert!(which("strata-no-such-program").is_none());
    }
}
