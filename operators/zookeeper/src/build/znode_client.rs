//! A ZNode's client certificate: what an application that uses the znode presents
//! to an ensemble that requires client certificates (`clientAuthentication:
//! Required`), such as HDFS's failover controllers.
//!
//! The ZNode is the grant: whoever may read its Secret may connect. With the
//! operator's certificates, the ZNode controller issues one certificate per ZNode,
//! signed by the cluster's client CA (`<cluster>-client-ca`), which the servers trust
//! for clients and the quorum does not: a ZNode's certificate cannot join the quorum.
//! It is named `<znode>.<namespace>` (the subject a server's X.509 ACLs see), renewed
//! two thirds into the cluster's certificate lifetime, and kept in
//! `<znode>-client-tls`, owned by the ZNode:
//! - `tls.crt`, `tls.key`, as cert-manager writes them, and `ca.crt`, the CAs a client
//!   checks the servers against: the cluster's whole trust bundle, both CAs during a
//!   rotation, kept current while the certificate is kept;
//! - `keystore.p12`, the same key and its chain (the client CA) as PKCS#12 for JVM clients, whose
//!   password [`KEYSTORE_PASSWORD`] protects nothing (the Secret does), and is fixed
//!   so that clients can be configured before the Secret exists.
//!
//! The ZNode's discovery ConfigMap names the Secret (`ZOOKEEPER_CLIENT_SECRET`). With
//! the user's own certificates there is no CA key to sign with, and no such Secret.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use strata_certificates::authority::CertificateAuthority;
use strata_certificates::keystore::keystore;
use strata_certificates::plan::{IssueReason, ServerPlan, plan_server};
use strata_certificates::user::{CA_KEY, CERTIFICATE_KEY, PRIVATE_KEY_KEY};
use strata_model::build::object_meta;
use strata_operator::certificates::{FINGERPRINT_ANNOTATION, fingerprint};
use strata_operator::error::ReconcileError;

/// The discovery key that names the ZNode's client certificate Secret.
pub const ZOOKEEPER_CLIENT_SECRET_KEY: &str = "ZOOKEEPER_CLIENT_SECRET";
/// The Secret's key with the PKCS#12 keystore.
pub const KEYSTORE_KEY: &str = "keystore.p12";
/// The keystore's password (see the module).
pub const KEYSTORE_PASSWORD: &str = "strata-zookeeper-client";

/// `<znode>-client-tls`.
pub fn client_secret_name(znode: &str) -> String {
    format!("{znode}-client-tls")
}

/// The Secret to apply: what is compared (`shown`, with the certificate's
/// fingerprint) and what is sent (`sealed`, with the values); why a certificate was
/// issued, if one was; and when the kept or new one is due for renewal.
pub struct ClientSecret {
    /// Compared and shown.
    pub shown: Secret,
    /// Sent.
    pub sealed: Secret,
    /// Why a new certificate was issued in this reconcile.
    pub issued: Option<IssueReason>,
}

/// Shows what was decided, never the sealed values.
impl std::fmt::Debug for ClientSecret {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ClientSecret")
            .field("shown", &self.shown)
            .field("issued", &self.issued)
            .finish_non_exhaustive()
    }
}

/// What a ZNode's certificate is signed with, and what its Secret trusts.
#[derive(Clone, Copy, Debug)]
pub struct ClientSigning<'a> {
    /// The cluster's client CA.
    pub ca: &'a CertificateAuthority,
    /// The CAs a client checks the servers against (`ca.crt`): the cluster's trust
    /// bundle.
    pub trusted_pem: &'a str,
    /// The cluster's certificate lifetime.
    pub lifetime: Duration,
}

/// Keeps the certificate in `existing` (the Secret's values) while it is readable,
/// signed by the signing CA, names the ZNode and is not due for renewal; otherwise
/// issues one. Either way `ca.crt` is the trust bundle of `signing`.
pub fn client_secret(
    znode: &str,
    namespace: &str,
    labels: BTreeMap<String, String>,
    signing: ClientSigning<'_>,
    existing: Option<&BTreeMap<String, Vec<u8>>>,
    now: SystemTime,
) -> Result<ClientSecret, ReconcileError> {
    let ClientSigning {
        ca,
        trusted_pem,
        lifetime,
    } = signing;
    let text = |key: &str| {
        existing
            .and_then(|data| data.get(key))
            .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
    };
    let pair = text(CERTIFICATE_KEY).zip(text(PRIVATE_KEY_KEY));
    let names = [format!("{znode}.{namespace}")];
    let failed = |error: strata_certificates::CertificateError| {
        ReconcileError::operator_bug(
            "ClientCertificateFailed",
            format!("cannot issue the client certificate of ZNode {znode}: {error}"),
        )
    };
    let plan = plan_server(
        pair.as_ref()
            .map(|(certificate, key)| (certificate.as_str(), key.as_str())),
        ca,
        &names,
        now,
        lifetime,
    )
    .map_err(failed)?;
    let (mut data, issued) = match plan {
        ServerPlan::Keep { .. } => (existing.cloned().unwrap_or_default(), None),
        ServerPlan::Issue {
            certificate,
            reason,
        } => {
            let store =
                keystore(&certificate, ca.certificate_pem(), KEYSTORE_PASSWORD).map_err(failed)?;
            let data = BTreeMap::from([
                (
                    CERTIFICATE_KEY.to_owned(),
                    certificate.certificate_pem().as_bytes().to_vec(),
                ),
                (
                    PRIVATE_KEY_KEY.to_owned(),
                    certificate.key_pem().as_bytes().to_vec(),
                ),
                (KEYSTORE_KEY.to_owned(), store),
            ]);
            (data, Some(reason))
        }
    };
    data.insert(CA_KEY.to_owned(), trusted_pem.as_bytes().to_vec());
    let certificate = String::from_utf8_lossy(
        data.get(CERTIFICATE_KEY)
            .map(Vec::as_slice)
            .unwrap_or_default(),
    )
    .into_owned();
    // The trust bundle is in the fingerprint: what is compared must change when
    // `ca.crt` does, as during a CA rotation, while the certificate is kept.
    let mut metadata = object_meta(&client_secret_name(znode), namespace, labels);
    metadata.annotations = Some(BTreeMap::from([(
        FINGERPRINT_ANNOTATION.to_owned(),
        fingerprint(&format!("{certificate}\n{trusted_pem}")),
    )]));
    let shown = Secret {
        metadata,
        type_: Some("Opaque".to_owned()),
        ..Secret::default()
    };
    let mut sealed = shown.clone();
    sealed.data = Some(
        data.into_iter()
            .map(|(key, value)| (key, ByteString(value)))
            .collect(),
    );
    Ok(ClientSecret {
        shown,
        sealed,
        issued,
    })
}

#[cfg(test)]
mod tests {
    use strata_certificates::authority::Validity;
    use strata_certificates::facts::CertificateFacts;

    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    fn ca(now: SystemTime) -> CertificateAuthority {
        CertificateAuthority::create("test-ca", Validity::starting(now, 100 * HOUR))
            .unwrap_or_else(|error| unreachable!("a CA: {error}"))
    }

    fn values(secret: &Secret) -> BTreeMap<String, Vec<u8>> {
        secret
            .data
            .clone()
            .unwrap_or_default()
            .into_iter()
            .map(|(key, value)| (key, value.0))
            .collect()
    }

    /// Signed by `ca`, trusting the servers' CA `servers`.
    fn signing<'a>(ca: &'a CertificateAuthority, servers: &'a str) -> ClientSigning<'a> {
        ClientSigning {
            ca,
            trusted_pem: servers,
            lifetime: 3 * HOUR,
        }
    }

    #[test]
    fn a_client_certificate_is_issued_kept_then_renewed() -> Result<(), ReconcileError> {
        let now = SystemTime::now();
        let ca = ca(now);
        let servers = "servers' CA";
        let first = client_secret(
            "hdfs",
            "data",
            BTreeMap::new(),
            signing(&ca, servers),
            None,
            now,
        )?;
        assert_eq!(first.issued, Some(IssueReason::Missing));
        assert_eq!(
            first.shown.metadata.name.as_deref(),
            Some("hdfs-client-tls")
        );
        assert!(first.shown.data.is_none(), "no value in what is compared");
        let stored = values(&first.sealed);
        let keys: Vec<&str> = stored.keys().map(String::as_str).collect();
        assert_eq!(keys, ["ca.crt", "keystore.p12", "tls.crt", "tls.key"]);
        let certificate = String::from_utf8_lossy(&stored["tls.crt"]).into_owned();
        let facts = CertificateFacts::read("client", &certificate)
            .map_err(|error| ReconcileError::operator_bug("Test", error.to_string()))?;
        assert!(facts.missing_names(&["hdfs.data".to_owned()]).is_empty());
        let store = p12_keystore::KeyStore::from_pkcs12(&stored["keystore.p12"], KEYSTORE_PASSWORD)
            .map_err(|error| ReconcileError::operator_bug("Test", error.to_string()))?;
        assert_eq!(store.entries().count(), 1);

        let an_hour_later = now + HOUR;
        let kept = client_secret(
            "hdfs",
            "data",
            BTreeMap::new(),
            signing(&ca, servers),
            Some(&stored),
            an_hour_later,
        )?;
        assert_eq!(kept.issued, None);
        assert_eq!(
            kept.shown, first.shown,
            "the same fingerprint: nothing to write"
        );

        let two_thirds_on = now + 2 * HOUR + Duration::from_secs(60);
        let renewed = client_secret(
            "hdfs",
            "data",
            BTreeMap::new(),
            signing(&ca, servers),
            Some(&stored),
            two_thirds_on,
        )?;
        assert_eq!(renewed.issued, Some(IssueReason::RenewalDue));
        assert_ne!(renewed.shown, first.shown);
        Ok(())
    }

    #[test]
    fn ca_crt_is_the_servers_trust_bundle_and_follows_it_while_the_certificate_is_kept()
    -> Result<(), ReconcileError> {
        let now = SystemTime::now();
        let client_ca = ca(now);
        let first = client_secret(
            "hdfs",
            "data",
            BTreeMap::new(),
            signing(&client_ca, "old servers' CA"),
            None,
            now,
        )?;
        let stored = values(&first.sealed);
        assert_eq!(
            stored["ca.crt"], b"old servers' CA",
            "clients check the servers against the servers' CA, not the client CA"
        );

        let rotating = "old servers' CA\nnew servers' CA";
        let during_a_rotation = client_secret(
            "hdfs",
            "data",
            BTreeMap::new(),
            signing(&client_ca, rotating),
            Some(&stored),
            now + HOUR,
        )?;
        assert_eq!(during_a_rotation.issued, None, "the certificate is kept");
        assert_ne!(
            during_a_rotation.shown, first.shown,
            "a new bundle is written"
        );
        assert_eq!(
            values(&during_a_rotation.sealed)["ca.crt"],
            rotating.as_bytes()
        );
        Ok(())
    }
}
