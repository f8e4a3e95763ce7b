//! A real ZooKeeper server process for tests, stopped by PID when its guard is dropped.

use std::fmt;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use strata_testing::tools::{self, JAVA, MissingTool, ZOOKEEPER_CLASSPATH};

/// Why a test server could not be provided.
#[derive(thiserror::Error)]
pub enum HarnessError {
    /// A tool variable is not set. Tests fail instead of skipping, so a forgotten variable
    /// can never pass as a green run.
    #[error(transparent)]
    MissingTool(#[from] MissingTool),
    /// A file or process operation failed.
    #[error("{context}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The server process ended on its own.
    #[error(
        "ZooKeeper {name} exited with {status} while waiting for it to be {during}; log tail:\n{log_tail}"
    )]
    Exited {
        /// The server's name in the test.
        name: String,
        /// How it ended.
        status: ExitStatus,
        /// The state the harness was waiting for.
        during: &'static str,
        /// The end of its log.
        log_tail: String,
    },
    /// The server did not reach the expected state in time.
    #[error(
        "ZooKeeper {name} was not {expected} after {waited:?} (last answer: {last_answer:?}); \
         log tail:\n{log_tail}"
    )]
    NotReady {
        /// The server's name in the test.
        name: String,
        /// The state waited for.
        expected: &'static str,
        /// How long we waited.
        waited: Duration,
        /// The last four-letter-word answer or connection error.
        last_answer: String,
        /// The end of its log.
        log_tail: String,
    },
    /// `zookeeper-operator render` failed.
    #[error("rendering {manifest} failed with {status}: {stderr}")]
    Render {
        /// The manifest given to `render -f`.
        manifest: PathBuf,
        /// How the command ended.
        status: ExitStatus,
        /// What it printed to stderr.
        stderr: String,
    },
    /// The rendered YAML could not be parsed.
    #[error("render printed YAML that does not parse")]
    Yaml(#[from] serde_yaml_ng::Error),
    /// A rendered document does not deserialise into its Kubernetes type.
    #[error("the rendered {kind} does not deserialise")]
    Typed {
        /// The kind being read.
        kind: &'static str,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// The rendered objects lack something a pod would need to start.
    #[error("rendered objects: {0}")]
    Rendered(String),
    /// The myid init script failed.
    #[error("myid script for {hostname} failed with {status}: {stderr}")]
    MyidScript {
        /// The simulated pod name.
        hostname: String,
        /// How the script ended.
        status: ExitStatus,
        /// What it printed to stderr.
        stderr: String,
    },
    /// The myid written for a pod does not belong to that pod's `server.N` line in
    /// `zoo.cfg`: the server would claim another server's identity.
    #[error("pod {pod} got myid {myid:?}, but zoo.cfg names {fqdn} in {line:?}")]
    MyidMismatch {
        /// The simulated pod name.
        pod: String,
        /// What the script wrote.
        myid: String,
        /// The pod's DNS name.
        fqdn: String,
        /// The `server.<myid>` line, or `None` if there is none.
        line: Option<String>,
    },
}

/// Tests print returned errors with `Debug`; showing the message (and its sources) keeps the
/// server's log tail readable instead of one escaped line.
impl fmt::Debug for HarnessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")?;
        let mut source = std::error::Error::source(self);
        while let Some(error) = source {
            write!(f, "\ncaused by: {error}")?;
            source = error.source();
        }
        Ok(())
    }
}

/// Wraps an io error with what was being done.
pub fn io_context(context: impl Into<String>) -> impl FnOnce(io::Error) -> HarnessError {
    let context = context.into();
    move |source| HarnessError::Io { context, source }
}

/// Sends a four-letter word and returns the whole answer.
pub fn four_letter_word(address: SocketAddr, word: &str, timeout: Duration) -> io::Result<String> {
    let mut stream = TcpStream::connect_timeout(&address, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.write_all(word.as_bytes())?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer)
}

/// The `Mode:` line of a `srvr` answer (`leader`, `follower`, `standalone`), if serving.
pub fn mode_of(srvr_answer: &str) -> Option<&str> {
    srvr_answer
        .lines()
        .find_map(|line| line.strip_prefix("Mode: "))
        .map(str::trim)
}

/// A running ZooKeeper server. Dropping it kills the process by PID and waits for it.
#[derive(Debug)]
pub struct ZkServer {
    name: String,
    child: Child,
    client_address: SocketAddr,
    log_path: PathBuf,
}

impl ZkServer {
    /// Starts `QuorumPeerMain` on `config_file` and waits until it answers `ruok` on
    /// `client_address`. `hosts_file` (in /etc/hosts syntax) replaces DNS for the JVM, so
    /// server lines can keep their pod FQDNs while pointing at loopback addresses.
    pub fn start(
        name: &str,
        config_file: &Path,
        client_address: SocketAddr,
        hosts_file: Option<&Path>,
    ) -> Result<Self, HarnessError> {
        let mut server = Self::spawn(name, config_file, client_address, hosts_file)?;
        server.wait_until_ok(Duration::from_secs(30))?;
        Ok(server)
    }

    fn spawn(
        name: &str,
        config_file: &Path,
        client_address: SocketAddr,
        hosts_file: Option<&Path>,
    ) -> Result<Self, HarnessError> {
        let java = tools::required(JAVA)?;
        let classpath = tools::required(ZOOKEEPER_CLASSPATH)?;
        let dir = config_file.parent().unwrap_or(Path::new("."));
        let log_path = dir.join("server.log");
        let log = File::create(&log_path).map_err(io_context(format!(
            "creating log file {}",
            log_path.display()
        )))?;
        let log_err = log
            .try_clone()
            .map_err(io_context("duplicating the log file handle"))?;
        let mut command = Command::new(java);
        command
            .args(["-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
            .arg("-Dorg.slf4j.simpleLogger.showDateTime=true");
        if let Some(hosts) = hosts_file {
            command.arg(format!("-Djdk.net.hosts.file={}", hosts.display()));
        }
        let child = command
            .args(["-cp", &classpath])
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(config_file)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(io_context(format!("starting java for ZooKeeper {name}")))?;
        Ok(Self {
            name: name.to_owned(),
            child,
            client_address,
            log_path,
        })
    }

    /// Where clients connect.
    pub fn client_address(&self) -> SocketAddr {
        self.client_address
    }

    /// Sends a four-letter word with a short timeout.
    pub fn four_letter_word(&self, word: &str) -> io::Result<String> {
        four_letter_word(self.client_address, word, Duration::from_secs(2))
    }

    /// Waits until the server answers `ruok` with `imok`: the process runs and its client
    /// port is open, though an ensemble member may still be electing a leader.
    pub fn wait_until_ok(&mut self, timeout: Duration) -> Result<(), HarnessError> {
        let start = Instant::now();
        loop {
            self.ensure_running("answering ruok")?;
            let last_answer = match self.four_letter_word("ruok") {
                Ok(answer) if answer == "imok" => return Ok(()),
                Ok(answer) => answer,
                Err(error) => error.to_string(),
            };
            if start.elapsed() > timeout {
                return Err(self.not_ready("answering ruok", start.elapsed(), last_answer));
            }
            thread::sleep(Duration::from_millis(100));
        }
    }

    /// The server's mode from `srvr` (`leader`, `follower`, `standalone`), or the answer or
    /// connection error explaining why it does not serve yet.
    pub fn mode(&self) -> Result<String, String> {
        match self.four_letter_word("srvr") {
            Ok(answer) => mode_of(&answer).map(str::to_owned).ok_or(answer),
            Err(error) => Err(error.to_string()),
        }
    }

    /// Fails with the exit status and log tail if the process has ended.
    pub fn ensure_running(&mut self, during: &'static str) -> Result<(), HarnessError> {
        let exited = self
            .child
            .try_wait()
            .map_err(io_context(format!("checking ZooKeeper {}", self.name)))?;
        match exited {
            None => Ok(()),
            Some(status) => Err(HarnessError::Exited {
                name: self.name.clone(),
                status,
                during,
                log_tail: self.log_tail(),
            }),
        }
    }

    /// The error for a server that did not reach `expected` in time.
    pub fn not_ready(
        &self,
        expected: &'static str,
        waited: Duration,
        last_answer: String,
    ) -> HarnessError {
        HarnessError::NotReady {
            name: self.name.clone(),
            expected,
            waited,
            last_answer,
            log_tail: self.log_tail(),
        }
    }

    /// The last lines of the server's log, for failure messages.
    pub fn log_tail(&self) -> String {
        let log = fs::read_to_string(&self.log_path).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

impl Drop for ZkServer {
    fn drop(&mut self) {
        // Kills by PID (SIGKILL) and reaps the process, so no server outlives its test.
        if let Err(error) = self.child.kill() {
            eprintln!(
                "killing ZooKeeper {} (pid {}): {error}",
                self.name,
                self.child.id()
            );
        }
        if let Err(error) = self.child.wait() {
            eprintln!(
                "reaping ZooKeeper {} (pid {}): {error}",
                self.name,
                self.child.id()
            );
        }
    }
}
