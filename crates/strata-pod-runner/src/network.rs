//! The pods' network: a namespace per pod with one address on a bridge, and the bridge
//! in a namespace of the runner's, so pods reach each other and nothing else.
//!
//! Links are made with iproute2's `ip`, one command per step, so a failure names the
//! command that failed (a missing tool, or a caller that is not root). Both ends of each
//! veth pair are created directly in their namespaces: nothing is added to the host's
//! own network. The pods get no default route, so a connection to any address outside
//! the pod network fails at once with "Network is unreachable" and sends nothing (the
//! development machine's own network answers every address through a proxy, so the host
//! namespace is never used to reach a pod either: [`PodNetwork::in_pod`] enters the pod's).
//!
//! Namespace names carry the runner's PID (`strata-<pid>-<n>-...`). Dropping the network
//! deletes them; a runner killed before it could is swept by the next one, which deletes
//! every `strata-` namespace whose PID is gone.

use std::collections::BTreeMap;
use std::fs::File;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use nix::sched::{CloneFlags, setns};

/// Where `ip netns` keeps its namespaces.
const NETNS_DIR: &str = "/run/netns";
/// The prefix of every namespace a runner creates.
const PREFIX: &str = "strata-";
/// The pod network: 10.244.0.0/16, the bridge at .0.1, pods from .0.2 on.
const SUBNET: [u8; 2] = [10, 244];
/// The prefix length of every pod address.
const PREFIX_LENGTH: u8 = 16;
/// The Services' virtual addresses (the control plane's `--service-cluster-ip-range`):
/// the pods route them to the bridge, where [`PodNetwork::listen_in_bridge`] serves the
/// ones the runner proxies (the API server's) and the others are unreachable.
const SERVICE_RANGE: &str = "10.96.0.0/16";

/// Networks made by this process, so two in one test binary get distinct names.
static NETWORKS: AtomicU32 = AtomicU32::new(0);

/// Why the pod network could not be built or used.
#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    /// `ip` could not be started.
    #[error("`{command}` could not start ({source}); the pod runner needs iproute2's `ip`")]
    Start {
        /// The command line.
        command: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// `ip` failed; the runner must be root to create namespaces.
    #[error("`{command}` failed ({status}): {stderr} (the pod runner must run as root)")]
    Failed {
        /// The command line.
        command: String,
        /// How it ended.
        status: std::process::ExitStatus,
        /// What it printed on stderr.
        stderr: String,
    },
    /// A pod's namespace could not be entered.
    #[error("cannot enter the network namespace {path}: {reason}")]
    Enter {
        /// The namespace's file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The Service rules could not be applied in a pod's namespace.
    #[error(
        "cannot apply the Service rules in the network of {pod}: {reason} (Services with a \
         clusterIP need nftables' `nft`, the Debian package nftables)"
    )]
    Rules {
        /// The pod.
        pod: String,
        /// What `nft` said, or why it could not start.
        reason: String,
    },
    /// The pod is not on this network.
    #[error("no pod {0} on this network")]
    UnknownPod(String),
    /// The /16 is full.
    #[error("the pod network has no address left")]
    Full,
}

/// One pod on the network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodInterface {
    /// Its network namespace, under `/run/netns`.
    pub netns: String,
    /// Its address on the bridge.
    pub address: Ipv4Addr,
    /// The bridge end of its veth pair, in the bridge's namespace.
    bridge_port: String,
}

/// The bridge and the pods on it, deleted when dropped.
#[derive(Debug)]
pub struct PodNetwork {
    prefix: String,
    bridge_netns: String,
    pods: BTreeMap<String, PodInterface>,
    next_host: u32,
}

impl PodNetwork {
    /// Sweeps what dead runners left, then creates the bridge's namespace and the bridge.
    pub fn create() -> Result<Self, NetworkError> {
        sweep_stale();
        let prefix = format!(
            "{PREFIX}{}-{}",
            std::process::id(),
            NETWORKS.fetch_add(1, Ordering::SeqCst)
        );
        let network = Self {
            bridge_netns: format!("{prefix}-bridge"),
            prefix,
            pods: BTreeMap::new(),
            next_host: 2,
        };
        let bridge = network.bridge_netns.as_str();
        ip(&["netns", "add", bridge])?;
        ip(&["-n", bridge, "link", "set", "lo", "up"])?;
        ip(&["-n", bridge, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", bridge, "addr", "add", &gateway(), "dev", "br0"])?;
        ip(&["-n", bridge, "link", "set", "br0", "up"])?;
        Ok(network)
    }

    /// Gives `pod` a namespace and the next free address; returns the address.
    pub fn add_pod(&mut self, pod: &str) -> Result<Ipv4Addr, NetworkError> {
        if let Some(existing) = self.pods.get(pod) {
            return Ok(existing.address);
        }
        let host = self.next_host;
        if host >= 1 << 16 {
            return Err(NetworkError::Full);
        }
        let [_, _, high, low] = host.to_be_bytes();
        let address = Ipv4Addr::new(SUBNET[0], SUBNET[1], high, low);
        let netns = format!("{}-pod{host}", self.prefix);
        let bridge_port = format!("veth{host}");
        let bridge = self.bridge_netns.as_str();
        ip(&["netns", "add", &netns])?;
        self.pods.insert(
            pod.to_owned(),
            PodInterface {
                netns: netns.clone(),
                address,
                bridge_port: bridge_port.clone(),
            },
        );
        self.next_host += 1;
        ip(&[
            "link",
            "add",
            &bridge_port,
            "netns",
            bridge,
            "type",
            "veth",
            "peer",
            "name",
            "eth0",
            "netns",
            &netns,
        ])?;
        ip(&["-n", bridge, "link", "set", &bridge_port, "master", "br0"])?;
        ip(&["-n", bridge, "link", "set", &bridge_port, "up"])?;
        ip(&["-n", &netns, "link", "set", "lo", "up"])?;
        ip(&[
            "-n",
            &netns,
            "addr",
            "add",
            &format!("{address}/{PREFIX_LENGTH}"),
            "dev",
            "eth0",
        ])?;
        ip(&["-n", &netns, "link", "set", "eth0", "up"])?;
        let bridge_address = gateway();
        let (via, _) = bridge_address
            .split_once('/')
            .unwrap_or((&bridge_address, ""));
        ip(&["-n", &netns, "route", "add", SERVICE_RANGE, "via", via])?;
        Ok(address)
    }

    /// Takes `pod` off the network: its namespace and veth pair are deleted.
    pub fn remove_pod(&mut self, pod: &str) -> Result<(), NetworkError> {
        match self.pods.remove(pod) {
            Some(interface) => ip(&["netns", "del", &interface.netns]),
            None => Ok(()),
        }
    }

    /// The pod's interface, if it is on the network.
    pub fn pod(&self, pod: &str) -> Option<&PodInterface> {
        self.pods.get(pod)
    }

    /// The file of the pod's network namespace, for `setns`.
    pub fn netns_path(&self, pod: &str) -> Result<PathBuf, NetworkError> {
        self.pods
            .get(pod)
            .map(|interface| Path::new(NETNS_DIR).join(&interface.netns))
            .ok_or_else(|| NetworkError::UnknownPod(pod.to_owned()))
    }

    /// Replaces the Service rules of `pod`'s namespace with `ruleset`, a whole
    /// [`crate::service_rules::ruleset`], in one `nft -f` transaction.
    pub fn apply_service_rules(&self, pod: &str, ruleset: &str) -> Result<(), NetworkError> {
        let interface = self
            .pods
            .get(pod)
            .ok_or_else(|| NetworkError::UnknownPod(pod.to_owned()))?;
        apply_rules_in(&interface.netns, ruleset)
    }

    /// A listener on `address:port` inside the bridge's namespace, which every pod
    /// reaches: how the runner plays a Service's virtual address (kube-proxy's part).
    /// The address is added to the namespace's loopback first.
    pub fn listen_in_bridge(
        &self,
        address: Ipv4Addr,
        port: u16,
    ) -> Result<std::net::TcpListener, NetworkError> {
        let bridge = self.bridge_netns.as_str();
        ip(&[
            "-n",
            bridge,
            "addr",
            "add",
            &format!("{address}/32"),
            "dev",
            "lo",
        ])?;
        let path = Path::new(NETNS_DIR).join(bridge);
        let file = File::open(&path).map_err(|error| NetworkError::Enter {
            path: path.clone(),
            reason: error.to_string(),
        })?;
        let bound = std::thread::spawn(move || {
            setns(&file, CloneFlags::CLONE_NEWNET)
                .map_err(|errno| errno.to_string())
                .and_then(|()| {
                    std::net::TcpListener::bind((address, port)).map_err(|error| error.to_string())
                })
        })
        .join()
        .map_err(|_| NetworkError::Enter {
            path: path.clone(),
            reason: "the bind panicked".to_owned(),
        })?;
        bound.map_err(|reason| NetworkError::Enter { path, reason })
    }

    /// Runs `work` on a thread of its own inside the pod's network namespace: the way
    /// the runner probes a pod and forwards a port to it. A socket made there stays in
    /// the pod's namespace for good, whichever thread uses it afterwards.
    pub fn in_pod<T: Send + 'static>(
        &self,
        pod: &str,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, NetworkError> {
        let path = self.netns_path(pod)?;
        let file = File::open(&path).map_err(|error| NetworkError::Enter {
            path: path.clone(),
            reason: error.to_string(),
        })?;
        let entered = std::thread::spawn(move || {
            setns(&file, CloneFlags::CLONE_NEWNET)
                .map(|()| work())
                .map_err(|errno| errno.to_string())
        })
        .join()
        .map_err(|_| NetworkError::Enter {
            path: path.clone(),
            reason: "the work panicked".to_owned(),
        })?;
        entered.map_err(|reason| NetworkError::Enter { path, reason })
    }
}

impl Drop for PodNetwork {
    fn drop(&mut self) {
        for interface in std::mem::take(&mut self.pods).into_values() {
            let _ = ip(&["netns", "del", &interface.netns]);
        }
        let _ = ip(&["netns", "del", &self.bridge_netns]);
    }
}

/// Replaces the Service rules of the network namespace `netns` (under `/run/netns`)
/// with `ruleset`, in one `nft -f` transaction.
pub fn apply_rules_in(netns: &str, ruleset: &str) -> Result<(), NetworkError> {
    use std::io::Write as _;
    let failed = |reason: String| NetworkError::Rules {
        pod: netns.to_owned(),
        reason,
    };
    let mut child = Command::new("ip")
        .args(["netns", "exec", netns, "nft", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|error| failed(error.to_string()))?;
    if let Some(mut input) = child.stdin.take() {
        input
            .write_all(ruleset.as_bytes())
            .map_err(|error| failed(error.to_string()))?;
    }
    let output = child
        .wait_with_output()
        .map_err(|error| failed(error.to_string()))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(failed(format!(
            "{}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )))
    }
}

/// The bridge's address, the first of the subnet.
fn gateway() -> String {
    format!("{}.{}.0.1/{PREFIX_LENGTH}", SUBNET[0], SUBNET[1])
}

/// Runs `ip` with `args`; a failure names the command.
fn ip(args: &[&str]) -> Result<(), NetworkError> {
    let command = format!("ip {}", args.join(" "));
    let output = Command::new("ip")
        .args(args)
        .output()
        .map_err(|source| NetworkError::Start {
            command: command.clone(),
            source,
        })?;
    if output.status.success() {
        Ok(())
    } else {
        Err(NetworkError::Failed {
            command,
            status: output.status,
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        })
    }
}

/// Deletes every `strata-<pid>-...` namespace whose runner has exited.
fn sweep_stale() {
    let Ok(entries) = std::fs::read_dir(NETNS_DIR) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(pid) = runner_pid(&name)
            && !Path::new("/proc").join(pid.to_string()).exists()
        {
            let _ = ip(&["netns", "del", &name]);
        }
    }
}

/// The PID in a runner's namespace name.
fn runner_pid(name: &str) -> Option<u32> {
    name.strip_prefix(PREFIX)?.split('-').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::a_pods_namespace("strata-4242-0-pod7", Some(4242))]
    #[case::a_bridge("strata-17-3-bridge", Some(17))]
    #[case::someone_elses("cni-1234", None)]
    #[case::not_a_pid("strata-sandbox", None)]
    fn only_our_namespaces_name_a_runner(#[case] name: &str, #[case] pid: Option<u32>) {
        assert_eq!(runner_pid(name), pid);
    }
}
