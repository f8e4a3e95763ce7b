//! The real Apache Superset 6.1.0, run as a pod would run it, for tests of the operator's
//! rendered `superset_config.py` and pod commands.
//!
//! `cargo xtask test` provisions a venv with Superset (and no database driver) and exports
//! it as [`SUPERSET_VENV`]. A [`PodEnv`] is the environment of one pod: a clean one (no
//! variable of the test process leaks in) with the venv's `bin` first on `PATH` like the
//! image's `/app/.venv`, `PYTHONPATH` = the config directory (the image's `/app/pythonpath`)
//! followed by each driver wheel file itself (zipimport), and `SUPERSET_HOME` = `HOME` =
//! a fresh temporary directory, which is also the working directory. Everything else, such
//! as `SUPERSET_SECRET_KEY` and `SUPERSET__SQLALCHEMY_DATABASE_URI`, the test adds with
//! [`PodEnv::var`].
//!
//! - [`run`] runs `superset <args>` to completion (`db upgrade`, `init`,
//!   `fab create-admin …`); [`PodEnv::command`] runs anything else, such as a rendered
//!   `sh -c` script, in the same environment;
//! - [`Gunicorn`] is the web server started with the flags of the image's
//!   `run-server.sh` except statsd ([`gunicorn_args`]), stopped by PID on drop; its
//!   [`Gunicorn::get`] and [`Gunicorn::post_json`] speak plain HTTP/1.1 to it.
//!
//! ```no_run
//! use strata_testing::{postgres::ThrowawayPostgres, superset::{self, Gunicorn, PodEnv}};
//! let postgres = ThrowawayPostgres::start("127.0.0.1").expect("PostgreSQL starts");
//! let env = PodEnv::new(std::path::Path::new("config"), &superset::wheels_in("wheels".as_ref()))
//!     .var("SUPERSET_SECRET_KEY", "a-test-key")
//!     .var("SUPERSET__SQLALCHEMY_DATABASE_URI", postgres.url_pg8000());
//! assert!(superset::run(&["db", "upgrade"], &env).status.success());
//! let web = Gunicorn::start("127.0.0.1", 8088, &env, &[]).expect("serves /health");
//! assert_eq!(web.get("/health").expect("answers").body, "OK");
//! ```

use std::{
    collections::BTreeMap,
    ffi::OsString,
    fs,
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    thread,
    time::{Duration, Instant},
};

#[cfg(test)]
use crate::http::parse_response;
pub use crate::http::{REQUEST_TIMEOUT, Response, request};
use crate::{
    postgres::{stop, tail},
    tools::{self, SUPERSET_VENV},
};

/// How long gunicorn may take until `/health` answers `OK`.
pub const START_TIMEOUT: Duration = Duration::from_secs(90);
/// gunicorn's default graceful timeout is 30 s; SIGKILL follows after this.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(35);

/// The environment of one Superset pod; see the module docs.
#[derive(Debug)]
pub struct PodEnv {
    venv: PathBuf,
    vars: BTreeMap<String, OsString>,
    home: tempfile::TempDir,
}

impl PodEnv {
    /// A pod whose `superset_config.py` is in `config_dir` and whose extra Python packages
    /// are the `wheels` files, with the provisioned venv.
    ///
    /// # Panics
    ///
    /// When [`SUPERSET_VENV`] is not set or no temporary directory can be made.
    pub fn new(config_dir: &Path, wheels: &[PathBuf]) -> Self {
        let venv = tools::tool(SUPERSET_VENV);
        let home = tempfile::Builder::new()
            .prefix("strata-superset-home-")
            .tempdir()
            .expect("a temporary SUPERSET_HOME");
        let python_path = std::env::join_paths(
            std::iter::once(config_dir.to_path_buf()).chain(wheels.iter().cloned()),
        )
        .expect("PYTHONPATH entries contain no ':'");
        let path = std::env::join_paths([venv.join("bin"), "/usr/bin".into(), "/bin".into()])
            .expect("PATH entries contain no ':'");
        let vars = BTreeMap::from([
            ("PATH".to_owned(), path),
            ("PYTHONPATH".to_owned(), python_path),
            ("SUPERSET_HOME".to_owned(), home.path().into()),
            ("HOME".to_owned(), home.path().into()),
            ("LANG".to_owned(), "C.UTF-8".into()),
            ("PYTHONUNBUFFERED".to_owned(), "1".into()),
        ]);
        Self { venv, vars, home }
    }

    /// Adds or replaces one variable.
    #[must_use]
    pub fn var(mut self, name: &str, value: impl Into<OsString>) -> Self {
        self.vars.insert(name.to_owned(), value.into());
        self
    }

    /// The variables a child gets, and nothing else.
    pub fn vars(&self) -> &BTreeMap<String, OsString> {
        &self.vars
    }

    /// `SUPERSET_HOME`, the working directory.
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// The venv (`bin/superset`, `bin/gunicorn`).
    pub fn venv(&self) -> &Path {
        &self.venv
    }

    /// `program` (searched on the pod's `PATH` when it has no `/`) with exactly this
    /// environment and the home as working directory; stdin is closed.
    pub fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command
            .env_clear()
            .envs(&self.vars)
            .current_dir(self.home.path())
            .stdin(Stdio::null());
        command
    }
}

/// Runs `superset <args>` to completion in `env` and returns what it printed.
///
/// # Panics
///
/// When the program cannot be started.
pub fn run(args: &[&str], env: &PodEnv) -> Output {
    env.command("superset")
        .args(args)
        .output()
        .unwrap_or_else(|error| panic!("cannot start superset {args:?}: {error}"))
}

/// The exit status and the last lines of both streams, for assertion messages.
pub fn describe(output: &Output) -> String {
    format!(
        "{}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        output.status,
        tail(&String::from_utf8_lossy(&output.stdout), 20),
        tail(&String::from_utf8_lossy(&output.stderr), 30)
    )
}

/// The `.whl` files in `dir`, sorted, for [`PodEnv::new`].
///
/// # Panics
///
/// When `dir` cannot be read.
pub fn wheels_in(dir: &Path) -> Vec<PathBuf> {
    let entries = fs::read_dir(dir).unwrap_or_else(|error| panic!("{}: {error}", dir.display()));
    let mut wheels: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "whl"))
        .collect();
    wheels.sort();
    wheels
}

/// gunicorn's arguments as the image's `run-server.sh` passes them in 6.1.0, bound to
/// `address:port`, without `--statsd-host` (it logs a traceback on every request when no
/// statsd listens).
pub fn gunicorn_args(address: &str, port: u16) -> Vec<String> {
    [
        "--bind",
        &format!("{address}:{port}"),
        "--workers",
        "1",
        "--worker-class",
        "gthread",
        "--threads",
        "20",
        "--timeout",
        "60",
        "--keep-alive",
        "2",
        "--limit-request-line",
        "0",
        "--limit-request-field_size",
        "0",
        "superset.app:create_app()",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// A running Superset web server; SIGTERM by PID on drop (SIGKILL after [`STOP_TIMEOUT`]).
#[derive(Debug)]
pub struct Gunicorn {
    child: Child,
    address: String,
    port: u16,
    log_path: PathBuf,
    _log_dir: tempfile::TempDir,
}

impl Gunicorn {
    /// Starts the venv's gunicorn with [`gunicorn_args`] followed by `extra` and waits until
    /// `/health` answers `OK`.
    pub fn start(address: &str, port: u16, env: &PodEnv, extra: &[&str]) -> Result<Self, String> {
        let mut command = env.command("gunicorn");
        command.args(gunicorn_args(address, port)).args(extra);
        let mut web = Self::spawn(command, address, port)?;
        web.wait_until_healthy(START_TIMEOUT)?;
        Ok(web)
    }

    /// Starts `command`, which must end up serving on `address:port` in the same process
    /// (a rendered `sh -c '… exec gunicorn …'` does), with its output going to a log file.
    /// Does not wait for it.
    pub fn spawn(mut command: Command, address: &str, port: u16) -> Result<Self, String> {
        let log_dir = tempfile::Builder::new()
            .prefix("strata-gunicorn-")
            .tempdir()
            .map_err(|error| format!("cannot create a log directory: {error}"))?;
        let log_path = log_dir.path().join("gunicorn.log");
        let log = fs::File::create(&log_path)
            .map_err(|error| format!("cannot create {}: {error}", log_path.display()))?;
        let log_err = log
            .try_clone()
            .map_err(|error| format!("cannot share the log file: {error}"))?;
        let child = command
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(|error| format!("cannot start {command:?}: {error}"))?;
        Ok(Self {
            child,
            address: address.to_owned(),
            port,
            log_path,
            _log_dir: log_dir,
        })
    }

    /// Polls `/health` until it answers `200 OK` with body `OK`; fails early when the
    /// process exits. Returns how long it waited.
    pub fn wait_until_healthy(&mut self, timeout: Duration) -> Result<Duration, String> {
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "gunicorn exited with {status} before /health answered:\n{}",
                    self.log_tail()
                ));
            }
            let last = match self.get("/health") {
                Ok(answer) if answer.status == 200 && answer.body.trim() == "OK" => {
                    return Ok(started.elapsed());
                }
                Ok(answer) => format!("{} {}", answer.status, answer.body),
                Err(error) => error,
            };
            if started.elapsed() > timeout {
                return Err(format!(
                    "/health did not answer OK within {timeout:?} (last: {last}):\n{}",
                    self.log_tail()
                ));
            }
            thread::sleep(Duration::from_millis(200));
        }
    }

    /// `address:port`.
    pub fn address(&self) -> String {
        format!("{}:{}", self.address, self.port)
    }

    /// The master's PID.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `GET path`.
    pub fn get(&self, path: &str) -> Result<Response, String> {
        request(&self.address(), "GET", path, &[], None)
    }

    /// `GET path` with more headers, such as `("Authorization", "Bearer …")`.
    pub fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> Result<Response, String> {
        request(&self.address(), "GET", path, headers, None)
    }

    /// `POST path` with `body` as JSON.
    pub fn post_json(&self, path: &str, body: &serde_json::Value) -> Result<Response, String> {
        let body = body.to_string();
        request(
            &self.address(),
            "POST",
            path,
            &[("Content-Type", "application/json")],
            Some(&body),
        )
    }

    /// SIGTERM by PID, then waits up to [`STOP_TIMEOUT`]; returns how long gunicorn took to
    /// exit, or an error with the log tail when it had to be SIGKILLed.
    pub fn stop(&mut self) -> Result<Duration, String> {
        stop(&mut self.child, "-TERM", STOP_TIMEOUT).ok_or_else(|| {
            format!(
                "gunicorn did not stop within {STOP_TIMEOUT:?} of SIGTERM:\n{}",
                self.log_tail()
            )
        })
    }

    /// The last lines of the server's output, for failure messages.
    pub fn log_tail(&self) -> String {
        tail(&fs::read_to_string(&self.log_path).unwrap_or_default(), 40)
    }
}

impl Drop for Gunicorn {
    fn drop(&mut self) {
        if self.stop().is_err() {
            eprintln!("gunicorn (pid {}) needed SIGKILL", self.child.id());
        }
    }
}

#[cfg(test)]
mod tests;
