//! What the reconcile reads about the datanodes before a scale-down: the groups as the
//! decommission planner sees them and the exclude list applied last; and how the list is
//! written, each host with its pod's IP.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use strata_model::labels::COMPONENT_LABEL;
use strata_operator::cache::ChildCaches;
use strata_operator::roll::StatefulSetPods;

use crate::build::config_map::{EXCLUDED_DATANODES_KEY, namenode_state_name};
use crate::crd::HdfsRole;
use crate::decommission::DataNodeGroup;
use crate::validate::ValidatedCluster;

/// Whether `set` runs `role`'s daemons, by its component label.
pub fn runs_role(set: &StatefulSetPods, role: HdfsRole) -> bool {
    set.stateful_set
        .metadata
        .labels
        .as_ref()
        .and_then(|labels| labels.get(COMPONENT_LABEL))
        .is_some_and(|component| component == role.daemon())
}

/// The datanode role groups as the decommission planner sees them: the spec's
/// replicas, the StatefulSet's, and which pods still exist.
pub fn datanode_groups(
    validated: &ValidatedCluster,
    running: &[StatefulSetPods],
) -> Vec<DataNodeGroup> {
    validated
        .role(HdfsRole::DataNode)
        .map(|role| {
            role.groups
                .iter()
                .map(|group| {
                    let set = running
                        .iter()
                        .find(|set| set.name() == group.name.object_name());
                    DataNodeGroup {
                        name: group.name.clone(),
                        replicas: group.replicas,
                        current_replicas: set.and_then(|set| {
                            set.stateful_set
                                .spec
                                .replicas
                                .and_then(|replicas| u16::try_from(replicas).ok())
                        }),
                        pods: set
                            .map(|set| {
                                set.pods_by_ordinal()
                                    .into_keys()
                                    .filter_map(|ordinal| u16::try_from(ordinal).ok())
                                    .collect()
                            })
                            .unwrap_or_default(),
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

/// One line of the exclude list: a datanode's host name and, once known, its pod's IP.
///
/// The namenode resolves a name only when it re-reads the list, and drops a name it
/// cannot resolve (`HostFileManager.parseEntry`); it matches datanodes by IP. A leaving
/// pod that is gone has no DNS record, while the namenode still counts its datanode
/// alive for about 10.5 minutes: a re-read then would take the host out of the list,
/// return it to service, and let the extra-redundancy pass delete the only real copy
/// of a block and keep the departed one's phantom. Such a re-read happens whenever
/// another host joins or leaves the list. So each line also carries the pod's IP, which Hadoop
/// reads as a second entry (every whitespace-separated word of a line is one,
/// `HostsFileReader`), and which keeps matching after the name stopped resolving. A
/// new pod that gets a departed pod's IP in the meantime is decommissioned too, which
/// copies blocks and loses none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExcludedHost {
    /// The pod's FQDN, as the planner names hosts.
    pub host: String,
    /// The pod's IP when it was last seen.
    pub ip: Option<String>,
}

impl ExcludedHost {
    /// A line of the list: `host` or `host ip`; `None` for an empty line.
    pub fn parse(line: &str) -> Option<Self> {
        let mut words = line.split_whitespace();
        let host = words.next()?.to_owned();
        Some(Self {
            host,
            ip: words.next().map(str::to_owned),
        })
    }

    /// The line as written.
    pub fn line(&self) -> String {
        match &self.ip {
            Some(ip) => format!("{} {ip}", self.host),
            None => self.host.clone(),
        }
    }
}

/// The exclude list the operator applied last, from the cached namenode state ConfigMap.
pub fn recorded_exclusions(
    caches: &ChildCaches,
    validated: &ValidatedCluster,
) -> Vec<ExcludedHost> {
    caches
        .get_typed::<ConfigMap>(
            &validated.identity.namespace,
            &namenode_state_name(validated),
        )
        .and_then(|config_map| config_map.data)
        .and_then(|data| data.get(EXCLUDED_DATANODES_KEY).cloned())
        .map(|lines| lines.lines().filter_map(ExcludedHost::parse).collect())
        .unwrap_or_default()
}

/// The IP of every datanode pod that has one, by the host name the planner uses.
pub fn pod_ips(
    groups: &[DataNodeGroup],
    running: &[StatefulSetPods],
    namespace: &str,
    cluster_domain: &str,
) -> BTreeMap<String, String> {
    let mut ips = BTreeMap::new();
    for group in groups {
        let Some(set) = running
            .iter()
            .find(|set| set.name() == group.name.object_name())
        else {
            continue;
        };
        let prefix = format!("{}-", set.name());
        for pod in &set.pods {
            let ordinal = pod
                .name_any()
                .strip_prefix(&prefix)
                .and_then(|ordinal| ordinal.parse::<u16>().ok());
            let ip = pod.status.as_ref().and_then(|status| status.pod_ip.clone());
            if let (Some(ordinal), Some(ip)) = (ordinal, ip) {
                ips.insert(group.host(ordinal, namespace, cluster_domain), ip);
            }
        }
    }
    ips
}

/// The exclude list to write for `hosts`: each with its pod's current IP, else the IP
/// recorded with it last time (its pod is gone), else alone.
pub fn exclusion_lines(
    hosts: &[String],
    recorded: &[ExcludedHost],
    current_ips: &BTreeMap<String, String>,
) -> Vec<String> {
    hosts
        .iter()
        .map(|host| {
            let recorded_ip = recorded
                .iter()
                .find(|excluded| &excluded.host == host)
                .and_then(|excluded| excluded.ip.clone());
            ExcludedHost {
                host: host.clone(),
                ip: current_ips.get(host).cloned().or(recorded_ip),
            }
            .line()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use pretty_assertions::assert_eq;
    use rstest::rstest;

    use super::{ExcludedHost, exclusion_lines};

    const HOST: &str = "hdfs-datanode-default-3.hdfs-datanode-default.ns.svc.cluster.local";

    #[rstest]
    #[case::host_alone(HOST, Some((HOST, None)))]
    #[case::host_and_ip(&format!("{HOST} 10.244.0.11"), Some((HOST, Some("10.244.0.11"))))]
    #[case::surrounding_blanks(&format!("  {HOST}\t10.244.0.11 "), Some((HOST, Some("10.244.0.11"))))]
    #[case::empty_line("", None)]
    fn a_line_names_a_host_and_perhaps_its_ip(
        #[case] line: &str,
        #[case] expected: Option<(&str, Option<&str>)>,
    ) {
        let parsed = ExcludedHost::parse(line);
        assert_eq!(
            parsed
                .as_ref()
                .map(|excluded| (excluded.host.as_str(), excluded.ip.as_deref())),
            expected
        );
        if let Some(parsed) = parsed {
            assert_eq!(ExcludedHost::parse(&parsed.line()), Some(parsed));
        }
    }

    fn recorded(ip: Option<&str>) -> Vec<ExcludedHost> {
        vec![ExcludedHost {
            host: HOST.to_owned(),
            ip: ip.map(str::to_owned),
        }]
    }

    /// A departed pod has no DNS record, so its line keeps the IP it had: the namenode
    /// matches datanodes by IP and drops names it cannot resolve.
    #[rstest]
    #[case::a_running_pod_with_its_ip(recorded(None), Some("10.244.0.11"), "10.244.0.11")]
    #[case::a_gone_pod_keeps_its_recorded_ip(recorded(Some("10.244.0.11")), None, "10.244.0.11")]
    #[case::a_restarted_pod_with_a_new_ip(
        recorded(Some("10.244.0.11")),
        Some("10.244.0.23"),
        "10.244.0.23"
    )]
    #[case::a_new_entry_whose_pod_has_an_ip(Vec::new(), Some("10.244.0.11"), "10.244.0.11")]
    fn each_excluded_host_carries_its_pods_ip(
        #[case] recorded: Vec<ExcludedHost>,
        #[case] current: Option<&str>,
        #[case] ip: &str,
    ) {
        let current: BTreeMap<String, String> = current
            .map(|ip| (HOST.to_owned(), ip.to_owned()))
            .into_iter()
            .collect();
        assert_eq!(
            exclusion_lines(&[HOST.to_owned()], &recorded, &current),
            [format!("{HOST} {ip}")]
        );
    }

    #[test]
    fn a_host_without_a_known_ip_is_written_alone() {
        assert_eq!(
            exclusion_lines(&[HOST.to_owned()], &recorded(None), &BTreeMap::new()),
            [HOST.to_owned()]
        );
    }
}
