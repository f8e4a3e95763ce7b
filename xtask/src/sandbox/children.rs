//! The sandbox's child processes (operators, ZooKeeper): started with their output in a log file, stopped by their PID.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Child;

use anyhow::{Context, bail};

/// The operator processes; dropping them stops each by its PID.
pub(super) struct Children(pub(super) Vec<(String, Child, PathBuf)>);

impl Children {
    /// Fails with the last log lines of the first child that has exited.
    pub(super) fn check(&mut self) -> anyhow::Result<()> {
        for (name, child, log) in &mut self.0 {
            if let Some(status) = child.try_wait()? {
                bail!(
                    "{name} exited ({status}); the last lines of {}:\n{}",
                    log.display(),
                    last_lines(log, 20)
                );
            }
        }
        Ok(())
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        for (name, child, _) in &mut self.0 {
            if child.kill().is_ok() {
                let _ = child.wait();
                eprintln!("    stopped {name} (pid {})", child.id());
            }
        }
    }
}

pub(super) fn last_lines(path: &Path, count: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(count)..].join("\n")
}

/// `path`, truncated, for a child's output.
pub(super) fn log_file(path: &Path) -> anyhow::Result<fs::File> {
    fs::File::create(path).with_context(|| format!("creating {}", path.display()))
}
