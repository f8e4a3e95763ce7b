//! Container parts: ports, probes, resources, security, mounts and environment.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Capabilities, ContainerPort as K8sContainerPort, EnvVar, ExecAction, HTTPGetAction, Lifecycle,
    LifecycleHandler, Probe, ResourceRequirements, SecurityContext, TCPSocketAction, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::resources::ValidatedResources;

/// A named TCP port of a container; Services target it by name, so a port number
/// lives in one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContainerPort {
    /// The port's name (at most 15 characters, as Kubernetes requires).
    pub name: &'static str,
    /// The port number.
    pub number: u16,
}

/// The container port `port`, TCP.
pub fn container_port(port: ContainerPort) -> K8sContainerPort {
    K8sContainerPort {
        name: Some(port.name.to_owned()),
        container_port: i32::from(port.number),
        protocol: Some("TCP".to_owned()),
        ..K8sContainerPort::default()
    }
}

fn probe(period: i32, failures: i32) -> Probe {
    Probe {
        period_seconds: Some(period),
        timeout_seconds: Some(5),
        failure_threshold: Some(failures),
        ..Probe::default()
    }
}

/// A probe running `script` with bash, every `period` seconds, failing after
/// `failures` misses: for products whose health is a question to ask (ZooKeeper's
/// four-letter words), not a port.
pub fn exec_probe(script: &str, period: i32, failures: i32) -> Probe {
    Probe {
        exec: Some(ExecAction {
            command: Some(["bash", "-c", script].map(str::to_owned).to_vec()),
        }),
        ..probe(period, failures)
    }
}

/// A probe sending `GET path` to the named port.
pub fn http_probe(path: &str, port: ContainerPort, period: i32, failures: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.to_owned()),
            port: IntOrString::String(port.name.to_owned()),
            scheme: Some("HTTP".to_owned()),
            ..HTTPGetAction::default()
        }),
        ..probe(period, failures)
    }
}

/// A probe opening a TCP connection to the named port.
pub fn tcp_probe(port: ContainerPort, period: i32, failures: i32) -> Probe {
    Probe {
        tcp_socket: Some(TCPSocketAction {
            port: IntOrString::String(port.name.to_owned()),
            host: None,
        }),
        ..probe(period, failures)
    }
}

/// Seconds a server keeps serving after its pod is deleted, before it gets SIGTERM.
pub const PAUSE_BEFORE_STOP_SECONDS: u32 = 5;

/// A preStop hook that only waits [`PAUSE_BEFORE_STOP_SECONDS`]. A deleted pod leaves
/// the Service endpoints, the kube-proxies and the ingresses a moment after the kubelet
/// starts stopping it, and servers close their listener at SIGTERM: without the pause,
/// clients routed there in between are refused (or get a 502) on every roll. The
/// pause counts against `terminationGracePeriodSeconds`.
pub fn pause_before_stop() -> Lifecycle {
    Lifecycle {
        pre_stop: Some(LifecycleHandler {
            exec: Some(ExecAction {
                command: Some(vec![
                    "sleep".to_owned(),
                    PAUSE_BEFORE_STOP_SECONDS.to_string(),
                ]),
            }),
            ..LifecycleHandler::default()
        }),
        ..Lifecycle::default()
    }
}

/// Requests and limits from validated resources; memory request equals the limit, so
/// the heap sized from it is never reclaimed by the kubelet.
pub fn resource_requirements(resources: &ValidatedResources) -> ResourceRequirements {
    ResourceRequirements {
        requests: Some(BTreeMap::from([
            ("cpu".to_owned(), resources.cpu_min.clone()),
            ("memory".to_owned(), resources.memory_limit.clone()),
        ])),
        limits: Some(BTreeMap::from([
            ("cpu".to_owned(), resources.cpu_max.clone()),
            ("memory".to_owned(), resources.memory_limit.clone()),
        ])),
        ..ResourceRequirements::default()
    }
}

/// Least privilege for every container: no privilege escalation, no capabilities, a
/// read-only root filesystem (every writable path is a volume), not root. It meets the
/// `restricted` Pod Security Standard together with [`super::pod_security_context`].
pub fn restricted_security_context() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".to_owned()]),
            add: None,
        }),
        read_only_root_filesystem: Some(true),
        run_as_non_root: Some(true),
        ..SecurityContext::default()
    }
}

/// Mounts the volume `name` at `path`.
pub fn volume_mount(name: &str, path: &str, read_only: bool) -> VolumeMount {
    VolumeMount {
        name: name.to_owned(),
        mount_path: path.to_owned(),
        read_only: read_only.then_some(true),
        ..VolumeMount::default()
    }
}

/// The container's environment: the operator's variables, then `envOverrides`, which
/// win. Sorted by name, so the same input gives the same template.
pub fn env_vars(
    operator: BTreeMap<String, String>,
    overrides: &BTreeMap<String, String>,
) -> Vec<EnvVar> {
    let mut env = operator;
    env.extend(overrides.clone());
    env.into_iter()
        .map(|(name, value)| EnvVar {
            name,
            value: Some(value),
            value_from: None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_overrides_win_and_the_order_is_stable() {
        let env = env_vars(
            BTreeMap::from([
                ("B".to_owned(), "operator".to_owned()),
                ("A".to_owned(), "operator".to_owned()),
            ]),
            &BTreeMap::from([("B".to_owned(), "user".to_owned())]),
        );
        let pairs: Vec<(String, Option<String>)> =
            env.into_iter().map(|var| (var.name, var.value)).collect();
        assert_eq!(
            pairs,
            [
                ("A".to_owned(), Some("operator".to_owned())),
                ("B".to_owned(), Some("user".to_owned()))
            ]
        );
    }

    #[test]
    fn probes_target_ports_by_name() {
        let port = ContainerPort {
            name: "http",
            number: 8080,
        };
        let http = http_probe("/health", port, 10, 3);
        assert_eq!(
            http.http_get.map(|get| get.port),
            Some(IntOrString::String("http".to_owned()))
        );
        assert_eq!(
            tcp_probe(port, 10, 3).tcp_socket.map(|tcp| tcp.port),
            Some(IntOrString::String("http".to_owned()))
        );
    }
}
