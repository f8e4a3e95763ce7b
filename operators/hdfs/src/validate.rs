//! Validation: turns an `HdfsCluster` and the ZooKeeper connection it refers to into a
//! [`ValidatedCluster`], the merged and checked model every build function reads.
//!
//! Everything that can be wrong with a spec is found here, so the build step cannot fail
//! on user input. Each problem becomes [`ReconcileError::invalid_spec`] with a CamelCase
//! reason and a message naming the field or role group. What is allowed but unwise (an
//! even number of journalnodes, more replicas than datanodes) becomes a [`Warning`].
//! One namenode is refused rather than warned about: Hadoop cannot run the HA layout
//! the operator renders with a single namenode ID.

mod role_group;
mod warnings;

use std::collections::BTreeMap;

use strata_model::exposure::{ExternalAddress, INVALID_SERVICE_EXPOSURE, ServiceExposure};
use strata_model::identity::{ClusterIdentity, Product, check_cluster_domain};
use strata_model::ingress::{INVALID_INGRESS, is_dns_subdomain};
use strata_operator::error::ReconcileError;

pub use self::role_group::{
    DaemonGroup, HEAP_PERCENT_OF_MEMORY, MIN_MEMORY_LIMIT_MIB, ValidatedRoleGroup,
};
pub use self::warnings::Warning;
use crate::build::service::namenode_http_service_name;
use crate::build::statefulset::hadoop_user;
use crate::config::site::client_site;
use crate::config::zookeeper_tls::ZookeeperConnection;
use crate::config::{NameNodeAddress, SiteFiles, Topology};
use crate::crd::exposure::NameNodeIngress;
use crate::crd::{
    APP_NAME, DEFAULT_DFS_REPLICATION, DEFAULT_PRODUCT_VERSION, HdfsCluster, HdfsRole,
    OPERATOR_NAME, PodUser, UPSTREAM_IMAGE_REPOSITORY,
};
pub use strata_model::identity::DEFAULT_CLUSTER_DOMAIN;

/// An `HdfsCluster` with every default applied and every rule checked.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ValidatedCluster {
    /// Who the cluster is: its name (also the nameservice), its namespace (every
    /// built object's), the image every pod runs and the labels of cluster-wide
    /// objects.
    pub identity: ClusterIdentity,
    /// Cluster DNS domain used in host names.
    pub cluster_domain: String,
    /// `dfs.replication`.
    pub dfs_replication: u16,
    /// What a Prometheus Operator gets.
    pub monitoring: strata_model::monitoring::Monitoring,
    /// The exposure of each namenode's HTTP Service; none is built while it is the
    /// default, since each namenode's own Service already serves HTTP in the cluster.
    pub namenode_http_service: ServiceExposure,
    /// Where a client outside the cluster reaches each namenode's web UI, by pod, as
    /// the controller observed the Services. Empty until then, and in `render`.
    pub namenode_http_addresses: BTreeMap<String, ExternalAddress>,
    /// The namenodes' web UI Ingresses.
    pub namenode_ingress: Option<NameNodeIngress>,
    /// Each namenode's URL through its Ingress, by pod, once the Ingress has an address.
    pub namenode_ingress_urls: BTreeMap<String, String>,
    /// `ha.zookeeper.quorum` and TLS, from the ZNode discovery ConfigMap.
    pub zookeeper: ZookeeperConnection,
    /// Where every daemon is.
    pub topology: Topology,
    /// The client files of the discovery ConfigMap.
    pub discovery: SiteFiles,
    /// The namenode pod that may format a new namespace: the first one.
    pub formatter_pod: String,
    /// The cluster ID a new namespace gets (`-format -clusterid`): `CID-` and the
    /// HdfsCluster's uid, so a name dir that an interrupted first format left behind is
    /// recognisably this cluster's, and a cluster re-created under the same name gets
    /// another one. Without a uid (`render` of a file), it is built from the
    /// namespace and name.
    pub new_cluster_id: String,
    /// The roles in roll order: journalnodes, namenodes, datanodes.
    pub roles: Vec<ValidatedRole>,
    /// What is allowed but unwise.
    pub warnings: Vec<Warning>,
    /// The uid and gid the pods run as: the product version's `hadoop` user for a new
    /// cluster ([`crate::build::statefulset::hadoop_user`]), the recorded one for an
    /// existing cluster ([`ValidatedCluster::keep_pod_user`]).
    pub pod_user: PodUser,
}

/// One role, checked.
pub type ValidatedRole = strata_model::identity::ValidatedRole<HdfsRole, ValidatedRoleGroup>;

impl ValidatedCluster {
    /// Validates `cluster` for the cluster DNS domain, with the ZooKeeper connection the
    /// dereference step read from the ZNode discovery ConfigMap.
    pub fn new(
        cluster: &HdfsCluster,
        cluster_domain: &str,
        zookeeper: &ZookeeperConnection,
    ) -> Result<Self, ReconcileError> {
        let identity = ClusterIdentity::new(PRODUCT, &cluster.metadata, &cluster.spec.image)?;
        check_cluster_domain(cluster_domain)?;
        let dfs_replication = cluster
            .spec
            .cluster_config
            .dfs_replication
            .unwrap_or(DEFAULT_DFS_REPLICATION);
        if dfs_replication == 0 {
            return Err(ReconcileError::invalid_spec(
                "InvalidDfsReplication",
                "clusterConfig.dfsReplication must be at least 1",
            ));
        }
        let monitoring = cluster.spec.cluster_config.monitoring.clone();
        monitoring
            .check("spec.clusterConfig.monitoring")
            .map_err(|message| {
                ReconcileError::invalid_spec(strata_model::monitoring::INVALID_MONITORING, message)
            })?;
        let namenode_http_service = cluster.spec.cluster_config.name_node_http_service.clone();
        namenode_http_service
            .check("spec.clusterConfig.nameNodeHttpService")
            .map_err(|message| ReconcileError::invalid_spec(INVALID_SERVICE_EXPOSURE, message))?;

        let checked = roll_order()
            .map(|role| role_group::check_role(&identity, role, cluster.spec.role(role)))
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        let topology = topology(&identity, &checked, cluster_domain);
        if topology.namenodes.is_empty() || topology.journalnodes.is_empty() {
            let role = if topology.namenodes.is_empty() {
                HdfsRole::NameNode
            } else {
                HdfsRole::JournalNode
            };
            return Err(ReconcileError::invalid_spec(
                "NoReplicas",
                format!(
                    "{} has no replicas; an HDFS cluster needs at least one namenode and \
                     one journalnode",
                    role.spec_field()
                ),
            ));
        }
        if topology.namenodes.len() == 1 {
            return Err(ReconcileError::invalid_spec(
                "SingleNameNode",
                "nameNodes has 1 replica: Hadoop runs a single namenode ID without HA and then \
                 refuses the journalnodes' shared edits directory (\"a shared edits dir must not \
                 be specified if HA is not enabled\"), so it could never format or start; run \
                 2 namenodes, an active and a standby",
            ));
        }
        // `<pod>-http` always fits a Service name: a StatefulSet name has at most 52
        // characters, an ordinal of a u16 replica count at most 5 digits.
        let namenode_http_services: Vec<String> = if namenode_http_service.is_default() {
            Vec::new()
        } else {
            topology
                .namenodes
                .iter()
                .map(|namenode| namenode_http_service_name(&namenode.id))
                .collect()
        };
        check_pod_service_names(&checked, &topology, &namenode_http_services)?;
        let namenode_ingress = cluster.spec.cluster_config.name_node_ingress.clone();
        if let Some(ingress) = &namenode_ingress {
            check_namenode_ingress(ingress, &topology)?;
        }
        let formatter_pod = topology
            .namenodes
            .first()
            .map(|namenode| namenode.id.clone())
            .unwrap_or_default();
        let new_cluster_id = match cluster.metadata.uid.as_deref() {
            Some(uid) if !uid.is_empty() => format!("CID-{uid}"),
            _ => format!("CID-{}-{}", identity.namespace, identity.name),
        };
        let site_context = role_group::SiteContext {
            topology: &topology,
            dfs_replication,
            zookeeper,
        };
        let roles = checked
            .into_iter()
            .map(|role| role_group::finish_role(&site_context, role))
            .collect::<Result<Vec<_>, _>>()?;
        let warnings = warnings::check(
            &roles,
            dfs_replication,
            &namenode_http_service,
            namenode_ingress.as_ref(),
        );
        let discovery = client_site(&topology, dfs_replication).map_err(|error| {
            ReconcileError::invalid_spec("InvalidClientConfig", error.to_string())
        })?;

        let pod_user = hadoop_user(&identity.image.product_version);
        Ok(Self {
            identity,
            cluster_domain: cluster_domain.to_owned(),
            dfs_replication,
            monitoring,
            namenode_http_service,
            namenode_http_addresses: BTreeMap::new(),
            namenode_ingress,
            namenode_ingress_urls: BTreeMap::new(),
            zookeeper: zookeeper.clone(),
            topology,
            discovery,
            formatter_pod,
            new_cluster_id,
            pod_user,
            roles,
            warnings,
        })
    }

    /// The validated role.
    pub fn role(&self, role: HdfsRole) -> Option<&ValidatedRole> {
        self.roles.iter().find(|validated| validated.role == role)
    }

    /// Keeps the pods on the user an existing cluster was created with (the status'
    /// `podUser`, else what its StatefulSets run as), whatever the product version
    /// says now: the files on the volumes are that user's. Returns the user the pods
    /// run as, to record.
    pub fn keep_pod_user(
        &mut self,
        recorded: Option<PodUser>,
        running: Option<PodUser>,
    ) -> PodUser {
        if let Some(user) = recorded.or(running) {
            self.pod_user = user;
        }
        self.pod_user
    }

    /// Runs the role groups of `role` named in `replicas` (by StatefulSet name) with
    /// those replicas for now instead of the spec's: a datanode group keeps its pods
    /// until they are decommissioned ([`crate::decommission`]).
    pub fn hold_replicas(&mut self, role: HdfsRole, replicas: &BTreeMap<String, u16>) {
        for validated in self
            .roles
            .iter_mut()
            .filter(|validated| validated.role == role)
        {
            for group in &mut validated.groups {
                if let Some(held) = replicas.get(group.name.object_name()) {
                    group.replicas = *held;
                }
            }
        }
    }
}

/// The order in which roles are validated, built and rolled: the edit log first, then
/// the namenodes that write it, then the datanodes that report to them.
pub const fn roll_order() -> [HdfsRole; 3] {
    [
        HdfsRole::JournalNode,
        HdfsRole::NameNode,
        HdfsRole::DataNode,
    ]
}

/// Refuses namenode Ingresses the API server would refuse: a domain that is not a
/// DNS name (a wildcard included: each namenode's host is a name under it already), a
/// namenode host name past 253 characters, a bad class, Secret or annotation key.
fn check_namenode_ingress(
    ingress: &NameNodeIngress,
    topology: &Topology,
) -> Result<(), ReconcileError> {
    const FIELD: &str = "spec.clusterConfig.nameNodeIngress";
    let refuse = |message: String| ReconcileError::invalid_spec(INVALID_INGRESS, message);
    if !is_dns_subdomain(&ingress.domain) || ingress.domain.parse::<std::net::IpAddr>().is_ok() {
        return Err(refuse(format!(
            "{FIELD}.domain: {:?} is not a domain such as hdfs.example.com (no wildcard: \
             each namenode's host name is under it, and a wildcard DNS record for it \
             points them all at the Ingress controller)",
            ingress.domain
        )));
    }
    for namenode in &topology.namenodes {
        let per_namenode = ingress.for_namenode(&namenode.id);
        if !is_dns_subdomain(&per_namenode.host) {
            return Err(refuse(format!(
                "{FIELD}.domain: the namenode {}'s host name {} is longer than a host name \
                 may be (253 characters); use a shorter domain",
                namenode.id, per_namenode.host
            )));
        }
        per_namenode.check(FIELD).map_err(refuse)?;
    }
    Ok(())
}

/// Refuses a role group whose name makes its headless Service (and StatefulSet) take
/// the name of another group's pod Service (group `a-0` next to group `a`'s pod 0), or
/// of a namenode's HTTP Service (`http_services`). The two Services would overwrite
/// each other on every reconcile.
fn check_pod_service_names(
    roles: &[role_group::CheckedRole],
    topology: &Topology,
    http_services: &[String],
) -> Result<(), ReconcileError> {
    let pod_services: Vec<&str> = topology
        .namenodes
        .iter()
        .map(|namenode| namenode.id.as_str())
        .chain(
            topology
                .journalnodes
                .iter()
                .filter_map(|fqdn| fqdn.split('.').next()),
        )
        .chain(http_services.iter().map(String::as_str))
        .collect();
    let clash = roles
        .iter()
        .flat_map(|role| &role.groups)
        .map(|group| group.name.object_name())
        .find(|name| pod_services.contains(name));
    match clash {
        Some(name) => Err(ReconcileError::invalid_spec(
            "RoleGroupNameClash",
            format!(
                "the role group whose objects are named {name} clashes with the Service \
                 {name} of a pod of another role group (every namenode and journalnode pod \
                 has a Service of its pod's name, and with nameNodeHttpService every \
                 namenode also <pod>-http); rename the role group"
            ),
        )),
        None => Ok(()),
    }
}

fn topology(
    identity: &ClusterIdentity,
    roles: &[role_group::CheckedRole],
    domain: &str,
) -> Topology {
    let pods = |role: HdfsRole| -> Vec<NameNodeAddress> {
        roles
            .iter()
            .filter(|checked| checked.role == role)
            .flat_map(|checked| &checked.groups)
            .flat_map(|group| {
                (0..group.replicas).map(|ordinal| {
                    let name = &group.name;
                    let namespace = &identity.namespace;
                    NameNodeAddress {
                        id: name.pod_name(ordinal),
                        fqdn: name.pod_fqdn(ordinal, namespace, name.object_name(), domain),
                        host: name.pod_service_host(ordinal, namespace, domain),
                    }
                })
            })
            .collect()
    };
    let journalnodes = pods(HdfsRole::JournalNode);
    Topology {
        nameservice: identity.name.to_string(),
        namenodes: pods(HdfsRole::NameNode),
        journalnodes: journalnodes.iter().map(|pod| pod.fqdn.clone()).collect(),
        journal_hosts: journalnodes.into_iter().map(|pod| pod.host).collect(),
    }
}

/// The HDFS operator's facts for the shared identity checks.
const PRODUCT: Product = Product {
    kind: "HdfsCluster",
    app_name: APP_NAME,
    operator_name: OPERATOR_NAME,
    repository: UPSTREAM_IMAGE_REPOSITORY,
    default_version: DEFAULT_PRODUCT_VERSION,
};

#[cfg(test)]
pub(crate) mod tests;
