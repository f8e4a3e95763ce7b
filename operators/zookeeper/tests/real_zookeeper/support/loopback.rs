//! Runs a role group, exactly as `zookeeper-operator render` prints it, as real ZooKeeper
//! processes on loopback addresses.
//!
//! What differs from a cluster, and why (nothing else is changed):
//! - **Host names**: each pod FQDN is mapped to its own loopback address through a JVM hosts
//!   file (`-Djdk.net.hosts.file`), so the `server.N` lines keep the rendered FQDNs.
//! - **Client port binding**: the rendered `server.N=<fqdn>:2888:3888;2181` makes each server
//!   bind its client port on the wildcard address, which is right in a pod (one network
//!   namespace per server) but here all servers share one namespace and the second bind of
//!   `*:2181` would fail. ZooKeeper refuses a `clientPortAddress` that disagrees with the
//!   server's own line, so the least invasive change is inside the line: `;2181` becomes
//!   `;<fqdn>:2181` for every server, identically in every server's file. Quorum and election
//!   ports already bind the address of the server's own host name.
//! - **Data directory**: `dataDir` (a per-pod volume in the cluster) becomes a temp dir per
//!   server, in `zoo.cfg` and in the myid init script alike.
//! - **Metrics**: the `metricsProvider.*` lines are dropped: the Prometheus provider
//!   binds its port (7000) on all interfaces, so a second server in this one network
//!   namespace could not start, and a test must not listen beyond loopback. The pod
//!   runner's test (`runner.rs`) runs the rendered file unchanged, metrics included.
//!   The admin server (port 8080 on all interfaces) is off in the rendered config
//!   already.

use std::fs;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::rendered::{PodIdentity, RenderedRoleGroup, property};
use super::server::{HarnessError, ZkServer, io_context};

/// The rendered `zoo.cfg` as one loopback server runs it: `dataDir` points at `data_dir`,
/// the metrics provider is dropped and client ports bind the servers' own host names (see
/// the module documentation for why).
pub fn loopback_zoo_cfg(rendered: &str, data_dir: &Path) -> Result<String, HarnessError> {
    if property(rendered, "dataDir").is_none() {
        return Err(HarnessError::Rendered("zoo.cfg has no dataDir".to_owned()));
    }
    let kept: String = rendered
        .lines()
        .filter(|line| !line.starts_with("metricsProvider."))
        .map(|line| match line.split_once('=') {
            Some(("dataDir", _)) => format!("dataDir={}\n", data_dir.display()),
            _ => format!("{line}\n"),
        })
        .collect();
    Ok(bind_client_port_to_own_host(&kept))
}

/// Rewrites every `server.N=<host>:<quorum>:<election>;<port>` line so the client port binds
/// `<host>` instead of the wildcard address. Other lines pass through unchanged.
pub fn bind_client_port_to_own_host(zoo_cfg: &str) -> String {
    zoo_cfg
        .lines()
        .map(|line| {
            let Some((key, value)) = line.split_once('=') else {
                return line.to_owned();
            };
            let Some((peer, client)) = value.split_once(';') else {
                return line.to_owned();
            };
            let host = peer.split(':').next().unwrap_or_default();
            if !key.starts_with("server.") || client.contains(':') {
                return line.to_owned();
            }
            format!("{key}={peer};{host}:{client}")
        })
        .map(|line| line + "\n")
        .collect()
}

/// The inputs to start (and restart) one server.
#[derive(Debug)]
struct Member {
    name: String,
    config_file: PathBuf,
    data_dir: PathBuf,
    client_address: SocketAddr,
}

/// A role group's servers running on loopback; dropping it stops them and removes their
/// files.
#[derive(Debug)]
pub struct LoopbackGroup {
    /// The running servers by ordinal; empty after [`LoopbackGroup::stop`].
    pub servers: Vec<ZkServer>,
    members: Vec<Member>,
    hosts_file: PathBuf,
    // Declared after `servers`: fields drop in order, so processes stop before their
    // directories disappear.
    dir: TempDir,
}

impl LoopbackGroup {
    /// [`LoopbackGroup::prepare`]s the group and starts one server per pod.
    pub fn start(group: &RenderedRoleGroup, addresses: &[Ipv4Addr]) -> Result<Self, HarnessError> {
        let mut started = Self::prepare(group, addresses)?;
        started.restart()?;
        Ok(started)
    }

    /// Writes each pod's files without starting anything: pod `i` gets `addresses[i]`, the
    /// rendered `zoo.cfg` changed only as the module documentation lists, and the `myid`
    /// its rendered init command writes, checked against the pod's `server.N` line.
    pub fn prepare(
        group: &RenderedRoleGroup,
        addresses: &[Ipv4Addr],
    ) -> Result<Self, HarnessError> {
        if addresses.len() != group.pods.len() {
            return Err(HarnessError::Rendered(format!(
                "{} pods rendered, but the test provides {} loopback addresses",
                group.pods.len(),
                addresses.len()
            )));
        }
        let rendered_data_dir = property(&group.zoo_cfg, "dataDir")
            .ok_or_else(|| HarnessError::Rendered("zoo.cfg has no dataDir".to_owned()))?;
        let client_port: u16 = property(&group.zoo_cfg, "clientPort")
            .and_then(|port| port.parse().ok())
            .ok_or_else(|| {
                HarnessError::Rendered("zoo.cfg has no numeric clientPort".to_owned())
            })?;

        let dir = tempfile::tempdir().map_err(io_context("creating a temp dir"))?;
        let hosts_file = dir.path().join("hosts");
        let hosts: String = addresses
            .iter()
            .zip(&group.pods)
            .map(|(ip, pod)| format!("{ip} {}\n", pod.fqdn))
            .collect();
        fs::write(&hosts_file, hosts).map_err(io_context("writing the hosts file"))?;

        let mut members = Vec::new();
        for (pod, ip) in group.pods.iter().zip(addresses) {
            let server_dir = dir.path().join(&pod.name);
            let conf_dir = server_dir.join("conf");
            let data_dir = server_dir.join("data");
            fs::create_dir_all(&conf_dir).map_err(io_context("creating a conf dir"))?;
            let config_file = conf_dir.join("zoo.cfg");
            fs::write(&config_file, loopback_zoo_cfg(&group.zoo_cfg, &data_dir)?)
                .map_err(io_context("writing zoo.cfg"))?;
            run_myid_command(&group.myid_command, rendered_data_dir, &data_dir, &pod.name)?;
            check_myid(&group.zoo_cfg, &data_dir, pod)?;
            members.push(Member {
                name: pod.name.clone(),
                config_file,
                data_dir,
                client_address: SocketAddr::V4(SocketAddrV4::new(*ip, client_port)),
            });
        }
        Ok(Self {
            servers: Vec::new(),
            members,
            hosts_file,
            dir,
        })
    }

    /// The `zoo.cfg` server `ordinal` runs with.
    pub fn zoo_cfg(&self, ordinal: usize) -> Result<String, HarnessError> {
        let member = self.member(ordinal)?;
        fs::read_to_string(&member.config_file).map_err(io_context("reading zoo.cfg"))
    }

    /// The `myid` the init command wrote for server `ordinal`.
    pub fn myid(&self, ordinal: usize) -> Result<String, HarnessError> {
        let member = self.member(ordinal)?;
        fs::read_to_string(member.data_dir.join("myid")).map_err(io_context("reading myid"))
    }

    fn member(&self, ordinal: usize) -> Result<&Member, HarnessError> {
        self.members.get(ordinal).ok_or_else(|| {
            HarnessError::Rendered(format!("there is no pod with ordinal {ordinal}"))
        })
    }

    /// Kills every server by PID, keeping configs and data for [`LoopbackGroup::restart`].
    pub fn stop(&mut self) {
        self.servers.clear();
    }

    /// Starts every server again on its address, config and data directory.
    pub fn restart(&mut self) -> Result<(), HarnessError> {
        self.stop();
        for member in &self.members {
            self.servers.push(ZkServer::start(
                &member.name,
                &member.config_file,
                member.client_address,
                Some(&self.hosts_file),
            )?);
        }
        Ok(())
    }

    /// `host:port,...` of every member, for clients.
    pub fn connection_string(&self) -> String {
        self.members
            .iter()
            .map(|member| member.client_address.to_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Waits until every server serves clients and returns their modes by ordinal. Every
    /// process is checked in every round, so a server that died (say, on a port clash) is
    /// reported even while another one answers on its behalf.
    pub fn wait_until_serving(&mut self, timeout: Duration) -> Result<Vec<String>, HarnessError> {
        let start = Instant::now();
        loop {
            let mut modes = Vec::new();
            let mut waiting = None;
            for (index, server) in self.servers.iter_mut().enumerate() {
                server.ensure_running("serving")?;
                match server.mode() {
                    Ok(mode) => modes.push(mode),
                    Err(answer) => {
                        waiting.get_or_insert((index, answer));
                    }
                }
            }
            let Some((index, answer)) = waiting else {
                return Ok(modes);
            };
            if start.elapsed() > timeout {
                return Err(self.servers[index].not_ready("serving", start.elapsed(), answer));
            }
            thread::sleep(Duration::from_millis(100));
        }
    }

    /// Where the group's files live (configs, data, logs), for failure messages.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// Runs the rendered init command as the kubelet would in pod `hostname`, with one change:
/// the script's data directory (zoo.cfg's `dataDir`, a volume in the pod) becomes this
/// server's temp dir. The script must name it exactly once; otherwise it writes `myid`
/// somewhere ZooKeeper does not read it.
pub fn run_myid_command(
    command: &[String],
    rendered_data_dir: &str,
    data_dir: &Path,
    hostname: &str,
) -> Result<(), HarnessError> {
    let quoted = format!("'{rendered_data_dir}'");
    let mentions: usize = command.iter().map(|arg| arg.matches(&quoted).count()).sum();
    if mentions != 1 {
        return Err(HarnessError::Rendered(format!(
            "the myid command names zoo.cfg's dataDir {quoted} {mentions} times instead of once: {command:?}"
        )));
    }
    let replacement = format!("'{}'", data_dir.display());
    let command: Vec<String> = command
        .iter()
        .map(|arg| arg.replace(&quoted, &replacement))
        .collect();
    let Some((program, args)) = command.split_first() else {
        return Err(HarnessError::Rendered(
            "the myid init container has no command".to_owned(),
        ));
    };
    let output = Command::new(program)
        .args(args)
        .env("HOSTNAME", hostname)
        .output()
        .map_err(io_context(format!("running the myid command {program}")))?;
    if output.status.success() {
        return Ok(());
    }
    Err(HarnessError::MyidScript {
        hostname: hostname.to_owned(),
        status: output.status,
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}

/// Checks that the `myid` written for `pod` selects the `server.N` line with the pod's own
/// DNS name, which is what makes each server bind its own quorum ports.
pub fn check_myid(zoo_cfg: &str, data_dir: &Path, pod: &PodIdentity) -> Result<(), HarnessError> {
    let myid = fs::read_to_string(data_dir.join("myid"))
        .map_err(io_context(format!(
            "reading the myid written for {}",
            pod.name
        )))?
        .trim()
        .to_owned();
    let line = property(zoo_cfg, &format!("server.{myid}")).map(str::to_owned);
    let host = line.as_deref().and_then(|value| value.split(':').next());
    if host == Some(pod.fqdn.as_str()) {
        return Ok(());
    }
    Err(HarnessError::MyidMismatch {
        pod: pod.name.clone(),
        myid,
        fqdn: pod.fqdn.clone(),
        line,
    })
}
