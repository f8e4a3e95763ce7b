//! What the pods see of the Services: the addresses each Service name resolves to, and
//! the virtual Services whose addresses the pods' rules translate.
//!
//! A Service with a `clusterIP` (the API server's, or one [`assign_cluster_ip`] gives a
//! manifest's Service) resolves to that address, which leads to its pods while they run
//! and keeps resolving while none does, as on a cluster. A headless Service has no
//! virtual address: its name resolves to its pods' own addresses.
//!
//! A Service without a selector (the API server's own) resolves to its virtual address
//! too, but gets no rules: the node agent serves that address itself.
//!
//! Every running pod a Service selects is its endpoint, ready or not, as if every
//! Service set `publishNotReadyAddresses`.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;

use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::{PodRunner, RunnerError};
use crate::hosts::{PodName, hosts_file};
use crate::service_rules::{VirtualPort, VirtualService, ruleset};
use crate::spec::PodFiles;

/// The Services as the pods see them.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ServiceView {
    /// `(namespace, name)` to the addresses the name resolves to.
    pub names: BTreeMap<(String, String), Vec<Ipv4Addr>>,
    /// The Services with a virtual address.
    pub virtual_services: Vec<VirtualService>,
}

/// The first address the runner gives a Service read without an API server: the upper
/// half of the Service range, so it never meets an address the control plane gives.
const FIRST_OWN_ADDRESS: Ipv4Addr = Ipv4Addr::new(10, 96, 128, 0);

/// Gives `service` a virtual address as the API server does when it has none (a
/// Service from a manifest): the one it had before under that name, else the next free
/// one. A headless Service (`clusterIP: None`), one that has its address and an
/// `ExternalName` are left as they are.
pub(crate) fn assign_cluster_ip(
    service: &mut Service,
    key: &(String, String),
    services: &BTreeMap<(String, String), Service>,
) {
    let spec = service.spec.get_or_insert_default();
    let unset = spec.cluster_ip.as_deref().is_none_or(str::is_empty);
    if !unset || spec.type_.as_deref() == Some("ExternalName") {
        return;
    }
    let address_of = |service: &Service| {
        service
            .spec
            .as_ref()?
            .cluster_ip
            .as_deref()?
            .parse::<Ipv4Addr>()
            .ok()
    };
    let address = services.get(key).and_then(address_of).unwrap_or_else(|| {
        let taken: Vec<Ipv4Addr> = services.values().filter_map(address_of).collect();
        (u32::from(FIRST_OWN_ADDRESS)..)
            .map(Ipv4Addr::from)
            .find(|candidate| !taken.contains(candidate))
            .unwrap_or(FIRST_OWN_ADDRESS)
    });
    spec.cluster_ip = Some(address.to_string());
}

/// The view of `services` over the running `pods`.
pub(crate) fn view(
    services: &BTreeMap<(String, String), Service>,
    pods: &[(&Pod, &PodName)],
) -> ServiceView {
    let mut view = ServiceView::default();
    for (key, service) in services {
        let spec = service.spec.clone().unwrap_or_default();
        let selector = spec.selector.unwrap_or_default();
        let selected: Vec<(&Pod, &PodName)> = pods
            .iter()
            .filter(|(pod, name)| {
                name.namespace == key.0
                    && !selector.is_empty()
                    && selector.iter().all(|(label, value)| {
                        pod.metadata
                            .labels
                            .as_ref()
                            .and_then(|labels| labels.get(label))
                            == Some(value)
                    })
            })
            .copied()
            .collect();
        let virtual_address = spec
            .cluster_ip
            .as_deref()
            .and_then(|address| address.parse::<Ipv4Addr>().ok());
        let Some(address) = virtual_address else {
            let addresses = selected.iter().map(|(_, name)| name.address).collect();
            view.names.insert(key.clone(), addresses);
            continue;
        };
        view.names.insert(key.clone(), vec![address]);
        if selector.is_empty() {
            // Its endpoints are not pods' (the API server's own Service): something
            // else serves the address, such as the node agent's relay.
            continue;
        }
        let ports = spec
            .ports
            .unwrap_or_default()
            .into_iter()
            .filter(|port| port.protocol.as_deref().unwrap_or("TCP") == "TCP")
            .filter_map(|port| {
                let number = u16::try_from(port.port).ok()?;
                let target = port.target_port.unwrap_or(IntOrString::Int(port.port));
                let endpoints = selected
                    .iter()
                    .filter_map(|(pod, name)| {
                        target_port(&target, pod)
                            .map(|target| SocketAddrV4::new(name.address, target))
                    })
                    .collect();
                Some(VirtualPort {
                    port: number,
                    endpoints,
                })
            })
            .collect();
        view.virtual_services
            .push(VirtualService { address, ports });
    }
    view
}

/// The port `target` names on `pod`: a number, or the name of one of its containers'
/// ports. A pod without that port name is no endpoint of the Service's port.
fn target_port(target: &IntOrString, pod: &Pod) -> Option<u16> {
    match target {
        IntOrString::Int(number) => u16::try_from(*number).ok(),
        IntOrString::String(name) => pod
            .spec
            .iter()
            .flat_map(|spec| &spec.containers)
            .flat_map(|container| container.ports.iter().flatten())
            .find(|port| port.name.as_deref() == Some(name.as_str()))
            .and_then(|port| u16::try_from(port.container_port).ok()),
    }
}

impl PodRunner {
    /// Writes every pod's hosts file and Service rules.
    pub(super) fn write_hosts(&self) -> Result<(), RunnerError> {
        self.write_hosts_with(None)
    }

    /// Writes every pod's hosts file and, where they changed, its Service rules: those
    /// of `starting`, a pod about to start (its namespace exists already), at once, the
    /// others' on the [`RulesApplier`](super::rules_applier::RulesApplier)'s thread. A
    /// runner without a virtual Service never runs `nft`.
    pub(super) fn write_hosts_with(
        &self,
        starting: Option<(&Pod, &PodName, &PodFiles)>,
    ) -> Result<(), RunnerError> {
        self.refresh(starting, true)
    }

    /// Takes pods that began to stop out of every Service's endpoints, as the
    /// endpoints controller does once a pod terminates, while their names keep
    /// resolving until they are gone. Without it, a client's rules still led to a
    /// stopped pod's address for a moment after its namespace went, and a connection
    /// made then kept retrying a dead address for minutes (its conntrack entry
    /// outlives the rule): Trino's probe hung that way after a roll.
    pub(super) fn write_rules(&self) -> Result<(), RunnerError> {
        self.refresh(None, false)
    }

    fn refresh(
        &self,
        starting: Option<(&Pod, &PodName, &PodFiles)>,
        with_hosts: bool,
    ) -> Result<(), RunnerError> {
        let pods: Vec<(&Pod, &PodName, &PodFiles)> = self
            .pods
            .values()
            .map(|entry| (&entry.pod, &entry.name, &entry.files))
            .chain(starting)
            .collect();
        let names: Vec<PodName> = pods.iter().map(|(_, name, _)| (*name).clone()).collect();
        let selectable: Vec<(&Pod, &PodName)> =
            pods.iter().map(|(pod, name, _)| (*pod, *name)).collect();
        let view = view(&self.services, &selectable);
        let rules = ruleset(&view.virtual_services);
        let starting_files = starting.map(|(_, _, files)| files.service_rules.clone());
        for (pod, name, files) in pods {
            if with_hosts {
                let text = hosts_file(name, &names, &view.names, &self.options.domain);
                write_if_changed(&files.hosts, &text)?;
            }
            let applied = std::fs::read_to_string(&files.service_rules).ok();
            let never_needed = applied.is_none() && view.virtual_services.is_empty();
            if applied.as_deref() == Some(rules.as_str()) || never_needed {
                continue;
            }
            let network_name = format!(
                "{}/{}",
                name.namespace,
                pod.metadata.name.as_deref().unwrap_or_default()
            );
            if starting_files.as_ref() == Some(&files.service_rules) {
                // Before its containers run, so that their first connections are
                // translated.
                self.network.apply_service_rules(&network_name, &rules)?;
                write_if_changed(&files.service_rules, &rules)?;
            } else if let Some(interface) = self.network.pod(&network_name) {
                self.rules
                    .apply(&interface.netns, &rules, &files.service_rules);
            }
        }
        Ok(())
    }
}

/// Writes `text` to `path` unless it holds it already: a bind-mounted file keeps its
/// inode, and an unchanged one is not touched.
fn write_if_changed(path: &Path, text: &str) -> Result<(), RunnerError> {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).map_err(|source| RunnerError::Io {
            path: path.to_owned(),
            source,
        })?;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn pod(name: &str, app: &str, last: u8) -> (Pod, PodName) {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "ns", "labels": {"app": app}},
            "spec": {"containers": [{"name": "c", "ports": [{"name": "rpc", "containerPort": 8485}]}]},
        }))
        .unwrap();
        let name = PodName {
            address: Ipv4Addr::new(10, 244, 0, last),
            hostname: name.to_owned(),
            subdomain: None,
            namespace: "ns".to_owned(),
        };
        (pod, name)
    }

    fn service(cluster_ip: Option<&str>, target: serde_json::Value) -> Service {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "jn", "namespace": "ns"},
            "spec": {
                "clusterIP": cluster_ip,
                "selector": {"app": "jn"},
                "ports": [{"port": 8485, "targetPort": target}],
            },
        }))
        .unwrap()
    }

    fn key() -> (String, String) {
        ("ns".to_owned(), "jn".to_owned())
    }

    #[rstest]
    #[case::a_virtual_address_is_what_the_name_resolves_to(
        Some("10.96.0.20"), vec![Ipv4Addr::new(10, 96, 0, 20)], 1
    )]
    #[case::a_headless_service_resolves_to_its_pods(
        Some("None"), vec![Ipv4Addr::new(10, 244, 0, 5)], 0
    )]
    #[case::a_manifests_service_resolves_to_its_pods(
        None, vec![Ipv4Addr::new(10, 244, 0, 5)], 0
    )]
    fn names(
        #[case] cluster_ip: Option<&str>,
        #[case] addresses: Vec<Ipv4Addr>,
        #[case] virtual_services: usize,
    ) {
        let (jn, jn_name) = pod("jn-0", "jn", 5);
        let (other, other_name) = pod("nn-0", "nn", 6);
        let services = BTreeMap::from([(key(), service(cluster_ip, serde_json::json!(8485)))]);
        let view = view(&services, &[(&jn, &jn_name), (&other, &other_name)]);
        assert_eq!(view.names[&key()], addresses);
        assert_eq!(view.virtual_services.len(), virtual_services);
    }

    #[rstest]
    #[case::by_number(serde_json::json!(8485), vec![SocketAddrV4::new(Ipv4Addr::new(10, 244, 0, 5), 8485)])]
    #[case::by_name(serde_json::json!("rpc"), vec![SocketAddrV4::new(Ipv4Addr::new(10, 244, 0, 5), 8485)])]
    #[case::an_unknown_name_is_no_endpoint(serde_json::json!("web"), vec![])]
    fn endpoints(#[case] target: serde_json::Value, #[case] expected: Vec<SocketAddrV4>) {
        let (jn, jn_name) = pod("jn-0", "jn", 5);
        let services = BTreeMap::from([(key(), service(Some("10.96.0.20"), target))]);
        let view = view(&services, &[(&jn, &jn_name)]);
        assert_eq!(
            view.virtual_services,
            vec![VirtualService {
                address: Ipv4Addr::new(10, 96, 0, 20),
                ports: vec![VirtualPort {
                    port: 8485,
                    endpoints: expected
                }],
            }]
        );
    }

    #[rstest]
    #[case::a_manifests_service_gets_the_first_free_address(None, "other", Some("10.96.128.1"))]
    #[case::it_keeps_its_address_when_applied_again(None, "jn", Some("10.96.128.0"))]
    #[case::an_assigned_address_stays(Some("10.96.0.20"), "new", Some("10.96.0.20"))]
    #[case::a_headless_service_stays_headless(Some("None"), "new", Some("None"))]
    fn virtual_addresses_are_assigned_as_the_api_server_does(
        #[case] cluster_ip: Option<&str>,
        #[case] name: &str,
        #[case] assigned: Option<&str>,
    ) {
        let mut known = service(None, serde_json::json!(8485));
        known.spec.as_mut().unwrap().cluster_ip = Some("10.96.128.0".to_owned());
        let services = BTreeMap::from([(key(), known)]);
        let mut applied = service(cluster_ip, serde_json::json!(8485));
        assign_cluster_ip(&mut applied, &("ns".to_owned(), name.to_owned()), &services);
        assert_eq!(applied.spec.unwrap().cluster_ip.as_deref(), assigned);
    }

    #[test]
    fn a_service_without_pods_keeps_its_virtual_address_and_refuses() {
        let services =
            BTreeMap::from([(key(), service(Some("10.96.0.20"), serde_json::json!(8485)))]);
        let view = view(&services, &[]);
        assert_eq!(view.names[&key()], vec![Ipv4Addr::new(10, 96, 0, 20)]);
        assert_eq!(view.virtual_services[0].ports[0].endpoints, vec![]);
    }
}
