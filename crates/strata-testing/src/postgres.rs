//! A real PostgreSQL server for one test: a fresh cluster in a temporary directory,
//! listening on a loopback address and a free port, gone when the value is dropped.
//!
//! `cargo xtask test` installs the Debian package `postgresql` and exports the directory of
//! its server programs as [`POSTGRESQL_BIN`]. [`ThrowawayPostgres::start`]:
//!
//! 1. runs `initdb` into a temporary directory, as an unprivileged user when this is root
//!    (`initdb` and `postgres` refuse root): the package's `postgres` user, or a system
//!    user [`FALLBACK_OS_USER`] created with `useradd` when that is missing. The switch is
//!    `setpriv`, which execs, so the child's PID is the server's own;
//! 2. replaces `pg_hba.conf`: `trust` on the Unix socket, which lives inside the private
//!    temporary directory, and `scram-sha-256` for TCP from `127.0.0.0/8`, so clients
//!    over TCP (Superset) must present the password;
//! 3. creates the role [`USER`] with [`PASSWORD`] and its database [`DATABASE`] in
//!    single-user mode, before any server listens;
//! 4. starts `postgres -D … -k <socket dir> -h <address> -p <free port>` with `fsync=off`
//!    (a throwaway cluster needs no durability) and waits until `pg_isready` says it
//!    accepts connections.
//!
//! Drop sends SIGINT, PostgreSQL's *fast* shutdown (its SIGTERM is the *smart* shutdown,
//! which waits for every client to disconnect), waits up to [`STOP_TIMEOUT`], then SIGKILLs.
//!
//! ```no_run
//! let postgres = strata_testing::postgres::ThrowawayPostgres::start("127.0.0.1")
//!     .expect("PostgreSQL starts");
//! assert!(postgres.url_pg8000().starts_with("postgresql+pg8000://"));
//! assert_eq!(postgres.query("SELECT 1").expect("runs"), "1");
//! ```

use std::{
    fs,
    io::Write,
    net::TcpListener,
    os::unix::fs::chown,
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    sync::atomic::{AtomicU32, Ordering},
    thread,
    time::{Duration, Instant},
};

use crate::tools::{self, POSTGRESQL_BIN};

/// The login role the tests' clients use; it owns [`DATABASE`] and is no superuser.
pub const USER: &str = "strata";
/// The role's password. It has the characters a database URI must encode, `%` among
/// them, so that a client that forgets to, or decodes the URI once too often (as the
/// reliability review, I-4, feared Superset's migrations do), fails its login. It has
/// no `'`, which the SQL that creates the role would need to double.
pub const PASSWORD: &str = "Strata50%off@x/?#:";
/// The database the role owns.
pub const DATABASE: &str = "strata";
/// The cluster's superuser, reachable only over the private Unix socket.
const SUPERUSER: &str = "postgres";
/// The OS user the cluster runs as when this is root; the Debian package creates it.
const OS_USER: &str = "postgres";
/// The system user created when the Debian package's `postgres` user does not exist.
pub const FALLBACK_OS_USER: &str = "strata-postgres";
/// How long the server may take to accept connections.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a fast shutdown may take before SIGKILL.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// A running throwaway cluster; see the module docs.
#[derive(Debug)]
pub struct ThrowawayPostgres {
    child: Child,
    host: String,
    port: u16,
    bin: PathBuf,
    socket_dir: PathBuf,
    log_path: PathBuf,
    started_in: Duration,
    // Last: removed after the server has stopped.
    _dir: tempfile::TempDir,
}

impl ThrowawayPostgres {
    /// Creates a cluster and starts it on `address` (a `127.0.0.x` address) and a free port.
    ///
    /// # Panics
    ///
    /// When [`POSTGRESQL_BIN`] is not set.
    pub fn start(address: &str) -> Result<Self, String> {
        let bin = tools::tool(POSTGRESQL_BIN);
        let started = Instant::now();
        let dir = tempfile::Builder::new()
            .prefix("strata-postgres-")
            .tempdir()
            .map_err(|error| format!("cannot create a temporary directory: {error}"))?;
        let owner = Owner::for_this_process()?;
        let data = dir.path().join("data");
        let socket_dir = dir.path().join("socket");
        fs::create_dir(&socket_dir)
            .map_err(|error| format!("cannot create socket dir: {error}"))?;
        owner.take(dir.path())?;
        owner.take(&socket_dir)?;

        run_checked(
            owner
                .command(&bin.join("initdb"), dir.path())
                .arg("-D")
                .arg(&data)
                .args(["-U", SUPERUSER, "--auth=trust", "-E", "UTF8"])
                .args(["--locale=C.UTF-8", "--no-sync", "--no-instructions"]),
            None,
        )?;
        let hba = data.join("pg_hba.conf");
        fs::write(
            &hba,
            "local all all trust\nhost all all 127.0.0.0/8 scram-sha-256\n",
        )
        .map_err(|error| format!("cannot write {}: {error}", hba.display()))?;
        owner.take(&hba)?;
        // In single-user mode each line is one command; exit_on_error turns a failed
        // statement into a non-zero exit.
        let setup = format!(
            "CREATE ROLE {USER} LOGIN PASSWORD '{PASSWORD}';\n\
             CREATE DATABASE {DATABASE} OWNER {USER};\n"
        );
        run_checked(
            owner
                .command(&bin.join("postgres"), dir.path())
                .args(["--single", "-c", "exit_on_error=true", "-D"])
                .arg(&data)
                .arg(SUPERUSER),
            Some(&setup),
        )?;

        let port = free_port(address)?;
        let log_path = dir.path().join("postgres.log");
        let log = fs::File::create(&log_path)
            .map_err(|error| format!("cannot create {}: {error}", log_path.display()))?;
        let log_err = log
            .try_clone()
            .map_err(|error| format!("cannot share the log file: {error}"))?;
        let child = owner
            .command(&bin.join("postgres"), dir.path())
            .arg("-D")
            .arg(&data)
            .arg("-k")
            .arg(&socket_dir)
            .args(["-h", address, "-p", &port.to_string()])
            .args(["-c", "fsync=off", "-c", "full_page_writes=off"])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(|error| format!("cannot start postgres: {error}"))?;
        let mut postgres = Self {
            child,
            host: address.to_owned(),
            port,
            bin,
            socket_dir,
            log_path,
            started_in: Duration::ZERO,
            _dir: dir,
        };
        postgres.wait_until_ready()?;
        postgres.started_in = started.elapsed();
        Ok(postgres)
    }

    /// The address the server listens on, such as `127.0.0.1`.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The database ([`DATABASE`]).
    pub fn database(&self) -> &str {
        DATABASE
    }

    /// The login role ([`USER`]).
    pub fn user(&self) -> &str {
        USER
    }

    /// The role's password ([`PASSWORD`]).
    pub fn password(&self) -> &str {
        PASSWORD
    }

    /// The SQLAlchemy URI for the pure-Python pg8000 driver, with the password
    /// percent-encoded: `postgresql+pg8000://strata:…@127.0.0.x:port/strata`.
    pub fn url_pg8000(&self) -> String {
        let password =
            percent_encoding::utf8_percent_encode(PASSWORD, percent_encoding::NON_ALPHANUMERIC);
        format!(
            "postgresql+pg8000://{USER}:{password}@{}:{}/{DATABASE}",
            self.host, self.port
        )
    }

    /// How long `initdb`, setup and start took together.
    pub fn started_in(&self) -> Duration {
        self.started_in
    }

    /// Runs `sql` in [`DATABASE`] as the superuser, over the private Unix socket, with
    /// `psql -At`: rows on lines, columns separated by `|`, no headers.
    pub fn query(&self, sql: &str) -> Result<String, String> {
        let output = Command::new(self.bin.join("psql"))
            .arg("-h")
            .arg(&self.socket_dir)
            .args([
                "-p",
                &self.port.to_string(),
                "-U",
                SUPERUSER,
                "-d",
                DATABASE,
            ])
            .args(["-X", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .stdin(Stdio::null())
            .output()
            .map_err(|error| format!("cannot start psql: {error}"))?;
        if !output.status.success() {
            return Err(format!(
                "psql -c {sql:?} failed with {}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    }

    /// The last lines of the server's log, for failure messages.
    pub fn log_tail(&self) -> String {
        tail(&fs::read_to_string(&self.log_path).unwrap_or_default(), 30)
    }

    fn wait_until_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "postgres exited with {status} while starting:\n{}",
                    self.log_tail()
                ));
            }
            let ready = Command::new(self.bin.join("pg_isready"))
                .args(["-q", "-h", &self.host, "-p", &self.port.to_string()])
                .args(["-d", DATABASE, "-U", USER])
                .stdin(Stdio::null())
                .status()
                .map_err(|error| format!("cannot start pg_isready: {error}"))?;
            if ready.success() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "postgres did not accept connections within {START_TIMEOUT:?}:\n{}",
                    self.log_tail()
                ));
            }
            thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for ThrowawayPostgres {
    fn drop(&mut self) {
        stop(&mut self.child, "-INT", STOP_TIMEOUT);
    }
}

/// Sends `signal` to the child by PID, waits up to `timeout`, then SIGKILLs; always reaps.
/// Returns how long the child took to exit, or `None` when it had to be killed.
pub(crate) fn stop(child: &mut Child, signal: &str, timeout: Duration) -> Option<Duration> {
    if matches!(child.try_wait(), Ok(Some(_))) {
        return Some(Duration::ZERO);
    }
    let started = Instant::now();
    let _sent = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .stdin(Stdio::null())
        .status();
    while started.elapsed() < timeout {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return Some(started.elapsed());
        }
        thread::sleep(Duration::from_millis(50));
    }
    if let Err(error) = child.kill() {
        eprintln!("killing pid {}: {error}", child.id());
    }
    if let Err(error) = child.wait() {
        eprintln!("reaping pid {}: {error}", child.id());
    }
    None
}

/// The last `count` lines of `text`.
pub(crate) fn tail(text: &str, count: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(count)..].join("\n")
}

/// Who the cluster's files and processes belong to.
#[derive(Debug, Clone, Copy)]
enum Owner {
    /// Not root: run as ourselves.
    Myself,
    /// Root: switch to this unprivileged user and group.
    User { uid: u32, gid: u32 },
}

impl Owner {
    fn for_this_process() -> Result<Self, String> {
        if id(&["-u"])? != 0 {
            return Ok(Self::Myself);
        }
        let name = if id(&["-u", OS_USER]).is_ok() {
            OS_USER
        } else {
            ensure_fallback_user()?;
            FALLBACK_OS_USER
        };
        Ok(Self::User {
            uid: id(&["-u", name])?,
            gid: id(&["-g", name])?,
        })
    }

    /// Gives `path` to the user (no-op when not root).
    fn take(self, path: &Path) -> Result<(), String> {
        match self {
            Self::Myself => Ok(()),
            Self::User { uid, gid } => chown(path, Some(uid), Some(gid))
                .map_err(|error| format!("cannot chown {}: {error}", path.display())),
        }
    }

    /// `program` as the user, in `cwd`, with a minimal environment.
    fn command(self, program: &Path, cwd: &Path) -> Command {
        let mut command = match self {
            Self::Myself => Command::new(program),
            Self::User { uid, gid } => {
                let mut setpriv = Command::new("setpriv");
                setpriv
                    .arg(format!("--reuid={uid}"))
                    .arg(format!("--regid={gid}"))
                    .args(["--clear-groups", "--"])
                    .arg(program);
                setpriv
            }
        };
        command
            .current_dir(cwd)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("LC_ALL", "C.UTF-8")
            .env("HOME", cwd);
        command
    }
}

/// Creates [`FALLBACK_OS_USER`] as a system user without a home or login shell.
fn ensure_fallback_user() -> Result<(), String> {
    if id(&["-u", FALLBACK_OS_USER]).is_ok() {
        return Ok(());
    }
    run_checked(
        Command::new("useradd")
            .args(["--system", "--user-group", "--no-create-home"])
            .args(["--shell", "/usr/sbin/nologin", FALLBACK_OS_USER]),
        None,
    )
    .map(drop)
}

/// A number printed by `id <args>`.
fn id(args: &[&str]) -> Result<u32, String> {
    let output = run_checked(Command::new("id").args(args), None)?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.trim()
        .parse()
        .map_err(|error| format!("id {args:?} printed {text:?}: {error}"))
}

/// Runs `command` to completion with `input` on stdin; a failure carries its output.
fn run_checked(command: &mut Command, input: Option<&str>) -> Result<Output, String> {
    let mut child = command
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| format!("cannot start {command:?}: {error}"))?;
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin
            .write_all(input.as_bytes())
            .map_err(|error| format!("cannot write to {command:?}: {error}"))?;
    }
    let output = child
        .wait_with_output()
        .map_err(|error| format!("waiting for {command:?}: {error}"))?;
    if !output.status.success() {
        return Err(format!(
            "{command:?} failed with {}:\n{}{}",
            output.status,
            tail(&String::from_utf8_lossy(&output.stdout), 20),
            tail(&String::from_utf8_lossy(&output.stderr), 20)
        ));
    }
    Ok(output)
}

/// The lowest port [`free_port`] chooses: above the well-known and registered
/// ports most services take.
const LOWEST_CHOSEN_PORT: u32 = 10_000;

/// A port on `address` that was free a moment ago, for a server the test starts next.
///
/// It is chosen below the kernel's ephemeral range (`ip_local_port_range`, 32768 and up
/// by default), at a pseudo-random place that differs per process and per call. A port
/// from `bind(:0)` lies inside that range, where every outgoing connection of every
/// process takes its source port: a control plane that starts while another one runs
/// lost its port to such a connection between the choice and its own bind. Below the
/// range only an explicit bind can take the port.
pub fn free_port(address: &str) -> Result<u16, String> {
    static CALLS: AtomicU32 = AtomicU32::new(0);
    let ephemeral_start = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768);
    let span = ephemeral_start.saturating_sub(LOWEST_CHOSEN_PORT).max(1);
    let clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.subsec_nanos());
    let seed = std::process::id().wrapping_mul(7_919) ^ clock;
    for _ in 0..span.min(2_000) {
        // A prime stride visits every port of the span before it repeats one.
        let step = CALLS.fetch_add(1, Ordering::Relaxed).wrapping_mul(104_729);
        let candidate = LOWEST_CHOSEN_PORT + seed.wrapping_add(step) % span;
        let Ok(port) = u16::try_from(candidate) else {
            continue;
        };
        if TcpListener::bind((address, port)).is_ok() {
            return Ok(port);
        }
    }
    let listener = TcpListener::bind((address, 0))
        .map_err(|error| format!("cannot bind {address}:0: {error}"))?;
    listener
        .local_addr()
        .map(|local| local.port())
        .map_err(|error| format!("no local address on {address}: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[ignore = "needs PostgreSQL (STRATA_POSTGRESQL_BIN); run by cargo xtask test"]
    fn a_throwaway_cluster_takes_passwords_over_tcp_and_is_gone_after_drop() {
        let postgres = ThrowawayPostgres::start("127.0.0.3").expect("PostgreSQL starts");
        eprintln!("postgres started in {:?}", postgres.started_in());
        assert_eq!(
            postgres.query("SELECT current_database()").expect("query"),
            DATABASE
        );
        let tcp = |password: &str| {
            Command::new(postgres.bin.join("psql"))
                .args(["-X", "-At", "-h", postgres.host(), "-p"])
                .arg(postgres.port().to_string())
                .args(["-U", USER, "-d", DATABASE, "-c", "SELECT current_user"])
                .env("PGPASSWORD", password)
                .stdin(Stdio::null())
                .output()
                .expect("psql runs")
        };
        let good = tcp(PASSWORD);
        assert!(good.status.success(), "{}", postgres.log_tail());
        assert_eq!(String::from_utf8_lossy(&good.stdout).trim(), USER);
        let bad = tcp("wrong");
        assert!(!bad.status.success(), "a wrong password must be refused");
        assert!(
            String::from_utf8_lossy(&bad.stderr).contains("password authentication failed"),
            "{}",
            String::from_utf8_lossy(&bad.stderr)
        );

        let address = format!("{}:{}", postgres.host(), postgres.port());
        let dir = postgres._dir.path().to_owned();
        drop(postgres);
        assert!(
            std::net::TcpStream::connect(&address).is_err(),
            "still listening"
        );
        assert!(!dir.exists(), "{} was not removed", dir.display());
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
    }
}
