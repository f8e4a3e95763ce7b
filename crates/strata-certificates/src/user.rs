//! The user's own certificate instead of the operator's: a Secret with `tls.crt`,
//! `tls.key` and `ca.crt`, which is what cert-manager writes. It is checked before
//! anything is applied, so a certificate the products would refuse, or one that
//! leaves a pod's name out, is a Degraded reason on the cluster instead of pods that
//! fail their TLS handshakes.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use rcgen::{KeyPair, PublicKeyData};

use crate::facts::{CertificateFacts, KeyPurpose};

/// The certificate (and any intermediates after it).
pub const CERTIFICATE_KEY: &str = "tls.crt";
/// Its private key, PKCS#8.
pub const PRIVATE_KEY_KEY: &str = "tls.key";
/// The CA that clients trust.
pub const CA_KEY: &str = "ca.crt";

/// How long before its end a user certificate is warned about: cert-manager renews
/// 30 days before the end by default, so a certificate this close to it is not being
/// renewed.
pub const EXPIRY_WARNING: Duration = Duration::from_secs(14 * 86_400);

/// What makes a user's certificate unusable; each has a condition reason.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UserCertificateProblem {
    /// A key of the Secret is missing or empty.
    #[error("the Secret has no {0}")]
    MissingKey(&'static str),
    /// `tls.key` is PKCS#1 or SEC1, which ZooKeeper and Java do not read.
    #[error(
        "{PRIVATE_KEY_KEY} is a {0} key; the products read PKCS#8 only (\"BEGIN PRIVATE KEY\"): \
         with cert-manager, set the Certificate's privateKey.encoding to PKCS8"
    )]
    NotPkcs8(String),
    /// A PEM text does not parse.
    #[error("{0}")]
    Unreadable(String),
    /// `tls.key` is not the certificate's key.
    #[error("{PRIVATE_KEY_KEY} is not the key of {CERTIFICATE_KEY}")]
    KeyMismatch,
    /// `tls.crt` does not lead to `ca.crt`, directly or through the intermediates
    /// after it.
    #[error(
        "{CERTIFICATE_KEY} does not lead to {CA_KEY} (directly, or through the intermediates after it in {CERTIFICATE_KEY})"
    )]
    NotIssuedByCa,
    /// The certificate leaves names out.
    #[error("{CERTIFICATE_KEY} does not cover {}", .0.join(", "))]
    NamesNotCovered(Vec<String>),
    /// Its extended key usage leaves out a TLS use the servers put it to.
    #[error(
        "{CERTIFICATE_KEY}'s extendedKeyUsage does not allow {}, which the servers need; with \
         cert-manager, list {} in the Certificate's usages",
        names(.0, KeyPurpose::name),
        names(.0, KeyPurpose::cert_manager_usage)
    )]
    PurposesMissing(Vec<KeyPurpose>),
    /// The certificate's first second is still to come.
    #[error("{CERTIFICATE_KEY} is not valid yet")]
    NotYetValid,
    /// The certificate's last second has passed.
    #[error("{CERTIFICATE_KEY} expired")]
    Expired,
}

impl UserCertificateProblem {
    /// The reason of the Degraded condition.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::MissingKey(_) => "TlsSecretKeyMissing",
            Self::NotPkcs8(_) => "TlsKeyNotPkcs8",
            Self::Unreadable(_) => "TlsCertificateUnreadable",
            Self::KeyMismatch => "TlsKeyMismatch",
            Self::NotIssuedByCa => "TlsCertificateNotFromCa",
            Self::NamesNotCovered(_) => "TlsNamesNotCovered",
            Self::PurposesMissing(_) => "TlsKeyUsageMissing",
            Self::NotYetValid => "TlsCertificateNotYetValid",
            Self::Expired => "TlsCertificateExpired",
        }
    }
}

/// `purposes` by `name`, comma-separated.
fn names(purposes: &[KeyPurpose], name: fn(KeyPurpose) -> &'static str) -> String {
    purposes
        .iter()
        .map(|purpose| name(*purpose))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a product asks of a user's certificate.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Requirements {
    /// The names the servers dial each other by and clients inside the cluster dial:
    /// one left out is a refusal.
    pub names: Vec<String>,
    /// The names only clients outside the cluster dial (a load balancer's address,
    /// assigned after the Service, so often after the certificate was requested): one
    /// left out is a warning, since the cluster still serves inside.
    pub external_names: Vec<String>,
    /// The TLS uses the servers put the certificate to.
    pub purposes: Vec<KeyPurpose>,
}

/// A user's certificate that the products can use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserCertificate {
    /// What the certificate says.
    pub facts: CertificateFacts,
    /// Set when it ends within [`EXPIRY_WARNING`]: the Warning condition's message.
    pub expiry_warning: Option<String>,
    /// Set when it leaves out an external name: the Warning condition's message.
    pub external_names_warning: Option<String>,
}

/// Checks the Secret `data` (its keys, decoded) for a certificate that meets
/// `required` at `now`. Nothing of a key is ever put in a problem or a warning.
pub fn check_user_certificate(
    data: &BTreeMap<String, Vec<u8>>,
    required: &Requirements,
    now: SystemTime,
) -> Result<UserCertificate, UserCertificateProblem> {
    let text = |key: &'static str| -> Result<String, UserCertificateProblem> {
        data.get(key)
            .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
            .filter(|text| !text.trim().is_empty())
            .ok_or(UserCertificateProblem::MissingKey(key))
    };
    let (certificate, key, ca) = (
        text(CERTIFICATE_KEY)?,
        text(PRIVATE_KEY_KEY)?,
        text(CA_KEY)?,
    );
    for (label, kind) in [
        ("BEGIN RSA PRIVATE KEY", "PKCS#1 (RSA)"),
        ("BEGIN EC PRIVATE KEY", "SEC1 (EC)"),
        ("BEGIN ENCRYPTED PRIVATE KEY", "encrypted PKCS#8"),
    ] {
        if key.contains(label) {
            return Err(UserCertificateProblem::NotPkcs8(kind.to_owned()));
        }
    }
    let facts = CertificateFacts::read(CERTIFICATE_KEY, &certificate)
        .map_err(|error| UserCertificateProblem::Unreadable(error.to_string()))?;
    let key_pair = KeyPair::from_pem(&key).map_err(|error| {
        UserCertificateProblem::Unreadable(format!("cannot read {PRIVATE_KEY_KEY}: {error}"))
    })?;
    if key_pair.subject_public_key_info() != facts.public_key_info {
        return Err(UserCertificateProblem::KeyMismatch);
    }
    let issued = CertificateFacts::chain_leads_to(&certificate, &ca)
        .map_err(|error| UserCertificateProblem::Unreadable(error.to_string()))?;
    if !issued {
        return Err(UserCertificateProblem::NotIssuedByCa);
    }
    if now < facts.not_before {
        return Err(UserCertificateProblem::NotYetValid);
    }
    let missing = facts.missing_names(&required.names);
    if !missing.is_empty() {
        return Err(UserCertificateProblem::NamesNotCovered(
            missing.into_iter().map(str::to_owned).collect(),
        ));
    }
    let missing = facts.missing_purposes(&required.purposes);
    if !missing.is_empty() {
        return Err(UserCertificateProblem::PurposesMissing(missing));
    }
    if facts.expired(now) {
        return Err(UserCertificateProblem::Expired);
    }
    let left = facts.not_after.duration_since(now).unwrap_or_default();
    let expiry_warning = (left < EXPIRY_WARNING).then(|| {
        format!(
            "{CERTIFICATE_KEY} ends in {} hours, and nothing has renewed it yet; the cluster \
             stops serving TLS when it ends",
            left.as_secs() / 3600
        )
    });
    let uncovered = facts.missing_names(&required.external_names);
    let external_names_warning = (!uncovered.is_empty()).then(|| {
        format!(
            "{CERTIFICATE_KEY} does not cover {}, which clients outside the cluster dial: they \
             fail to verify the servers' name until the certificate covers it",
            uncovered.join(", ")
        )
    });
    Ok(UserCertificate {
        facts,
        expiry_warning,
        external_names_warning,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use pretty_assertions::assert_eq;
    use rstest::rstest;

    use super::*;
    use crate::authority::{CertificateAuthority, Validity};

    use crate::testing::{DAY, start};

    fn names() -> Vec<String> {
        vec![
            "zk-0.zk.ns.svc.cluster.local".to_owned(),
            "zk.ns.svc.cluster.local".to_owned(),
        ]
    }

    /// ZooKeeper's requirements: its pods, and both TLS uses (its quorum peers connect
    /// to each other with their server certificate).
    fn required() -> Requirements {
        Requirements {
            names: names(),
            external_names: Vec::new(),
            purposes: vec![KeyPurpose::ServerAuth, KeyPurpose::ClientAuth],
        }
    }

    /// A Secret as cert-manager writes it for `sans`, valid for 90 days from the start.
    fn secret(sans: &[&str]) -> BTreeMap<String, Vec<u8>> {
        let sans: Vec<String> = sans.iter().map(|name| (*name).to_owned()).collect();
        secret_with(&sans, &[KeyPurpose::ServerAuth, KeyPurpose::ClientAuth])
    }

    /// A Secret for every name whose certificate allows `purposes` only.
    fn secret_for(purposes: &[KeyPurpose]) -> BTreeMap<String, Vec<u8>> {
        secret_with(&names(), purposes)
    }

    fn secret_with(sans: &[String], purposes: &[KeyPurpose]) -> BTreeMap<String, Vec<u8>> {
        let validity = Validity::starting(start(), 90 * DAY);
        let ca = CertificateAuthority::create("user-ca", validity).unwrap();
        let issued = ca.issue_for(sans, validity, purposes).unwrap();
        BTreeMap::from([
            (
                CERTIFICATE_KEY.to_owned(),
                issued.certificate_pem().as_bytes().to_vec(),
            ),
            (
                PRIVATE_KEY_KEY.to_owned(),
                issued.key_pem().as_bytes().to_vec(),
            ),
            (CA_KEY.to_owned(), ca.certificate_pem().as_bytes().to_vec()),
        ])
    }

    fn every_name() -> BTreeMap<String, Vec<u8>> {
        secret(&["zk-0.zk.ns.svc.cluster.local", "zk.ns.svc.cluster.local"])
    }

    #[rstest]
    #[case::no_key(|data: &mut BTreeMap<String, Vec<u8>>| { data.remove(PRIVATE_KEY_KEY); }, "TlsSecretKeyMissing")]
    #[case::an_empty_ca(|data: &mut BTreeMap<String, Vec<u8>>| { data.insert(CA_KEY.to_owned(), b"\n".to_vec()); }, "TlsSecretKeyMissing")]
    #[case::a_pkcs1_key(
        |data: &mut BTreeMap<String, Vec<u8>>| { data.insert(PRIVATE_KEY_KEY.to_owned(), b"-----BEGIN RSA PRIVATE KEY-----\nAA==\n-----END RSA PRIVATE KEY-----\n".to_vec()); },
        "TlsKeyNotPkcs8"
    )]
    #[case::not_a_certificate(|data: &mut BTreeMap<String, Vec<u8>>| { data.insert(CERTIFICATE_KEY.to_owned(), b"hello".to_vec()); }, "TlsCertificateUnreadable")]
    #[case::another_key(
        |data: &mut BTreeMap<String, Vec<u8>>| { let other = every_name(); data.insert(PRIVATE_KEY_KEY.to_owned(), other[PRIVATE_KEY_KEY].clone()); },
        "TlsKeyMismatch"
    )]
    #[case::another_ca(
        |data: &mut BTreeMap<String, Vec<u8>>| { let other = every_name(); data.insert(CA_KEY.to_owned(), other[CA_KEY].clone()); },
        "TlsCertificateNotFromCa"
    )]
    fn a_secret_the_products_cannot_use_is_refused_with_a_reason(
        #[case] break_it: fn(&mut BTreeMap<String, Vec<u8>>),
        #[case] reason: &str,
    ) {
        let mut data = every_name();
        break_it(&mut data);
        let problem = check_user_certificate(&data, &required(), start()).unwrap_err();
        assert_eq!(problem.reason(), reason, "{problem}");
        assert!(
            !problem.to_string().contains("PRIVATE KEY-----\nAA"),
            "{problem}"
        );
    }

    #[test]
    fn a_certificate_that_leaves_a_pod_out_names_it() {
        let data = secret(&["zk.ns.svc.cluster.local"]);
        let problem = check_user_certificate(&data, &required(), start()).unwrap_err();
        assert_eq!(
            problem,
            UserCertificateProblem::NamesNotCovered(vec![
                "zk-0.zk.ns.svc.cluster.local".to_owned()
            ])
        );
    }

    #[rstest]
    #[case::fresh(1, false)]
    #[case::two_weeks_before_its_end(77, true)]
    fn a_certificate_near_its_end_is_warned_about(#[case] day: u32, #[case] warned: bool) {
        let checked =
            check_user_certificate(&every_name(), &required(), start() + day * DAY).unwrap();
        assert_eq!(checked.expiry_warning.is_some(), warned, "{checked:?}");
    }

    #[test]
    fn a_certificate_not_valid_yet_is_refused() {
        let problem = check_user_certificate(
            &every_name(),
            &required(),
            start() - Duration::from_secs(7200),
        )
        .unwrap_err();
        assert_eq!(problem.reason(), "TlsCertificateNotYetValid");
    }

    #[test]
    fn an_expired_certificate_is_refused() {
        let problem =
            check_user_certificate(&every_name(), &required(), start() + 91 * DAY).unwrap_err();
        assert_eq!(problem.reason(), "TlsCertificateExpired");
    }

    #[rstest]
    #[case::server_auth_only(&[KeyPurpose::ServerAuth], Some("clientAuth"))]
    #[case::client_auth_only(&[KeyPurpose::ClientAuth], Some("serverAuth"))]
    #[case::both(&[KeyPurpose::ServerAuth, KeyPurpose::ClientAuth], None)]
    #[case::no_extended_key_usage(&[], None)]
    fn a_certificate_must_allow_every_tls_use_of_the_servers(
        #[case] purposes: &[KeyPurpose],
        #[case] refused_for: Option<&str>,
    ) {
        let checked = check_user_certificate(&secret_for(purposes), &required(), start());
        match refused_for {
            Some(purpose) => {
                let problem = checked.unwrap_err();
                assert_eq!(problem.reason(), "TlsKeyUsageMissing");
                assert!(problem.to_string().contains(purpose), "{problem}");
            }
            None => assert!(checked.is_ok(), "{checked:?}"),
        }
    }

    #[rstest]
    #[case::covered(&["zk-0.zk.ns.svc.cluster.local", "zk.ns.svc.cluster.local", "203.0.113.7"], false)]
    #[case::left_out(&["zk-0.zk.ns.svc.cluster.local", "zk.ns.svc.cluster.local"], true)]
    fn a_load_balancer_address_left_out_is_warned_about_not_refused(
        #[case] sans: &[&str],
        #[case] warned: bool,
    ) {
        let required = Requirements {
            external_names: vec!["203.0.113.7".to_owned()],
            ..required()
        };
        let checked = check_user_certificate(&secret(sans), &required, start()).unwrap();
        assert_eq!(
            checked.external_names_warning.is_some(),
            warned,
            "{checked:?}"
        );
        if let Some(warning) = checked.external_names_warning {
            assert!(warning.contains("203.0.113.7"), "{warning}");
        }
    }
}
