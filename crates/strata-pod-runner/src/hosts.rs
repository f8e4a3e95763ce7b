//! The hosts file each pod sees at `/etc/hosts`, as the kubelet writes it: the pod's own
//! name first, then every pod of the runner under its FQDN and short name, and every
//! Service name under its virtual address, or a headless Service's under the addresses
//! of the pods it selects. The runner has no DNS server,
//! and needs none: every name a rendered pod uses is a pod's or a Service's.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

/// One pod's names: `<hostname>.<subdomain>.<namespace>.svc.<domain>` and its hostname.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodName {
    /// The pod's address on the runner's bridge.
    pub address: Ipv4Addr,
    /// `spec.hostname`, or the pod's name.
    pub hostname: String,
    /// `spec.subdomain`: the headless Service that gives the pod its DNS name, if any.
    pub subdomain: Option<String>,
    /// The pod's namespace.
    pub namespace: String,
}

impl PodName {
    /// The pod's fully qualified name, as the cluster's DNS would answer it.
    pub fn fqdn(&self, domain: &str) -> String {
        match &self.subdomain {
            Some(subdomain) => format!(
                "{}.{subdomain}.{}.svc.{domain}",
                self.hostname, self.namespace
            ),
            None => format!("{}.{}.pod.{domain}", self.hostname, self.namespace),
        }
    }
}

/// `/etc/hosts` for `pod`: loopback, the pod itself, the other pods, then each Service
/// (`<service>`, `<service>.<namespace>`, `<service>.<namespace>.svc`,
/// `<service>.<namespace>.svc.<domain>`) once per address it selects.
pub fn hosts_file(
    pod: &PodName,
    pods: &[PodName],
    services: &BTreeMap<(String, String), Vec<Ipv4Addr>>,
    domain: &str,
) -> String {
    let mut text =
        String::from("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n");
    let line = |other: &PodName| {
        format!(
            "{}\t{}\t{}\n",
            other.address,
            other.fqdn(domain),
            other.hostname
        )
    };
    text.push_str(&line(pod));
    for other in pods.iter().filter(|other| *other != pod) {
        text.push_str(&line(other));
    }
    for ((namespace, service), addresses) in services {
        let mut names = vec![
            format!("{service}.{namespace}.svc.{domain}"),
            format!("{service}.{namespace}.svc"),
            format!("{service}.{namespace}"),
        ];
        if *namespace == pod.namespace {
            names.push(service.clone());
        }
        for address in addresses {
            text.push_str(&format!("{address}\t{}\n", names.join("\t")));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn pod(address: [u8; 4], hostname: &str, subdomain: Option<&str>) -> PodName {
        PodName {
            address: Ipv4Addr::from(address),
            hostname: hostname.to_owned(),
            subdomain: subdomain.map(str::to_owned),
            namespace: "default".to_owned(),
        }
    }

    #[rstest]
    #[case::under_its_headless_service(
        pod([10, 244, 0, 2], "zk-server-default-0", Some("zk-server-default")),
        "zk-server-default-0.zk-server-default.default.svc.cluster.local"
    )]
    #[case::without_a_subdomain(pod([10, 244, 0, 3], "web", None), "web.default.pod.cluster.local")]
    fn a_pod_is_named_as_cluster_dns_names_it(#[case] pod: PodName, #[case] fqdn: &str) {
        assert_eq!(pod.fqdn("cluster.local"), fqdn);
    }

    #[test]
    fn the_pod_comes_first_then_the_others_then_the_services_by_every_name() {
        let first = pod([10, 244, 0, 2], "zk-0", Some("zk"));
        let second = pod([10, 244, 0, 3], "zk-1", Some("zk"));
        let services = BTreeMap::from([(
            ("default".to_owned(), "zk".to_owned()),
            vec![first.address, second.address],
        )]);
        let text = hosts_file(
            &second,
            &[first.clone(), second.clone()],
            &services,
            "cluster.local",
        );
        assert_eq!(
            text,
            "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n\
             10.244.0.3\tzk-1.zk.default.svc.cluster.local\tzk-1\n\
             10.244.0.2\tzk-0.zk.default.svc.cluster.local\tzk-0\n\
             10.244.0.2\tzk.default.svc.cluster.local\tzk.default.svc\tzk.default\tzk\n\
             10.244.0.3\tzk.default.svc.cluster.local\tzk.default.svc\tzk.default\tzk\n"
        );
    }

    #[test]
    fn a_service_of_another_namespace_has_no_short_name() {
        let web = pod([10, 244, 0, 2], "web-0", None);
        let services = BTreeMap::from([(
            ("other".to_owned(), "db".to_owned()),
            vec![Ipv4Addr::new(10, 244, 0, 9)],
        )]);
        let text = hosts_file(&web, std::slice::from_ref(&web), &services, "cluster.local");
        assert!(
            text.ends_with("10.244.0.9\tdb.other.svc.cluster.local\tdb.other.svc\tdb.other\n"),
            "{text}"
        );
    }
}
