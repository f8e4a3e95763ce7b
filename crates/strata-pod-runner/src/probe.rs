//! Probes as the kubelet runs them: TCP and HTTP against the pod's address, from inside
//! the pod's network (the host's own network cannot reach the pods, see
//! [`crate::network`]), and exec probes inside the container, through the helper. A
//! probe that answers late counts as a failure, as one that does not answer.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use nix::sched::{CloneFlags, setns};

use crate::container::Helper;
use crate::launch::{Command, Credentials};
use crate::status::{ContainerStatus, State};

/// What a probe checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// A TCP connection to the port.
    Tcp(u16),
    /// An HTTP GET whose status is 200–399.
    Http {
        /// The port.
        port: u16,
        /// The path and query.
        path: String,
    },
    /// A command that exits 0.
    Exec(Vec<String>),
}

/// A probe with the kubelet's timing fields, defaults filled in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeSpec {
    /// What it checks.
    pub check: Check,
    /// `initialDelaySeconds`.
    pub initial_delay: Duration,
    /// `periodSeconds` (default 10).
    pub period: Duration,
    /// `timeoutSeconds` (default 1).
    pub timeout: Duration,
    /// `successThreshold` (default 1).
    pub success_threshold: u32,
    /// `failureThreshold` (default 3).
    pub failure_threshold: u32,
}

fn seconds(value: Option<i32>, default: u64) -> Duration {
    Duration::from_secs(
        value
            .and_then(|value| u64::try_from(value).ok())
            .unwrap_or(default),
    )
}

fn count(value: Option<i32>, default: u32) -> u32 {
    value
        .and_then(|value| u32::try_from(value).ok())
        .filter(|value| *value > 0)
        .unwrap_or(default)
}

impl ProbeSpec {
    /// Reads a rendered probe; a port given by name is looked up in the container's
    /// ports. Fails for what the runner cannot run (HTTPS, gRPC, a named port that
    /// does not exist).
    pub fn from_probe(probe: &Probe, container: &Container) -> Result<Self, String> {
        let check = if let Some(tcp) = &probe.tcp_socket {
            Check::Tcp(port(&tcp.port, container)?)
        } else if let Some(http) = &probe.http_get {
            if http
                .scheme
                .as_deref()
                .is_some_and(|scheme| scheme != "HTTP")
            {
                return Err(format!(
                    "HTTPS probes are not run by the pod runner ({})",
                    container.name
                ));
            }
            Check::Http {
                port: port(&http.port, container)?,
                path: http.path.clone().unwrap_or_else(|| "/".to_owned()),
            }
        } else if let Some(exec) = &probe.exec {
            Check::Exec(exec.command.clone().unwrap_or_default())
        } else {
            return Err(format!(
                "container {}: a probe with no tcpSocket, httpGet or exec",
                container.name
            ));
        };
        Ok(Self {
            check,
            initial_delay: seconds(probe.initial_delay_seconds, 0),
            period: seconds(probe.period_seconds, 10),
            timeout: seconds(probe.timeout_seconds, 1),
            success_threshold: count(probe.success_threshold, 1),
            failure_threshold: count(probe.failure_threshold, 3),
        })
    }
}

/// A container port, by number or by the name in `ports[]`.
pub fn port(port: &IntOrString, container: &Container) -> Result<u16, String> {
    let number = match port {
        IntOrString::Int(number) => Some(*number),
        IntOrString::String(name) => container
            .ports
            .iter()
            .flatten()
            .find(|candidate| candidate.name.as_deref() == Some(name.as_str()))
            .map(|candidate| candidate.container_port),
    };
    number
        .and_then(|number| u16::try_from(number).ok())
        .ok_or_else(|| format!("container {}: no port {port:?}", container.name))
}

/// Where probes of one container go.
#[derive(Clone, Debug)]
pub struct Target {
    /// The pod's network namespace.
    pub netns: PathBuf,
    /// The pod's address.
    pub address: Ipv4Addr,
    /// The helper, for exec probes.
    pub helper: Helper,
    /// The container's process.
    pub pid: u32,
    /// The container's user.
    pub user: Credentials,
    /// The container's environment (exec probes run with it).
    pub env: Vec<(String, String)>,
}

/// Runs one check; `true` when it succeeded within the timeout.
pub async fn succeeds(check: &Check, target: &Target, timeout: Duration) -> bool {
    match check {
        Check::Exec(argv) => {
            let command = Command {
                argv: argv.clone(),
                env: target.env.clone(),
                working_dir: "/".into(),
            };
            matches!(
                target
                    .helper
                    .exec_in(target.pid, &target.user, true, command, timeout)
                    .await,
                Ok(Some((0, _)))
            )
        }
        Check::Tcp(port) => in_network(target, *port, timeout, |_| Ok(true)).await,
        Check::Http { port, path } => {
            let request = format!(
                "GET {path} HTTP/1.1\r\nHost: {}:{port}\r\nUser-Agent: kube-probe/1.37\r\nAccept: */*\r\nConnection: close\r\n\r\n",
                target.address
            );
            in_network(target, *port, timeout, move |stream| {
                stream.write_all(request.as_bytes())?;
                let mut head = [0u8; 32];
                let read = stream.read(&mut head)?;
                let status = std::str::from_utf8(&head[..read])
                    .ok()
                    .and_then(|line| line.split_whitespace().nth(1))
                    .and_then(|code| code.parse::<u16>().ok());
                Ok(status.is_some_and(|code| (200..400).contains(&code)))
            })
            .await
        }
    }
}

/// Connects to the pod's `port` from a thread that joined the pod's network, and runs
/// `talk` on the connection there.
async fn in_network(
    target: &Target,
    port: u16,
    timeout: Duration,
    talk: impl FnOnce(&mut TcpStream) -> std::io::Result<bool> + Send + 'static,
) -> bool {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let netns = target.netns.clone();
    let address = SocketAddr::from((target.address, port));
    std::thread::spawn(move || {
        let outcome = std::fs::File::open(&netns)
            .ok()
            .filter(|file| setns(file, CloneFlags::CLONE_NEWNET).is_ok())
            .and_then(|_| TcpStream::connect_timeout(&address, timeout).ok())
            .and_then(|mut stream| {
                stream.set_read_timeout(Some(timeout)).ok()?;
                stream.set_write_timeout(Some(timeout)).ok()?;
                talk(&mut stream).ok()
            })
            .unwrap_or(false);
        let _ = sender.send(outcome);
    });
    tokio::time::timeout(timeout + Duration::from_millis(500), receiver)
        .await
        .is_ok_and(|outcome| outcome.unwrap_or(false))
}

/// What the probes found out about a container.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Health {
    /// A probe cannot be run as rendered.
    Unrunnable(String),
    /// The startup probe succeeded (or there is none); ready unless a readiness
    /// probe decides.
    Started {
        /// Ready at once, for a container without a readiness probe.
        ready: bool,
    },
    /// The readiness probe crossed a threshold.
    Ready(bool),
}

impl Health {
    /// Records the finding in the container's status.
    pub fn apply(&self, status: &mut ContainerStatus) {
        match self {
            Self::Unrunnable(reason) => {
                status.state = State::Waiting {
                    reason: "Unrunnable".to_owned(),
                    message: Some(reason.clone()),
                };
            }
            Self::Started { ready } => {
                status.started = true;
                status.ready = *ready;
            }
            Self::Ready(ready) => status.ready = *ready,
        }
    }
}

/// Runs a container's probes as the kubelet does, reporting each finding; returns only
/// when the container must be restarted (its startup or liveness probe failed).
pub async fn watch_health(
    container: &Container,
    target: &Target,
    report: impl Fn(Health),
) -> String {
    let parse = |probe: Option<&Probe>| probe.map(|probe| ProbeSpec::from_probe(probe, container));
    let (startup, liveness, readiness) = match (
        parse(container.startup_probe.as_ref()).transpose(),
        parse(container.liveness_probe.as_ref()).transpose(),
        parse(container.readiness_probe.as_ref()).transpose(),
    ) {
        (Ok(startup), Ok(liveness), Ok(readiness)) => (startup, liveness, readiness),
        (Err(reason), _, _) | (_, Err(reason), _) | (_, _, Err(reason)) => {
            report(Health::Unrunnable(reason));
            return std::future::pending().await;
        }
    };
    if let Some(startup) = startup {
        tokio::time::sleep(startup.initial_delay).await;
        let mut failures = 0;
        while !succeeds(&startup.check, target, startup.timeout).await {
            failures += 1;
            if failures >= startup.failure_threshold {
                return format!("startup probe failed {failures} times");
            }
            tokio::time::sleep(startup.period).await;
        }
    }
    report(Health::Started {
        ready: readiness.is_none(),
    });
    let live = async {
        let Some(liveness) = liveness else {
            return std::future::pending().await;
        };
        tokio::time::sleep(liveness.initial_delay).await;
        let mut failures = 0;
        loop {
            if succeeds(&liveness.check, target, liveness.timeout).await {
                failures = 0;
            } else {
                failures += 1;
                if failures >= liveness.failure_threshold {
                    return format!("liveness probe failed {failures} times");
                }
            }
            tokio::time::sleep(liveness.period).await;
        }
    };
    let ready = async {
        let Some(readiness) = readiness else {
            return std::future::pending().await;
        };
        tokio::time::sleep(readiness.initial_delay).await;
        let (mut successes, mut failures) = (0, 0);
        loop {
            if succeeds(&readiness.check, target, readiness.timeout).await {
                (successes, failures) = (successes + 1, 0);
                if successes >= readiness.success_threshold {
                    report(Health::Ready(true));
                }
            } else {
                (successes, failures) = (0, failures + 1);
                if failures >= readiness.failure_threshold {
                    report(Health::Ready(false));
                }
            }
            tokio::time::sleep(readiness.period).await;
        }
    };
    tokio::select! {
        reason = live => reason,
        never = ready => never,
    }
}
