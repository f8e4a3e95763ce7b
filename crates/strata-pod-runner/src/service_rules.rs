//! kube-proxy's part for Services with a virtual address: the nftables rules each pod's
//! network namespace gets, so that a connection to `clusterIP:port` reaches one of the
//! Service's pods, as kube-proxy's nftables mode does.
//!
//! The rules live in the client pod's own namespace (the `output` hook), not on the
//! bridge: the connection leaves the pod already addressed to the chosen pod, the reply
//! comes straight back and is translated there, and the server sees the client's own
//! address, as it does behind kube-proxy. HDFS depends on that: a namenode registers a
//! datanode under the address its connection comes from.
//!
//! A Service port without an endpoint refuses connections (a TCP reset), as kube-proxy
//! does, instead of letting them time out. Only TCP is served: no rendered Service of
//! the operators has another protocol.

use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddrV4};

/// The nftables table every pod's rules live in, replaced as a whole on each change.
const TABLE: &str = "strata";

/// A Service with a virtual address, and where each of its ports leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VirtualService {
    /// `spec.clusterIP`.
    pub address: Ipv4Addr,
    /// Its TCP ports.
    pub ports: Vec<VirtualPort>,
}

/// One port of a [`VirtualService`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VirtualPort {
    /// The Service's port.
    pub port: u16,
    /// The selected pods' addresses, each with the target port it resolves to there.
    pub endpoints: Vec<SocketAddrV4>,
}

/// The ruleset for `nft -f`: the table deleted, then written afresh, so that applying it
/// twice, or after another version, leaves exactly these rules. Empty when there is no
/// virtual Service, which removes a table an earlier ruleset made.
pub fn ruleset(services: &[VirtualService]) -> String {
    let mut text = format!("table ip {TABLE}\ndelete table ip {TABLE}\n");
    if services.is_empty() {
        return text;
    }
    let mut translations = String::new();
    let mut refusals = String::new();
    for service in services {
        for port in &service.ports {
            let matched = format!("ip daddr {} tcp dport {}", service.address, port.port);
            match port.endpoints.as_slice() {
                [] => {
                    let _ = writeln!(refusals, "\t\t{matched} reject with tcp reset");
                }
                [only] => {
                    let _ = writeln!(translations, "\t\t{matched} dnat to {only}");
                }
                several => {
                    let choices: Vec<String> = several
                        .iter()
                        .enumerate()
                        .map(|(index, endpoint)| {
                            format!("{index} : {} . {}", endpoint.ip(), endpoint.port())
                        })
                        .collect();
                    let _ = writeln!(
                        translations,
                        "\t\t{matched} dnat to numgen random mod {} map {{ {} }}",
                        several.len(),
                        choices.join(", ")
                    );
                }
            }
        }
    }
    let _ = write!(
        text,
        "table ip {TABLE} {{\n\
         \tchain services {{\n\
         \t\ttype nat hook output priority -100; policy accept;\n\
         {translations}\
         \t}}\n\
         \tchain unavailable {{\n\
         \t\ttype filter hook output priority 0; policy accept;\n\
         {refusals}\
         \t}}\n\
         }}\n"
    );
    text
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn endpoint(last: u8, port: u16) -> SocketAddrV4 {
        SocketAddrV4::new(Ipv4Addr::new(10, 244, 0, last), port)
    }

    fn service(ports: Vec<VirtualPort>) -> VirtualService {
        VirtualService {
            address: Ipv4Addr::new(10, 96, 3, 7),
            ports,
        }
    }

    const REMOVE: &str = "table ip strata\ndelete table ip strata\n";

    #[rstest]
    #[case::no_service_removes_the_table(vec![], "")]
    #[case::one_endpoint_is_translated(
        vec![service(vec![VirtualPort { port: 8485, endpoints: vec![endpoint(5, 8485)] }])],
        "\t\tip daddr 10.96.3.7 tcp dport 8485 dnat to 10.244.0.5:8485\n"
    )]
    #[case::several_endpoints_are_chosen_at_random(
        vec![service(vec![VirtualPort {
            port: 80,
            endpoints: vec![endpoint(5, 8080), endpoint(6, 8081)],
        }])],
        "\t\tip daddr 10.96.3.7 tcp dport 80 dnat to numgen random mod 2 \
         map { 0 : 10.244.0.5 . 8080, 1 : 10.244.0.6 . 8081 }\n"
    )]
    fn translations(#[case] services: Vec<VirtualService>, #[case] rules: &str) {
        let expected = if services.is_empty() {
            REMOVE.to_owned()
        } else {
            format!(
                "{REMOVE}table ip strata {{\n\tchain services {{\n\
                 \t\ttype nat hook output priority -100; policy accept;\n{rules}\t}}\n\
                 \tchain unavailable {{\n\
                 \t\ttype filter hook output priority 0; policy accept;\n\t}}\n}}\n"
            )
        };
        assert_eq!(ruleset(&services), expected);
    }

    #[test]
    fn a_port_without_endpoints_refuses_connections() {
        let text = ruleset(&[service(vec![VirtualPort {
            port: 2181,
            endpoints: vec![],
        }])]);
        assert!(
            text.contains(
                "\tchain unavailable {\n\t\ttype filter hook output priority 0; policy accept;\n\
                 \t\tip daddr 10.96.3.7 tcp dport 2181 reject with tcp reset\n"
            ),
            "{text}"
        );
        assert!(!text.contains("dnat"), "{text}");
    }
}
