//! Runs a role group, configured exactly as the operator renders it, as real ZooKeeper
//! processes on loopback addresses.
//!
//! What differs from a cluster, and why:
//! - **Host names**: each pod FQDN is mapped to its own loopback address through a JVM hosts
//!   file (`-Djdk.net.hosts.file`), so the `server.N` lines keep the rendered FQDNs.
//! - **Client port binding**: the rendered `server.N=<fqdn>:2888:3888;2181` makes each server
//!   bind its client port on the wildcard address, which is right in a pod (one network
//!   namespace per server) but here all servers share one namespace and the second bind of
//!   `*:2181` would fail. ZooKeeper refuses a `clientPortAddress` that disagrees with the
//!   server's own line, so the least invasive change is inside the line: `;2181` becomes
//!   `;<fqdn>:2181` for every server, identically in every server's file. Quorum and election
//!   ports already bind the address of the server's own host name.
//! - **Data directory**: a config override points `dataDir` at a temp dir per server; the
//!   myid script then writes there, as it would write to the effective dataDir in a pod.
//! - **Metrics**: Debian's package lacks the Prometheus provider jar, so it is left out. The
//!   admin server (port 8080 on all interfaces) is off in the rendered default already.

use std::fs;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use tempfile::TempDir;
use zookeeper_operator::config::zoo_cfg::CLIENT_PORT;
use zookeeper_operator::config::{RoleGroupServers, ZooCfg, ZooCfgInput, myid_script};

use super::server::{HarnessError, ZkServer, io_context};

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

/// A role group's servers running on loopback; dropping it stops them and removes their
/// files.
#[derive(Debug)]
pub struct LoopbackGroup {
    /// The servers by ordinal.
    pub servers: Vec<ZkServer>,
    // Declared after `servers`: fields drop in order, so processes stop before their
    // directories disappear.
    dir: TempDir,
}

impl LoopbackGroup {
    /// Renders `zoo.cfg` for `group`, writes `myid` with the init script for every pod and
    /// starts one server per replica, pod `i` on `addresses[i]`.
    pub fn start(group: &RoleGroupServers, addresses: &[Ipv4Addr]) -> Result<Self, HarnessError> {
        let dir = tempfile::tempdir().map_err(io_context("creating a temp dir"))?;
        let hosts_file = dir.path().join("hosts");
        let hosts: String = addresses
            .iter()
            .zip(0..group.replicas)
            .map(|(ip, ordinal)| format!("{ip} {}\n", group.pod_dns.pod_fqdn(ordinal)))
            .collect();
        fs::write(&hosts_file, hosts).map_err(io_context("writing the hosts file"))?;

        let mut servers = Vec::new();
        for (ordinal, ip) in (0..group.replicas).zip(addresses) {
            let pod = group.pod_dns.pod_name(ordinal);
            let server_dir = dir.path().join(&pod);
            let conf_dir = server_dir.join("conf");
            fs::create_dir_all(&conf_dir).map_err(io_context("creating a conf dir"))?;

            let mut input = ZooCfgInput::new(vec![group.clone()]);
            input.prometheus_metrics_port = None;
            input.overrides.insert(
                "dataDir".to_owned(),
                server_dir.join("data").to_string_lossy().into_owned(),
            );
            let cfg = ZooCfg::render(&input)?;
            let zoo_cfg = bind_client_port_to_own_host(&cfg.to_properties());
            let config_file = conf_dir.join("zoo.cfg");
            fs::write(&config_file, &zoo_cfg).map_err(io_context("writing zoo.cfg"))?;

            run_myid_script(&pod, group.myid_offset, Path::new(cfg.data_dir()))?;
            let client_address = SocketAddr::V4(SocketAddrV4::new(*ip, CLIENT_PORT));
            servers.push(ZkServer::start(
                &pod,
                &config_file,
                client_address,
                Some(&hosts_file),
            )?);
        }
        Ok(Self { servers, dir })
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

/// Runs the operator's myid init script as the pod `hostname` would.
fn run_myid_script(hostname: &str, myid_offset: u32, data_dir: &Path) -> Result<(), HarnessError> {
    let output = Command::new("bash")
        .arg("-c")
        .arg(myid_script(myid_offset, &data_dir.to_string_lossy()))
        .env("HOSTNAME", hostname)
        .output()
        .map_err(io_context("running bash for the myid script"))?;
    if output.status.success() {
        return Ok(());
    }
    Err(HarnessError::MyidScript {
        hostname: hostname.to_owned(),
        status: output.status,
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}
