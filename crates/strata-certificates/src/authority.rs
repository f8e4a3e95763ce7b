//! A cluster's CA and the server certificates it signs.
//!
//! The CA is made once, when the cluster has none, and is loaded from its PEM on
//! every reconcile after that: every pod and client trusts it, so a new one would cut
//! them all off. Server certificates are ECDSA P-256, with the names given as their
//! SANs, for server and client authentication (the products' quorum and internal
//! traffic uses one certificate for both ends).

use std::fmt;
use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PublicKeyData, SerialNumber,
};
use time::OffsetDateTime;

use crate::CertificateError;
use crate::facts::{CertificateFacts, KeyPurpose};

/// How long before `now` a certificate starts: another machine's clock may lag. At most
/// a tenth of the lifetime ([`Validity::starting`]).
const BACKDATED: Duration = Duration::from_secs(3600);

/// When a certificate is valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Validity {
    /// Its first second.
    pub not_before: SystemTime,
    /// Its last.
    pub not_after: SystemTime,
}

impl Validity {
    /// Valid for `lifetime` from `now`, and from an hour (at most a tenth of `lifetime`)
    /// before `now`. The bound keeps a short-lived certificate from being due for
    /// renewal, two thirds into its whole validity, the moment it is issued: with a full
    /// hour, a five-minute certificate would be renewed on every reconcile.
    pub fn starting(now: SystemTime, lifetime: Duration) -> Self {
        let backdated = BACKDATED.min(lifetime / 10);
        Self {
            not_before: now.checked_sub(backdated).unwrap_or(now),
            not_after: now + lifetime,
        }
    }
}

/// A CA: its certificate, and its private key, which only signing reads.
#[derive(Clone, PartialEq, Eq)]
pub struct CertificateAuthority {
    certificate_pem: String,
    key_pem: String,
}

impl fmt::Debug for CertificateAuthority {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("CertificateAuthority")
            .field("certificate_pem", &self.certificate_pem)
            .field("key_pem", &"<redacted>")
            .finish()
    }
}

impl CertificateAuthority {
    /// A new self-signed CA named `common_name`.
    pub fn create(common_name: &str, validity: Validity) -> Result<Self, CertificateError> {
        let key = KeyPair::generate().map_err(generate("generate the CA's key"))?;
        let mut params = CertificateParams::default();
        params.distinguished_name = distinguished_name(common_name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        set_validity(&mut params, validity);
        params.serial_number = Some(random_serial()?);
        let certificate = params
            .self_signed(&key)
            .map_err(generate("sign the CA's certificate"))?;
        Ok(Self {
            certificate_pem: certificate.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// The CA kept in a Secret: its certificate and its PKCS#8 key, which must belong
    /// together and make a CA.
    pub fn from_pem(certificate_pem: &str, key_pem: &str) -> Result<Self, CertificateError> {
        let facts = CertificateFacts::read("of the CA", certificate_pem)?;
        if !facts.is_ca {
            return Err(CertificateError::Read {
                what: "of the CA".to_owned(),
                reason: "it is not a CA certificate (no basicConstraints CA:TRUE)".to_owned(),
            });
        }
        let key = KeyPair::from_pem(key_pem).map_err(generate("read the CA's PKCS#8 key"))?;
        if key.subject_public_key_info() != facts.public_key_info {
            return Err(CertificateError::Read {
                what: "of the CA".to_owned(),
                reason: "the key is not the certificate's".to_owned(),
            });
        }
        Ok(Self {
            certificate_pem: certificate_pem.to_owned(),
            key_pem: key_pem.to_owned(),
        })
    }

    /// The CA's certificate, which every client and pod trusts.
    pub fn certificate_pem(&self) -> &str {
        &self.certificate_pem
    }

    /// The CA's key, for the Secret the CA is kept in; nothing else should read it.
    pub fn key_pem(&self) -> &str {
        &self.key_pem
    }

    /// A server certificate for `names` (DNS names, or IP addresses), signed by this CA,
    /// for both TLS uses: the products' servers also connect to each other with it.
    pub fn issue(
        &self,
        names: &[String],
        validity: Validity,
    ) -> Result<IssuedCertificate, CertificateError> {
        self.issue_for(
            names,
            validity,
            &[KeyPurpose::ServerAuth, KeyPurpose::ClientAuth],
        )
    }

    /// A certificate as [`Self::issue`] makes it, with an extended key usage of
    /// `purposes` only, as a user's cert-manager `Certificate` may ask for.
    pub fn issue_for(
        &self,
        names: &[String],
        validity: Validity,
        purposes: &[KeyPurpose],
    ) -> Result<IssuedCertificate, CertificateError> {
        let signing_key =
            KeyPair::from_pem(&self.key_pem).map_err(generate("read the CA's key"))?;
        let issuer = Issuer::from_ca_cert_pem(&self.certificate_pem, signing_key)
            .map_err(generate("read the CA's certificate"))?;
        let mut params = CertificateParams::new(names.to_vec())
            .map_err(generate("take the certificate's names"))?;
        params.distinguished_name =
            distinguished_name(names.first().map_or("strata", String::as_str));
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = purposes
            .iter()
            .map(|purpose| match purpose {
                KeyPurpose::ServerAuth => ExtendedKeyUsagePurpose::ServerAuth,
                KeyPurpose::ClientAuth => ExtendedKeyUsagePurpose::ClientAuth,
            })
            .collect();
        params.use_authority_key_identifier_extension = true;
        // Never beyond the CA: a client refuses a chain with an expired CA anyway.
        let ca_end = CertificateFacts::read("of the CA", &self.certificate_pem)?.not_after;
        set_validity(
            &mut params,
            Validity {
                not_after: validity.not_after.min(ca_end),
                ..validity
            },
        );
        params.serial_number = Some(random_serial()?);
        let key = KeyPair::generate().map_err(generate("generate a server key"))?;
        let certificate = params
            .signed_by(&key, &issuer)
            .map_err(generate("sign a server certificate"))?;
        Ok(IssuedCertificate {
            certificate_pem: certificate.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// A certificate this crate issued, and its key.
#[derive(Clone, PartialEq, Eq)]
pub struct IssuedCertificate {
    certificate_pem: String,
    key_pem: String,
}

impl fmt::Debug for IssuedCertificate {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("IssuedCertificate")
            .field("certificate_pem", &self.certificate_pem)
            .field("key_pem", &"<redacted>")
            .finish()
    }
}

impl IssuedCertificate {
    /// The certificate (`tls.crt`).
    pub fn certificate_pem(&self) -> &str {
        &self.certificate_pem
    }

    /// Its PKCS#8 key (`tls.key`), for the Secret the pods mount.
    pub fn key_pem(&self) -> &str {
        &self.key_pem
    }
}

fn distinguished_name(common_name: &str) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::OrganizationName, "Strata");
    name.push(DnType::CommonName, common_name);
    name
}

fn set_validity(params: &mut CertificateParams, validity: Validity) {
    params.not_before = OffsetDateTime::from(validity.not_before);
    params.not_after = OffsetDateTime::from(validity.not_after);
}

/// A random positive 63-bit serial: a CA must not give two certificates one serial.
fn random_serial() -> Result<SerialNumber, CertificateError> {
    let mut bytes = [0_u8; 8];
    getrandom::fill(&mut bytes).map_err(|error| CertificateError::Read {
        what: "serial number".to_owned(),
        reason: format!("no randomness: {error}"),
    })?;
    Ok(SerialNumber::from(u64::from_be_bytes(bytes) >> 1))
}

fn generate(doing: &'static str) -> impl Fn(rcgen::Error) -> CertificateError {
    move |source| CertificateError::Generate { doing, source }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    use crate::testing::{DAY, start as now};

    #[test]
    fn a_ca_signs_server_certificates_for_the_names_asked() {
        let ca = CertificateAuthority::create("simple-zk", Validity::starting(now(), 3650 * DAY))
            .unwrap();
        let names = vec![
            "simple-zk-server-default-0.simple-zk-server-default.ns.svc.cluster.local".to_owned(),
            "simple-zk.ns.svc.cluster.local".to_owned(),
        ];
        let issued = ca
            .issue(&names, Validity::starting(now(), 30 * DAY))
            .unwrap();
        let facts = CertificateFacts::read("issued", issued.certificate_pem()).unwrap();
        assert_eq!(facts.dns_names, names);
        assert!(!facts.is_ca);
        assert_eq!(facts.not_after, now() + 30 * DAY);
        assert_eq!(facts.not_before, now() - BACKDATED);
        assert!(facts.issued_by(ca.certificate_pem()).unwrap());
        assert!(issued.key_pem().starts_with("-----BEGIN PRIVATE KEY-----"));
    }

    #[test]
    fn a_ca_kept_in_a_secret_signs_as_the_one_created() {
        let created =
            CertificateAuthority::create("simple-zk", Validity::starting(now(), DAY)).unwrap();
        let loaded =
            CertificateAuthority::from_pem(created.certificate_pem(), created.key_pem()).unwrap();
        assert_eq!(loaded, created);
        let issued = loaded
            .issue(&["a.ns.svc".to_owned()], Validity::starting(now(), DAY))
            .unwrap();
        let facts = CertificateFacts::read("issued", issued.certificate_pem()).unwrap();
        assert!(facts.issued_by(created.certificate_pem()).unwrap());
    }

    #[test]
    fn a_ca_with_another_key_or_no_ca_certificate_is_refused() {
        let validity = Validity::starting(now(), DAY);
        let first = CertificateAuthority::create("a", validity).unwrap();
        let second = CertificateAuthority::create("b", validity).unwrap();
        let mismatch =
            CertificateAuthority::from_pem(first.certificate_pem(), second.key_pem()).unwrap_err();
        assert!(
            mismatch
                .to_string()
                .contains("the key is not the certificate's"),
            "{mismatch}"
        );
        let leaf = first.issue(&["a".to_owned()], validity).unwrap();
        let not_a_ca =
            CertificateAuthority::from_pem(leaf.certificate_pem(), leaf.key_pem()).unwrap_err();
        assert!(
            not_a_ca.to_string().contains("not a CA certificate"),
            "{not_a_ca}"
        );
    }

    #[test]
    fn no_debug_output_shows_a_key() {
        let ca = CertificateAuthority::create("a", Validity::starting(now(), DAY)).unwrap();
        let issued = ca
            .issue(&["a".to_owned()], Validity::starting(now(), DAY))
            .unwrap();
        for text in [format!("{ca:?}"), format!("{issued:?}")] {
            assert!(!text.contains("PRIVATE KEY"), "{text}");
            assert!(text.contains("<redacted>"), "{text}");
        }
    }
}
