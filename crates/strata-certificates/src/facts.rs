//! What a certificate says, read from its PEM: when it is valid, the names it covers,
//! whether it is a CA, and who signed it. The operators check the user's own
//! certificates with it before anything is applied, and plan renewals by it.

use std::net::IpAddr;
use std::time::SystemTime;

use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;
use x509_parser::pem::parse_x509_pem;

use crate::CertificateError;

/// The facts of one certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertificateFacts {
    /// Its first valid second.
    pub not_before: SystemTime,
    /// Its last.
    pub not_after: SystemTime,
    /// Its DNS SANs, in order.
    pub dns_names: Vec<String>,
    /// Its IP address SANs.
    pub ip_addresses: Vec<IpAddr>,
    /// Whether it may sign certificates (`basicConstraints CA:TRUE`).
    pub is_ca: bool,
    /// Its public key, as DER `SubjectPublicKeyInfo`.
    pub public_key_info: Vec<u8>,
    /// The TLS uses its extended key usage allows; `None` when it has no such extension
    /// or allows any use, which TLS peers take as every use allowed.
    pub purposes: Option<Vec<KeyPurpose>>,
    der: Vec<u8>,
}

/// A TLS use that a certificate's extended key usage may allow. A JVM or rustls peer
/// refuses a certificate whose extension lists other uses only: a server presenting a
/// `clientAuth`-only certificate, or a quorum peer connecting as a client with a
/// `serverAuth`-only one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum KeyPurpose {
    /// `id-kp-serverAuth`: serving TLS.
    ServerAuth,
    /// `id-kp-clientAuth`: connecting with a client certificate.
    ClientAuth,
}

impl KeyPurpose {
    /// Its name in X.509 tools (`openssl x509 -text` shows it spelled out).
    pub fn name(self) -> &'static str {
        match self {
            Self::ServerAuth => "serverAuth",
            Self::ClientAuth => "clientAuth",
        }
    }

    /// Its name in a cert-manager `Certificate`'s `usages`.
    pub fn cert_manager_usage(self) -> &'static str {
        match self {
            Self::ServerAuth => "server auth",
            Self::ClientAuth => "client auth",
        }
    }
}

impl CertificateFacts {
    /// The facts of the first certificate in `pem` (the leaf of a chain); `what`
    /// names it in an error.
    pub fn read(what: &str, pem: &str) -> Result<Self, CertificateError> {
        let refused = |reason: String| CertificateError::Read {
            what: what.to_owned(),
            reason,
        };
        let (_, block) = parse_x509_pem(pem.as_bytes())
            .map_err(|error| refused(format!("no PEM certificate: {error}")))?;
        let certificate = block
            .parse_x509()
            .map_err(|error| refused(format!("not an X.509 certificate: {error}")))?;
        let names = certificate
            .subject_alternative_name()
            .map_err(|error| refused(format!("its subjectAltName: {error}")))?;
        let mut dns_names = Vec::new();
        let mut ip_addresses = Vec::new();
        for name in names.iter().flat_map(|names| &names.value.general_names) {
            match name {
                GeneralName::DNSName(dns) => dns_names.push((*dns).to_owned()),
                GeneralName::IPAddress(bytes) => {
                    if let Some(address) = ip_address(bytes) {
                        ip_addresses.push(address);
                    }
                }
                _ => {}
            }
        }
        let purposes = certificate
            .extended_key_usage()
            .map_err(|error| refused(format!("its extendedKeyUsage: {error}")))?
            .map(|usage| usage.value)
            .filter(|usage| !usage.any)
            .map(|usage| {
                [
                    (usage.server_auth, KeyPurpose::ServerAuth),
                    (usage.client_auth, KeyPurpose::ClientAuth),
                ]
                .into_iter()
                .filter_map(|(allowed, purpose)| allowed.then_some(purpose))
                .collect()
            });
        let validity = certificate.validity();
        Ok(Self {
            not_before: SystemTime::from(validity.not_before.to_datetime()),
            not_after: SystemTime::from(validity.not_after.to_datetime()),
            dns_names,
            ip_addresses,
            is_ca: certificate.is_ca(),
            public_key_info: certificate.public_key().raw.to_vec(),
            purposes,
            der: block.contents.clone(),
        })
    }

    /// The `names` this certificate does not cover: neither listed, nor matched by
    /// a wildcard SAN (`*.example.com` covers `a.example.com`, one label deep, as TLS
    /// clients match). A name that is an IP address must be an IP SAN.
    pub fn missing_names<'a>(&self, names: &'a [String]) -> Vec<&'a str> {
        names
            .iter()
            .map(String::as_str)
            .filter(|name| !self.covers(name))
            .collect()
    }

    /// The `wanted` purposes its extended key usage does not allow.
    pub fn missing_purposes(&self, wanted: &[KeyPurpose]) -> Vec<KeyPurpose> {
        wanted
            .iter()
            .copied()
            .filter(|purpose| {
                self.purposes
                    .as_ref()
                    .is_some_and(|allowed| !allowed.contains(purpose))
            })
            .collect()
    }

    fn covers(&self, name: &str) -> bool {
        if let Ok(address) = name.parse::<IpAddr>() {
            return self.ip_addresses.contains(&address);
        }
        let name = name.to_ascii_lowercase();
        self.dns_names.iter().any(|san| {
            let san = san.to_ascii_lowercase();
            match san.strip_prefix("*.") {
                Some(parent) => name
                    .split_once('.')
                    .is_some_and(|(label, rest)| !label.is_empty() && rest == parent),
                None => san == name,
            }
        })
    }

    /// When it is to be replaced: two thirds into its lifetime, so that a renewal that
    /// fails has a third of the lifetime to be retried, and pods roll onto the new one
    /// well before the old one expires.
    pub fn renew_at(&self) -> SystemTime {
        let lifetime = self
            .not_after
            .duration_since(self.not_before)
            .unwrap_or_default();
        self.not_before + lifetime * 2 / 3
    }

    /// Whether `now` is past [`Self::renew_at`].
    pub fn renewal_due(&self, now: SystemTime) -> bool {
        now >= self.renew_at()
    }

    /// Whether `now` is past its last valid second.
    pub fn expired(&self, now: SystemTime) -> bool {
        now > self.not_after
    }

    /// Whether `ca_pem`'s key signed this certificate.
    pub fn issued_by(&self, ca_pem: &str) -> Result<bool, CertificateError> {
        let (_, ca_block) =
            parse_x509_pem(ca_pem.as_bytes()).map_err(|error| CertificateError::Read {
                what: "of the CA".to_owned(),
                reason: format!("no PEM certificate: {error}"),
            })?;
        let ca = ca_block
            .parse_x509()
            .map_err(|error| CertificateError::Read {
                what: "of the CA".to_owned(),
                reason: format!("not an X.509 certificate: {error}"),
            })?;
        let certificate = self.parsed()?;
        Ok(certificate.verify_signature(Some(ca.public_key())).is_ok())
    }

    /// Whether the first certificate of `chain_pem` (a `tls.crt`: the leaf, then any
    /// intermediates) leads to one of the CAs in `ca_pem`: signed by one of them, or by
    /// an intermediate of the chain that is, in turn.
    pub fn chain_leads_to(chain_pem: &str, ca_pem: &str) -> Result<bool, CertificateError> {
        let chain_blocks = pem_blocks("tls.crt", chain_pem)?;
        let ca_blocks = pem_blocks("ca.crt", ca_pem)?;
        let chain = parse_all("tls.crt", &chain_blocks)?;
        let cas = parse_all("ca.crt", &ca_blocks)?;
        let signed_by = |certificate: &X509Certificate<'_>, signer: &X509Certificate<'_>| {
            certificate
                .verify_signature(Some(signer.public_key()))
                .is_ok()
        };
        let mut current = 0;
        for _ in 0..chain.len() {
            let Some(certificate) = chain.get(current) else {
                return Ok(false);
            };
            if cas.iter().any(|ca| signed_by(certificate, ca)) {
                return Ok(true);
            }
            match chain
                .iter()
                .enumerate()
                .find(|(index, signer)| *index != current && signed_by(certificate, signer))
            {
                Some((index, _)) => current = index,
                None => return Ok(false),
            }
        }
        Ok(false)
    }

    fn parsed(&self) -> Result<X509Certificate<'_>, CertificateError> {
        x509_parser::parse_x509_certificate(&self.der)
            .map(|(_, certificate)| certificate)
            .map_err(|error| CertificateError::Read {
                what: "read before".to_owned(),
                reason: error.to_string(),
            })
    }
}

/// Every certificate of `blocks` (DER), parsed.
fn parse_all<'a>(
    what: &str,
    blocks: &'a [Vec<u8>],
) -> Result<Vec<X509Certificate<'a>>, CertificateError> {
    blocks
        .iter()
        .map(|der| {
            x509_parser::parse_x509_certificate(der)
                .map(|(_, certificate)| certificate)
                .map_err(|error| CertificateError::Read {
                    what: what.to_owned(),
                    reason: error.to_string(),
                })
        })
        .collect()
}

/// The DER of every certificate in `pem`, in order; none is an error.
fn pem_blocks(what: &str, pem: &str) -> Result<Vec<Vec<u8>>, CertificateError> {
    let blocks: Vec<Vec<u8>> = x509_parser::pem::Pem::iter_from_buffer(pem.as_bytes())
        .filter_map(Result::ok)
        .filter(|block| block.label == "CERTIFICATE")
        .map(|block| block.contents)
        .collect();
    if blocks.is_empty() {
        return Err(CertificateError::Read {
            what: what.to_owned(),
            reason: "no PEM certificate".to_owned(),
        });
    }
    Ok(blocks)
}

fn ip_address(bytes: &[u8]) -> Option<IpAddr> {
    match bytes.len() {
        4 => <[u8; 4]>::try_from(bytes).ok().map(IpAddr::from),
        16 => <[u8; 16]>::try_from(bytes).ok().map(IpAddr::from),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use std::time::Duration;

    use pretty_assertions::assert_eq;
    use rstest::rstest;

    use super::*;
    use crate::authority::{CertificateAuthority, Validity};

    const DAY: Duration = Duration::from_secs(86_400);

    fn issued(names: &[&str], lifetime: Duration) -> CertificateFacts {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000);
        let ca =
            CertificateAuthority::create("ca", Validity::starting(start, 10 * lifetime)).unwrap();
        let names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
        let certificate = ca
            .issue(&names, Validity::starting(start, lifetime))
            .unwrap();
        CertificateFacts::read("test", certificate.certificate_pem()).unwrap()
    }

    #[rstest]
    #[case::both(&[KeyPurpose::ServerAuth, KeyPurpose::ClientAuth], &[])]
    #[case::server_only(&[KeyPurpose::ServerAuth], &[KeyPurpose::ClientAuth])]
    #[case::client_only(&[KeyPurpose::ClientAuth], &[KeyPurpose::ServerAuth])]
    #[case::no_extension(&[], &[])]
    fn which_tls_uses_a_certificate_allows(
        #[case] issued_for: &[KeyPurpose],
        #[case] missing: &[KeyPurpose],
    ) {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000);
        let validity = Validity::starting(start, DAY);
        let ca = CertificateAuthority::create("ca", validity).unwrap();
        let certificate = ca
            .issue_for(&["zk.ns.svc".to_owned()], validity, issued_for)
            .unwrap();
        let facts = CertificateFacts::read("test", certificate.certificate_pem()).unwrap();
        assert_eq!(
            facts.missing_purposes(&[KeyPurpose::ServerAuth, KeyPurpose::ClientAuth]),
            missing
        );
    }

    #[rstest]
    #[case::listed(&["zk-0.zk.ns.svc.cluster.local"], "zk-0.zk.ns.svc.cluster.local", true)]
    #[case::case_does_not_matter(&["ZK-0.zk.ns.svc"], "zk-0.zk.ns.svc", true)]
    #[case::a_wildcard_covers_one_label(&["*.zk.ns.svc"], "zk-0.zk.ns.svc", true)]
    #[case::not_two(&["*.ns.svc"], "zk-0.zk.ns.svc", false)]
    #[case::nor_the_parent(&["*.zk.ns.svc"], "zk.ns.svc", false)]
    #[case::another_pod(&["zk-0.zk.ns.svc"], "zk-1.zk.ns.svc", false)]
    #[case::an_ip_san(&["10.96.0.7"], "10.96.0.7", true)]
    #[case::an_ip_is_not_a_dns_name(&["zk-0.zk.ns.svc"], "10.96.0.7", false)]
    fn which_names_a_certificate_covers(
        #[case] sans: &[&str],
        #[case] name: &str,
        #[case] covered: bool,
    ) {
        let facts = issued(sans, DAY);
        let names = vec![name.to_owned()];
        assert_eq!(facts.missing_names(&names).is_empty(), covered);
    }

    #[test]
    fn renewal_is_due_two_thirds_into_the_lifetime() {
        let facts = issued(&["a"], 30 * DAY);
        let lifetime = facts.not_after.duration_since(facts.not_before).unwrap();
        assert_eq!(facts.renew_at(), facts.not_before + lifetime * 2 / 3);
        assert!(!facts.renewal_due(facts.renew_at() - Duration::from_secs(1)));
        assert!(facts.renewal_due(facts.renew_at()));
        assert!(!facts.expired(facts.not_after));
        assert!(facts.expired(facts.not_after + Duration::from_secs(1)));
    }

    #[test]
    fn another_cas_certificate_is_not_issued_by_it() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000);
        let validity = Validity::starting(start, DAY);
        let ca = CertificateAuthority::create("ca", validity).unwrap();
        let other = CertificateAuthority::create("other", validity).unwrap();
        let certificate = other.issue(&["a".to_owned()], validity).unwrap();
        let facts = CertificateFacts::read("test", certificate.certificate_pem()).unwrap();
        assert!(!facts.issued_by(ca.certificate_pem()).unwrap());
        assert!(facts.issued_by(other.certificate_pem()).unwrap());
    }

    /// A root, an intermediate CA it signs, and a server certificate the intermediate
    /// signs, as public and corporate CAs issue them.
    #[test]
    fn a_chain_through_an_intermediate_leads_to_the_root() {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000);
        let validity = Validity::starting(start, DAY);
        let root = CertificateAuthority::create("root", validity).unwrap();
        let root_issuer = Issuer::from_ca_cert_pem(
            root.certificate_pem(),
            KeyPair::from_pem(root.key_pem()).unwrap(),
        )
        .unwrap();
        let intermediate_key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "intermediate");
        let intermediate_certificate = params.signed_by(&intermediate_key, &root_issuer).unwrap();
        let intermediate = CertificateAuthority::from_pem(
            &intermediate_certificate.pem(),
            &intermediate_key.serialize_pem(),
        )
        .unwrap();
        let leaf = intermediate.issue(&["a".to_owned()], validity).unwrap();
        let chain = format!(
            "{}{}",
            leaf.certificate_pem(),
            intermediate.certificate_pem()
        );
        assert!(CertificateFacts::chain_leads_to(&chain, root.certificate_pem()).unwrap());
        assert!(
            !CertificateFacts::chain_leads_to(leaf.certificate_pem(), root.certificate_pem())
                .unwrap(),
            "without the intermediate the leaf does not lead to the root"
        );
        let other = CertificateAuthority::create("other", validity).unwrap();
        assert!(!CertificateFacts::chain_leads_to(&chain, other.certificate_pem()).unwrap());
    }

    #[test]
    fn text_without_a_certificate_is_refused_by_name() {
        let error = CertificateFacts::read("tls.crt of Secret ns/mine", "not a PEM").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("cannot read the certificate tls.crt of Secret ns/mine"),
            "{error}"
        );
    }
}
