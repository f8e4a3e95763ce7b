//! Validation: turns a `ZookeeperCluster` into a [`ValidatedCluster`], the merged and
//! checked model every build function reads.
//!
//! Everything that can be wrong with a spec is found here, so the build step cannot fail
//! on user input: names that would exceed Kubernetes' limits, invalid images, quantities
//! and durations, config overrides, and overlapping server id ranges. Each problem becomes
//! [`ReconcileError::invalid_spec`] with a CamelCase reason and a message naming the field
//! or role group, never a panic.

mod role_group;

use std::collections::BTreeMap;

use kube::ResourceExt;

use strata_model::exposure::{
    ExternalAddress, INVALID_SERVICE_EXPOSURE, ServiceExposure, ServiceType,
};
use strata_model::identity::{ClusterIdentity, Product, ValidatedRole, check_cluster_domain};
use strata_model::monitoring::{INVALID_MONITORING, Monitoring};
use strata_operator::error::ReconcileError;
use strata_status::SpecWarning;

pub use self::role_group::{
    HEAP_PERCENT_OF_MEMORY, MIN_MEMORY_LIMIT_MIB, ServerGroup, ValidatedRoleGroup,
};
use crate::config::TlsSettings;
use crate::crd::config::PeerType;
use crate::crd::{
    APP_NAME, ClientAuthentication, DEFAULT_PRODUCT_VERSION, OPERATOR_NAME, SERVER_ROLE,
    UPSTREAM_IMAGE_REPOSITORY, ZookeeperCluster, ZookeeperConfig, ZookeeperConfigOverrides,
    ZookeeperTls, ZookeeperZnode,
};
use crate::membership::{DesiredMembership, GroupMembers, GroupPlan};
pub use strata_model::duration::{DurationError, parse_seconds};
pub use strata_model::quantity::{QuantityError, canonical, parse_milli};
use strata_model::role::{GenericRoleConfig, Role, RoleGroup};

pub use strata_model::identity::DEFAULT_CLUSTER_DOMAIN;
use strata_operator::tls::certificate_source;
pub use strata_operator::tls::{
    CertificateSource, DEFAULT_CERTIFICATE_LIFETIME, MINIMUM_CERTIFICATE_LIFETIME, TLS_SECRET_KEYS,
    ca_secret_name, operator_secret_name,
};

/// A `ZookeeperCluster` with every default applied and every rule checked.
///
/// Fields are public for reading; `#[non_exhaustive]` makes [`ValidatedCluster::new`] the
/// only way other crates obtain one, so holding a value proves the spec was validated.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ValidatedCluster {
    /// Who the cluster is: its name, its namespace (every built object's), the
    /// image every pod runs and the labels of cluster-wide objects.
    pub identity: ClusterIdentity,
    /// Cluster DNS domain used in host names (`cluster.local` by default).
    pub cluster_domain: String,
    /// The one role, `server`: `<cluster>-server` names its PodDisruptionBudget.
    pub servers: ValidatedRole<(), ValidatedRoleGroup>,
    /// TLS for clients and the quorum, or `None` for plaintext.
    pub tls: Option<ValidatedTls>,
    /// How the client Service is exposed.
    pub service: ServiceExposure,
    /// What a Prometheus Operator gets.
    pub monitoring: Monitoring,
    /// Where clients outside reach the client Service, as far as the API server knows
    /// it: set by the controller from the stored Service, for discovery and the
    /// certificates' names.
    pub external_address: ExternalAddress,
}

/// TLS, checked: where the certificates come from, and what `zoo.cfg` says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidatedTls {
    /// The operator's certificates, or the user's Secret.
    pub certificates: CertificateSource,
    /// What `zoo.cfg` says.
    pub settings: TlsSettings,
    /// The CA clients trust, for the discovery ConfigMap: set by the certificate step,
    /// which reads or makes it; `None` in `render`, which has no cluster to read.
    pub ca_pem: Option<String>,
}

impl ValidatedTls {
    /// The Secret the servers of the role group `group_object_name`
    /// (`<cluster>-server-<roleGroup>`) mount.
    pub fn secret_name(&self, group_object_name: &str) -> String {
        self.certificates.secret_name(group_object_name)
    }
}

/// `clusterConfig.tls`: on unless `enabled: false`, with the operator's certificates
/// unless a Secret is named.
pub fn validate_tls(tls: &ZookeeperTls) -> Result<Option<ValidatedTls>, ReconcileError> {
    let source = certificate_source(
        tls.enabled,
        tls.secret_name.as_deref(),
        tls.certificate_lifetime.as_deref(),
    )?;
    Ok(source.map(|certificates| ValidatedTls {
        settings: TlsSettings {
            client_auth_required: tls.client_authentication == ClientAuthentication::Required,
            separate_client_ca: matches!(certificates, CertificateSource::Operator { .. }),
        },
        certificates,
        ca_pem: None,
    }))
}

/// The cluster owner's consent: a ZNode in the cluster's own namespace, or in
/// one its `clusterConfig.znodeNamespaces` lists, may use it. Any other is refused
/// before it gets a path or a client certificate: the right to create a ZNode in some
/// namespace must not become a path and a client certificate of every ensemble.
pub fn znode_namespace_allowed(
    znode: &ZookeeperZnode,
    cluster: &ZookeeperCluster,
) -> Result<(), ReconcileError> {
    let znode_namespace = znode.namespace().unwrap_or_default();
    let cluster_namespace = cluster.namespace().unwrap_or_default();
    let listed = &cluster.spec.cluster_config.znode_namespaces;
    if znode_namespace == cluster_namespace || listed.contains(&znode_namespace) {
        return Ok(());
    }
    Err(ReconcileError::invalid_spec(
        "ZnodeNamespaceNotAllowed",
        format!(
            "ZookeeperCluster {cluster_namespace}/{} does not allow ZNodes from namespace \
             {znode_namespace}: this ZNode gets no path and no client certificate. The \
             cluster's owner may add {znode_namespace} to spec.clusterConfig.znodeNamespaces",
            cluster.name_any()
        ),
    ))
}

/// The Warning a cluster exposed outside the cluster carries when clients need no
/// certificate: a node port, or a load balancer without source ranges, with
/// `clientAuthentication: None` (or no TLS) lets every network that reaches it read
/// and change every znode the applications left open (the ZNodes' paths are
/// `world:anyone`). The server's certificate authenticates nobody.
pub fn exposure_warning(cluster: &ValidatedCluster) -> Option<SpecWarning> {
    let service = &cluster.service;
    let open_to = service.open_to()?;
    let clients_authenticated = cluster
        .tls
        .as_ref()
        .is_some_and(|tls| tls.settings.client_auth_required);
    (!clients_authenticated).then(|| SpecWarning {
        reason: strata_status::reason!("ZookeeperOpen"),
        message: format!(
            "clusterConfig.service is a {} open to {open_to}, and clients need no \
             certificate: anyone there may read and change every znode without an ACL. \
             Set clusterConfig.tls.clientAuthentication: Required (each ZNode's Secret \
             holds a client certificate), or loadBalancerSourceRanges to the networks you \
             trust",
            service.type_
        ),
    })
}

/// The Warning a cluster with TLS turned off carries.
pub fn plaintext_warning(cluster: &ValidatedCluster) -> Option<SpecWarning> {
    cluster.tls.is_none().then(|| SpecWarning {
        reason: strata_status::reason!("TlsDisabled"),
        message: "clusterConfig.tls.enabled is false: clients and the quorum talk in \
                  plaintext, and anyone who reaches the pods can read and change every znode. \
                  Remove the setting to have TLS with the operator's certificates"
            .to_owned(),
    })
}

impl ValidatedCluster {
    /// Validates `cluster` for the given cluster DNS domain.
    ///
    /// Pausing and stopping are the apply step's concern, and an unknown
    /// `operator-command` is reported by the status step, so none of them affects
    /// validation: a stopped cluster validates to the ensemble it will run again.
    pub fn new(cluster: &ZookeeperCluster, cluster_domain: &str) -> Result<Self, ReconcileError> {
        Self::with_servers(cluster, cluster_domain, &cluster.spec.servers, None)
    }

    /// Validates `cluster` as it runs during a membership change: each role group with
    /// the servers `membership` gives it (none for a spec group that has not joined
    /// yet), and groups the spec no longer has (draining one server at a time) built
    /// from the role's settings with their recorded `myidOffset`. With the settled
    /// membership it equals [`ValidatedCluster::new`].
    pub fn for_membership(
        cluster: &ZookeeperCluster,
        cluster_domain: &str,
        membership: &BTreeMap<String, GroupPlan>,
    ) -> Result<Self, ReconcileError> {
        let mut servers = cluster.spec.servers.clone();
        for (name, group) in &mut servers.role_groups {
            if !membership.contains_key(name) {
                group.replicas = Some(0);
            }
        }
        for (name, plan) in membership {
            let group = servers
                .role_groups
                .entry(name.clone())
                .or_insert_with(|| RoleGroup {
                    config: ZookeeperConfig {
                        myid_offset: Some(plan.members.myid_offset),
                        peer_type: Some(if plan.members.observer {
                            PeerType::Observer
                        } else {
                            PeerType::Participant
                        }),
                        ..ZookeeperConfig::default()
                    },
                    ..RoleGroup::default()
                });
            group.replicas = Some(plan.members.servers);
        }
        Self::with_servers(cluster, cluster_domain, &servers, Some(membership))
    }

    /// The ensemble the spec asks for, per role group.
    pub fn membership(&self) -> DesiredMembership {
        self.servers
            .groups
            .iter()
            .map(|group| {
                (
                    group.name.role_group().as_str().to_owned(),
                    GroupMembers {
                        myid_offset: group.product.myid_offset,
                        servers: group.replicas,
                        observer: group.product.observer,
                    },
                )
            })
            .collect()
    }

    fn with_servers(
        cluster: &ZookeeperCluster,
        cluster_domain: &str,
        servers: &Role<ZookeeperConfig, GenericRoleConfig, ZookeeperConfigOverrides>,
        membership: Option<&BTreeMap<String, GroupPlan>>,
    ) -> Result<Self, ReconcileError> {
        let identity = ClusterIdentity::new(PRODUCT, &cluster.metadata, &cluster.spec.image)?;
        check_cluster_domain(cluster_domain)?;
        let role = identity.role_with_groups(SERVER_ROLE, "servers", &servers.role_groups)?;
        let merged: BTreeMap<_, _> =
            servers.merged_role_groups(&ZookeeperConfig::product_defaults());
        let tls = validate_tls(&cluster.spec.cluster_config.tls)?;
        let service = cluster.spec.cluster_config.service.clone();
        service
            .check("spec.clusterConfig.service")
            .map_err(|message| ReconcileError::invalid_spec(INVALID_SERVICE_EXPOSURE, message))?;
        let monitoring = cluster.spec.cluster_config.monitoring.clone();
        monitoring
            .check("spec.clusterConfig.monitoring")
            .map_err(|message| ReconcileError::invalid_spec(INVALID_MONITORING, message))?;
        let context = role_group::Context {
            identity: &identity,
            role: &role,
            cluster_domain,
            tls: tls.as_ref().map(|tls| tls.settings),
            exposed: service.type_ != ServiceType::ClusterIP,
        };
        let mut role_groups = role_group::validate_all(&context, merged.values())?;
        for group in &mut role_groups {
            group.product.joining = membership
                .and_then(|membership| membership.get(group.name.role_group().as_str()))
                .and_then(|plan| plan.joining);
        }

        Ok(Self {
            identity,
            cluster_domain: cluster_domain.to_owned(),
            servers: ValidatedRole::new(
                (),
                role,
                servers.role_config.pod_disruption_budget.clone(),
                role_groups,
            ),
            tls,
            service,
            monitoring,
            external_address: ExternalAddress::None,
        })
    }

    /// Every server of the ensemble this step runs: each role group's `zoo.cfg` lists
    /// them all, so the first one's list is the ensemble's.
    pub fn ensemble_servers(&self) -> &[crate::config::server_ids::Server] {
        self.servers
            .groups
            .first()
            .map(|group| group.product.zoo_cfg.ensemble().servers())
            .unwrap_or_default()
    }

    /// `<cluster>.<namespace>.svc.<domain>:2181`: how clients reach the ensemble through
    /// the client Service.
    pub fn connection_hosts(&self) -> String {
        self.connection_hosts_at(crate::config::zoo_cfg::CLIENT_PORT)
    }

    /// The client Service's `<cluster>.<namespace>.svc.<domain>:<port>`.
    pub fn connection_hosts_at(&self, port: u16) -> String {
        service_hosts(
            self.identity.name.as_str(),
            &self.identity.namespace,
            &self.cluster_domain,
            port,
        )
    }
}

/// The connection string of a cluster's client Service, for callers that only know the
/// cluster's name, such as the ZNode controller.
pub fn connection_hosts(cluster: &str, namespace: &str, cluster_domain: &str) -> String {
    service_hosts(
        cluster,
        namespace,
        cluster_domain,
        crate::config::zoo_cfg::CLIENT_PORT,
    )
}

fn service_hosts(cluster: &str, namespace: &str, cluster_domain: &str, port: u16) -> String {
    format!("{cluster}.{namespace}.svc.{cluster_domain}:{port}")
}

/// The ZooKeeper operator's facts for the shared identity checks.
const PRODUCT: Product = Product {
    kind: "ZookeeperCluster",
    app_name: APP_NAME,
    operator_name: OPERATOR_NAME,
    repository: UPSTREAM_IMAGE_REPOSITORY,
    default_version: DEFAULT_PRODUCT_VERSION,
};

#[cfg(test)]
pub(crate) mod tests;
