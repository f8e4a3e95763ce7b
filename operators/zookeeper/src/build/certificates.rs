//! The certificates of a cluster with TLS, as names: which Secrets the operator keeps
//! and what each certificate must cover. Pure, so the controller and `render` agree.
//!
//! A role group's certificate covers its pods by a wildcard under its headless Service
//! (`*.<zk>-server-<rg>.<ns>.svc.<domain>`), so scaling issues nothing and rolls
//! nothing, and the client Service's names, which clients connect to.

use std::time::Duration;
use strata_model::exposure::ExternalAddress;

use strata_certificates::facts::KeyPurpose;
use strata_certificates::user::Requirements;
use strata_operator::certificates::{
    CertificateRequest, ClientCaRequest, ServerCertificateRequest,
};
use strata_operator::tls::client_ca_secret_name;

use crate::validate::ValidatedCluster;

/// The operator's certificates of `cluster`: one per role group.
pub fn certificate_request(cluster: &ValidatedCluster, lifetime: Duration) -> CertificateRequest {
    let identity = &cluster.identity;
    CertificateRequest {
        namespace: identity.namespace.clone(),
        ca_secret_name: crate::validate::ca_secret_name(identity.name.as_str()),
        ca_common_name: format!("{} ZooKeeper CA", identity.name.as_str()),
        labels: identity.labels.labels(),
        servers: cluster
            .servers
            .groups
            .iter()
            .map(|group| {
                let object_name = group.name.object_name();
                ServerCertificateRequest {
                    secret_name: crate::validate::operator_secret_name(object_name),
                    names: issued_names(cluster, object_name),
                }
            })
            .collect(),
        lifetime,
        // ZooKeeper's quorum checks nothing of a peer's certificate but its chain, so
        // the ZNodes' client certificates come from a CA the quorum does not trust.
        client_ca: Some(ClientCaRequest {
            secret_name: client_ca_secret_name(identity.name.as_str()),
            common_name: format!("{} ZooKeeper client CA", identity.name.as_str()),
        }),
    }
}

/// The names of a role group's certificate: its pods by a wildcard under its headless
/// Service, the headless Service itself, the client Service's names, and its load
/// balancer's address once it has one (a client outside checks the certificate against
/// the address it dialled).
pub fn issued_names(cluster: &ValidatedCluster, group_object_name: &str) -> Vec<String> {
    let namespace = &cluster.identity.namespace;
    let domain = &cluster.cluster_domain;
    let headless = format!("{group_object_name}.{namespace}.svc.{domain}");
    std::iter::once(format!("*.{headless}"))
        .chain(std::iter::once(headless))
        .chain(client_service_names(cluster))
        .chain(external_address(cluster))
        .collect()
}

/// The names a client may use for the client Service, longest first.
fn client_service_names(cluster: &ValidatedCluster) -> Vec<String> {
    let name = cluster.identity.name.as_str();
    let namespace = &cluster.identity.namespace;
    vec![
        format!("{name}.{namespace}.svc.{}", cluster.cluster_domain),
        format!("{name}.{namespace}.svc"),
        format!("{name}.{namespace}"),
        name.to_owned(),
    ]
}

/// What a user's certificate must hold: every server pod's FQDN and the client
/// Service's FQDN; both TLS uses, since the quorum peers connect to each other with
/// their server certificate and the JDK then checks it for `clientAuth`; and the load
/// balancer's address, warned about when left out.
pub fn requirements(cluster: &ValidatedCluster) -> Requirements {
    Requirements {
        names: required_names(cluster),
        external_names: external_address(cluster).into_iter().collect(),
        purposes: vec![KeyPurpose::ServerAuth, KeyPurpose::ClientAuth],
    }
}

/// The load balancer's address, once it has one.
fn external_address(cluster: &ValidatedCluster) -> Option<String> {
    match &cluster.external_address {
        ExternalAddress::LoadBalancer(address) => Some(address.clone()),
        _ => None,
    }
}

/// The names a user's certificate must cover: every server pod's FQDN, and the client
/// Service's FQDN.
fn required_names(cluster: &ValidatedCluster) -> Vec<String> {
    let mut names: Vec<String> = cluster
        .ensemble_servers()
        .iter()
        .map(|server| server.fqdn.clone())
        .collect();
    names.extend(client_service_names(cluster).into_iter().take(1));
    names.sort();
    names.dedup();
    names
}
