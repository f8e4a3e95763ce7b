//! The certificates of a cluster with TLS, as names: which Secrets the operator keeps
//! and what each certificate must cover. Pure, so the controller and `render` agree.
//!
//! A role group's certificate covers its pods by a wildcard under its headless Service
//! (`*.<trino>-<role>-<rg>.<ns>.svc.<domain>`), which is how the nodes know each other
//! (`node.internal-address-source=FQDN`) and how `discovery.uri` names the coordinator,
//! so scaling issues nothing and rolls nothing; and the coordinator Service's names,
//! which clients connect to.

use std::time::Duration;

use strata_certificates::facts::KeyPurpose;
use strata_certificates::user::Requirements;
use strata_operator::certificates::{CertificateRequest, ServerCertificateRequest};
use strata_operator::tls::{ca_secret_name, operator_secret_name};

use crate::validate::ValidatedCluster;

/// The operator's certificates of `cluster`: one per role group.
pub fn certificate_request(cluster: &ValidatedCluster, lifetime: Duration) -> CertificateRequest {
    let identity = &cluster.identity;
    CertificateRequest {
        namespace: identity.namespace.clone(),
        ca_secret_name: ca_secret_name(identity.name.as_str()),
        ca_common_name: format!("{} Trino CA", identity.name.as_str()),
        labels: identity.labels.labels(),
        servers: cluster
            .roles
            .iter()
            .flat_map(|role| &role.groups)
            .map(|group| {
                let object_name = group.name.object_name();
                ServerCertificateRequest {
                    secret_name: operator_secret_name(object_name),
                    names: issued_names(cluster, object_name),
                }
            })
            .collect(),
        lifetime,
        client_ca: None,
    }
}

/// The names of a role group's certificate: its pods by a wildcard under its headless
/// Service, the headless Service itself, the coordinator Service's names, and its
/// external address once it has one (a client outside checks the certificate against
/// the address it dialled).
pub fn issued_names(cluster: &ValidatedCluster, group_object_name: &str) -> Vec<String> {
    let headless = format!("{group_object_name}.{}", service_suffix(cluster));
    std::iter::once(format!("*.{headless}"))
        .chain(std::iter::once(headless))
        .chain(coordinator_service_names(cluster))
        .chain(cluster.external_names.iter().cloned())
        .collect()
}

/// `<ns>.svc.<domain>`: what follows a Service's name in its FQDN.
pub fn service_suffix(cluster: &ValidatedCluster) -> String {
    format!(
        "{}.svc.{}",
        cluster.identity.namespace, cluster.cluster_domain
    )
}

/// The names a client may use for the coordinator Service, longest first.
pub fn coordinator_service_names(cluster: &ValidatedCluster) -> Vec<String> {
    let name = cluster.coordinator_service();
    let namespace = &cluster.identity.namespace;
    vec![
        format!("{name}.{}", service_suffix(cluster)),
        format!("{name}.{namespace}.svc"),
        format!("{name}.{namespace}"),
        name,
    ]
}

/// What a user's certificate must hold: every pod's FQDN and the coordinator Service's
/// FQDN; `serverAuth` (no node asks another for a client certificate); and the external
/// addresses, warned about when left out.
pub fn requirements(cluster: &ValidatedCluster) -> Requirements {
    Requirements {
        names: required_names(cluster),
        external_names: cluster.external_names.clone(),
        purposes: vec![KeyPurpose::ServerAuth],
    }
}

/// The names a user's certificate must cover: every pod's FQDN (the nodes reach each
/// other by it), and the coordinator Service's FQDN.
fn required_names(cluster: &ValidatedCluster) -> Vec<String> {
    let suffix = service_suffix(cluster);
    let mut names: Vec<String> = cluster
        .roles
        .iter()
        .flat_map(|role| &role.groups)
        .flat_map(|group| {
            let object_name = group.name.object_name();
            let suffix = &suffix;
            (0..group.replicas)
                .map(move |ordinal| format!("{object_name}-{ordinal}.{object_name}.{suffix}"))
        })
        .collect();
    names.extend(coordinator_service_names(cluster).into_iter().take(1));
    names.sort();
    names.dedup();
    names
}
