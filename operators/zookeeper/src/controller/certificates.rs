//! The certificate step of a cluster with TLS, between validation and build: the shared
//! step ([`strata_operator::tls::certificate_step`]) with ZooKeeper's names.
//!
//! - With the operator's certificates, it keeps the cluster's CA in `<zk>-ca` and a
//!   certificate per role group in `<zk>-server-<rg>-tls`, each valid for the role
//!   group's pods by a wildcard (`*.<zk>-server-<rg>.<ns>.svc.<domain>`), so scaling
//!   issues nothing and rolls nothing, and for the client Service's names.
//! - With the user's Secret, it must cover every server pod and the client Service.
//!
//! Either way the discovery ConfigMap gets the CA.

use strata_operator::controller::Context;
use strata_operator::error::ReconcileError;
use strata_operator::tls::TlsMaterial;

use super::cluster::ClusterContext;
use crate::build::certificates::{certificate_request, requirements};
use crate::validate::ValidatedCluster;

/// Reads or makes the certificates `cluster` needs, and puts the CA (the trust bundle,
/// during a CA rotation that `rotate_ca` may ask for) on its TLS settings for the
/// discovery ConfigMap. Nothing with TLS off.
pub async fn certificate_step(
    cluster: &mut ValidatedCluster,
    rotate_ca: Option<&str>,
    context: &Context<ClusterContext>,
) -> Result<TlsMaterial, ReconcileError> {
    let Some(tls) = &cluster.tls else {
        return Ok(TlsMaterial::default());
    };
    let material = strata_operator::tls::certificate_step(
        &tls.certificates,
        &cluster.identity.namespace,
        |lifetime| certificate_request(cluster, lifetime),
        &requirements(cluster),
        rotate_ca,
        context,
    )
    .await?;
    if let Some(tls) = &mut cluster.tls {
        tls.ca_pem = Some(material.ca_pem.clone());
    }
    Ok(material)
}
