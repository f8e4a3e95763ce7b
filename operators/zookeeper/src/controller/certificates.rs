//! The certificate step of a cluster with TLS, between validation and build.
//!
//! - With the operator's certificates, the shared step ([`strata_operator::certificates`])
//!   keeps the cluster's CA in `<zk>-ca` and a certificate per role group in
//!   `<zk>-server-<rg>-tls`. Each is valid for the role group's pods by a wildcard
//!   (`*.<zk>-server-<rg>.<ns>.svc.<domain>`), so scaling issues nothing and rolls
//!   nothing, and for the client Service's names, which clients connect to.
//! - With the user's Secret, its values are read and checked before anything is applied:
//!   a missing key, a PKCS#1 key, a certificate from another CA or one that leaves a
//!   server pod or the client Service out is a Degraded reason; one about to expire is a
//!   Warning.
//!
//! Either way the pod templates carry what identifies the certificates (the server
//! Secrets' fingerprints, or the user's Secret's version), so a new one rolls the pods,
//! and the discovery ConfigMap gets the CA.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use strata_certificates::user::{CA_KEY, check_user_certificate};
use strata_operator::certificates::{plan_certificates, read_secret, read_stored};
use strata_operator::controller::Context;
use strata_operator::error::ReconcileError;
use strata_operator::reference::{KeySource, KeysRead};
use strata_status::SpecWarning;

use super::cluster::ClusterContext;
use crate::build::certificates::{certificate_request, required_names};
use crate::validate::{CertificateSource, TLS_SECRET_KEYS, ValidatedCluster};

/// What the certificate step hands to the build step and the status.
#[derive(Debug, Default)]
pub struct TlsMaterial {
    /// What rolls the pods: `Secret/<name>` to its fingerprint or version.
    pub versions: BTreeMap<String, String>,
    /// The operator's Secrets to apply, if it issues the certificates.
    pub certificates: Option<strata_operator::certificates::Certificates>,
    /// A user's certificate close to its end.
    pub warning: Option<SpecWarning>,
    /// When to come back for the next renewal.
    pub renew_in: Option<Duration>,
}

/// Reads or makes the certificates `cluster` needs, and puts the CA on its TLS settings
/// for the discovery ConfigMap. Nothing with TLS off.
pub async fn certificate_step(
    cluster: &mut ValidatedCluster,
    context: &Context<ClusterContext>,
) -> Result<TlsMaterial, ReconcileError> {
    let Some(tls) = &cluster.tls else {
        return Ok(TlsMaterial::default());
    };
    let now = SystemTime::now();
    let (material, ca_pem) = match &tls.certificates {
        CertificateSource::Operator { lifetime } => {
            let request = certificate_request(cluster, *lifetime);
            let stored = read_stored(
                &context.client,
                &context.caches,
                &context.secret_values,
                &request,
            )
            .await?;
            let certificates = plan_certificates(&request, &stored, now)?;
            let material = TlsMaterial {
                versions: certificates
                    .fingerprints
                    .iter()
                    .map(|(name, fingerprint)| (format!("Secret/{name}"), fingerprint.clone()))
                    .collect(),
                renew_in: certificates.renew_in(now),
                warning: None,
                certificates: Some(certificates.clone()),
            };
            (material, certificates.ca_pem)
        }
        CertificateSource::User { secret_name } => {
            user_certificate(cluster, secret_name, context, now).await?
        }
    };
    if let Some(tls) = &mut cluster.tls {
        tls.ca_pem = Some(ca_pem);
    }
    Ok(material)
}

async fn user_certificate(
    cluster: &ValidatedCluster,
    secret_name: &str,
    context: &Context<ClusterContext>,
    now: SystemTime,
) -> Result<(TlsMaterial, String), ReconcileError> {
    let namespace = &cluster.identity.namespace;
    // The reference cache says whether the Secret and its keys exist, and its version
    // rolls the pods; it was registered for the cluster, so a change requeues it.
    let versions = context
        .references
        .check_keys(
            namespace,
            [KeysRead {
                object: KeySource::Secret,
                name: secret_name,
                keys: TLS_SECRET_KEYS.to_vec(),
                field: "clusterConfig.tls.secretName",
            }],
        )
        .map_err(ReconcileError::from)?;
    // The reference cache's version is `<uid>/<resourceVersion>`; the values read
    // before are kept by `resourceVersion`.
    let version = versions
        .get(&format!("Secret/{secret_name}"))
        .and_then(|version| version.rsplit('/').next());
    let data = read_secret(
        &context.client,
        &context.secret_values,
        namespace,
        secret_name,
        version,
    )
    .await?
    .unwrap_or_default();
    let checked =
        check_user_certificate(&data, &required_names(cluster), now).map_err(|problem| {
            ReconcileError::invalid_spec(
                problem.reason(),
                format!("Secret {secret_name} (clusterConfig.tls.secretName): {problem}"),
            )
        })?;
    let ca_pem =
        String::from_utf8_lossy(data.get(CA_KEY).map_or(&[][..], Vec::as_slice)).into_owned();
    let material = TlsMaterial {
        versions,
        certificates: None,
        warning: checked.expiry_warning.map(|message| SpecWarning {
            reason: strata_status::reason!("TlsCertificateExpiring"),
            message: format!("Secret {secret_name}: {message}"),
        }),
        renew_in: None,
    };
    Ok((material, ca_pem))
}
