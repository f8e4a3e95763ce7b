//! The operator's own client certificate for a cluster with TLS, for the ZNode
//! controller: it trusts the cluster's CA and presents a client certificate the
//! servers accept, so it connects whether or not they require client certificates.
//!
//! - With the operator's certificates, it signs a short-lived certificate of its own
//!   (`CN=zookeeper-operator`) with the cluster's client CA (`<cluster>-client-ca`), in
//!   memory, for each connection: no server's key is borrowed, and nothing long-lived
//!   is written. The client CA also signs the ZNodes' certificates; the quorum does not
//!   trust it (`crate::config::tls`).
//! - With the user's Secret, it presents that Secret's certificate, which the servers'
//!   CA signed (it must allow client authentication, as cert-manager's do by default).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::{Api, ResourceExt};
use strata_certificates::authority::{CertificateAuthority, Validity};
use strata_certificates::user::{CA_KEY, CERTIFICATE_KEY, PRIVATE_KEY_KEY};
use strata_operator::certificates::CA_PRIVATE_KEY_KEY;
use strata_operator::certificates::rotation::{NEXT_CA_KEY, PREVIOUS_CA_KEY};
use strata_operator::controller::Context;
use strata_operator::error::ReconcileError;

use super::znode::ZnodeContext;
use crate::crd::ZookeeperCluster;
use crate::validate::{CertificateSource, ca_secret_name, validate_tls};
use crate::znode_client::ClientTls;
use strata_operator::tls::client_ca_secret_name;

/// The name the operator's client certificate carries.
pub const OPERATOR_CLIENT_NAME: &str = "zookeeper-operator";

/// How long the operator's client certificate is valid: one connection's worth, with
/// room for clock skew.
const CLIENT_LIFETIME: Duration = Duration::from_secs(3600);

/// How the ZNode controller connects to a cluster with TLS, and, with the operator's
/// certificates, the CA and lifetime it signs the ZNodes' client certificates with.
#[derive(Debug)]
pub struct ClusterTls {
    /// The controller's own connection.
    pub client: ClientTls,
    /// The cluster's client CA and its certificates' lifetime; `None` with the user's
    /// certificates, whose CA key the operator does not have.
    pub signer: Option<(CertificateAuthority, Duration)>,
}

/// The TLS the ZNode controller connects with, or `None` when the cluster turned TLS
/// off. A cluster whose certificates are not there yet is a transient failure: its own
/// reconcile makes them, or says why it cannot.
pub async fn client_tls(
    cluster: &ZookeeperCluster,
    context: &Context<ZnodeContext>,
) -> Result<Option<ClusterTls>, ReconcileError> {
    let Some(tls) = validate_tls(&cluster.spec.cluster_config.tls)? else {
        return Ok(None);
    };
    let namespace = cluster.namespace().unwrap_or_default();
    match tls.certificates {
        CertificateSource::Operator { lifetime } => {
            let name = ca_secret_name(&cluster.name_any());
            let data = read(context, &namespace, &name).await?;
            let client_ca_name = client_ca_secret_name(&cluster.name_any());
            let client_ca = read(context, &namespace, &client_ca_name).await?;
            let (signing_pem, ca_key) = (
                text(&client_ca, CA_KEY),
                text(&client_ca, CA_PRIVATE_KEY_KEY),
            );
            // During a CA rotation the servers present certificates of either CA:
            // trust both, oldest first, as the operator's trust bundles do.
            let ca_pem = [PREVIOUS_CA_KEY, CA_KEY, NEXT_CA_KEY]
                .into_iter()
                .map(|key| text(&data, key))
                .filter(|pem| !pem.trim().is_empty())
                .collect::<Vec<_>>()
                .join("\n");
            let authority = CertificateAuthority::from_pem(&signing_pem, &ca_key)
                .map_err(|error| not_ready(&client_ca_name, &error.to_string()))?;
            let issued = authority
                .issue(
                    &[OPERATOR_CLIENT_NAME.to_owned()],
                    Validity::starting(SystemTime::now(), CLIENT_LIFETIME),
                )
                .map_err(|error| {
                    ReconcileError::operator_bug(
                        "ClientCertificateFailed",
                        format!("cannot sign the operator's client certificate: {error}"),
                    )
                })?;
            Ok(Some(ClusterTls {
                client: ClientTls {
                    ca_pem,
                    certificate_pem: issued.certificate_pem().to_owned(),
                    key_pem: issued.key_pem().to_owned(),
                },
                signer: Some((authority, lifetime)),
            }))
        }
        CertificateSource::User { secret_name } => {
            let data = read(context, &namespace, &secret_name).await?;
            Ok(Some(ClusterTls {
                client: ClientTls {
                    ca_pem: text(&data, CA_KEY),
                    certificate_pem: text(&data, CERTIFICATE_KEY),
                    key_pem: text(&data, PRIVATE_KEY_KEY),
                },
                signer: None,
            }))
        }
    }
}

async fn read(
    context: &Context<ZnodeContext>,
    namespace: &str,
    name: &str,
) -> Result<BTreeMap<String, Vec<u8>>, ReconcileError> {
    read_optional(context, namespace, name)
        .await?
        .ok_or_else(|| not_ready(name, "it does not exist yet"))
}

/// The values of the Secret `name`, `None` when it does not exist.
pub async fn read_optional(
    context: &Context<ZnodeContext>,
    namespace: &str,
    name: &str,
) -> Result<Option<BTreeMap<String, Vec<u8>>>, ReconcileError> {
    let api: Api<Secret> = Api::namespaced(context.client.clone(), namespace);
    let secret = api.get_opt(name).await.map_err(|source| {
        ReconcileError::from_kube("SecretReadFailed", format!("reading Secret {name}"), source)
    })?;
    Ok(secret.map(|secret| {
        secret
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(key, ByteString(bytes))| (key, bytes))
            .collect()
    }))
}

fn text(data: &BTreeMap<String, Vec<u8>>, key: &str) -> String {
    data.get(key)
        .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
        .unwrap_or_default()
}

fn not_ready(secret: &str, why: &str) -> ReconcileError {
    ReconcileError::transient(
        "ClusterTlsNotReady",
        format!(
            "the cluster serves TLS, but its Secret {secret} cannot give the operator a client \
             certificate: {why}"
        ),
    )
}
