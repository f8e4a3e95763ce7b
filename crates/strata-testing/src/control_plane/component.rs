//! One process of the control plane: started with its output in a log file, checked
//! for being alive, and stopped by its PID.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use super::ControlPlaneError;
use crate::parent_death;
use crate::postgres::{stop, tail};

/// How long a component may take to exit after SIGTERM before SIGKILL.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// A running component.
#[derive(Debug)]
pub struct Component {
    name: &'static str,
    child: Child,
    log: PathBuf,
}

impl Component {
    /// Starts `binary` with `args`; stdout and stderr go to `<dir>/<name>.log`. The
    /// process stays in the caller's process group, so Ctrl-C in a terminal reaches it
    /// too, and it dies with the thread that started it ([`crate::parent_death`]), so
    /// a SIGKILL of the test or sandbox leaves no component behind.
    pub fn start(
        name: &'static str,
        binary: &Path,
        args: &[String],
        dir: &Path,
    ) -> Result<Self, ControlPlaneError> {
        let log = dir.join(format!("{name}.log"));
        let file = fs::File::create(&log).map_err(|source| ControlPlaneError::Io {
            doing: format!("creating {}", log.display()),
            source,
        })?;
        let err = file.try_clone().map_err(|source| ControlPlaneError::Io {
            doing: format!("sharing {}", log.display()),
            source,
        })?;
        let child = parent_death::command(binary)
            .args(args)
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err)
            .spawn()
            .map_err(|source| ControlPlaneError::Io {
                doing: format!("starting {}", binary.display()),
                source,
            })?;
        Ok(Self { name, child, log })
    }

    /// The component's name, such as `kube-apiserver`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its log file.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// The last `lines` lines of its log.
    pub fn log_tail(&self, lines: usize) -> String {
        tail(&fs::read_to_string(&self.log).unwrap_or_default(), lines)
    }

    /// An error naming the component and its last log lines if it has exited.
    pub fn check_alive(&mut self) -> Result<(), ControlPlaneError> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(ControlPlaneError::Died {
                component: self.name,
                status: status.to_string(),
                log_tail: self.log_tail(30),
            }),
            Err(source) => Err(ControlPlaneError::Io {
                doing: format!("checking {}", self.name),
                source,
            }),
        }
    }

    /// SIGTERM by PID, then SIGKILL after `STOP_TIMEOUT` (10 s); always reaped.
    pub fn stop(&mut self) {
        stop(&mut self.child, "-TERM", STOP_TIMEOUT);
    }
}

impl Drop for Component {
    fn drop(&mut self) {
        self.stop();
    }
}
