//! What a reconcile does about a cluster's certificates, decided from what its Secrets
//! hold: keep the CA or create it once, and keep each server certificate or issue a
//! new one, saying why. The operators apply the result; a new certificate changes the
//! Secret, whose version the pod templates' references hash carries, so the pods roll
//! onto it.

use std::time::{Duration, SystemTime};

use crate::CertificateError;
use crate::authority::{CertificateAuthority, IssuedCertificate, Validity};
use crate::facts::CertificateFacts;

/// The CA's lifetime: ten years. A CA is never rewritten by the operator; replacing one
/// is a rotation with both CAs trusted for a while.
pub const CA_LIFETIME: Duration = Duration::from_secs(10 * 365 * 86_400);

/// A server certificate's lifetime unless a cluster asks for another: 30 days, so
/// renewal (at two thirds) runs every 20 days and is exercised long before anything
/// expires.
pub const SERVER_LIFETIME: Duration = Duration::from_secs(30 * 86_400);

/// The CA to sign with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaPlan {
    /// The CA the cluster's Secret holds.
    Keep(CertificateAuthority),
    /// The cluster had none: this one is to be written, once.
    Create(CertificateAuthority),
}

impl CaPlan {
    /// The CA either way.
    pub fn authority(&self) -> &CertificateAuthority {
        match self {
            Self::Keep(authority) | Self::Create(authority) => authority,
        }
    }
}

/// The cluster's CA: the one kept as `existing` (certificate and key PEM), or a new
/// one when the Secret does not exist. A Secret that exists but holds no usable CA is
/// an error, never a reason to make another: every pod and client trusts the old one.
pub fn plan_ca(
    existing: Option<(&str, &str)>,
    common_name: &str,
    now: SystemTime,
) -> Result<CaPlan, CertificateError> {
    match existing {
        Some((certificate, key)) => {
            CertificateAuthority::from_pem(certificate, key).map(CaPlan::Keep)
        }
        None => CertificateAuthority::create(common_name, Validity::starting(now, CA_LIFETIME))
            .map(CaPlan::Create),
    }
}

/// Why a server certificate is issued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IssueReason {
    /// There was none.
    Missing,
    /// The one there does not parse, or has no key.
    Unreadable(String),
    /// Another CA signed it.
    OtherCa,
    /// It does not cover these names (pods or Services added).
    NamesNotCovered(Vec<String>),
    /// It is two thirds into its lifetime.
    RenewalDue,
}

impl std::fmt::Display for IssueReason {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Missing => write!(formatter, "there was none"),
            Self::Unreadable(reason) => write!(formatter, "the one there is unreadable: {reason}"),
            Self::OtherCa => write!(formatter, "the one there was signed by another CA"),
            Self::NamesNotCovered(names) => {
                write!(
                    formatter,
                    "the one there does not cover {}",
                    names.join(", ")
                )
            }
            Self::RenewalDue => write!(formatter, "the one there is due for renewal"),
        }
    }
}

/// What to do about one server certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerPlan {
    /// The one there is fine until `renew_at`.
    Keep {
        /// When it is due, for the next reconcile's requeue.
        renew_at: SystemTime,
    },
    /// A new one, and why.
    Issue {
        /// The certificate and key to write.
        certificate: IssuedCertificate,
        /// Why.
        reason: IssueReason,
    },
}

/// Keeps `existing` (certificate and key PEM) while it is readable, signed by `ca`,
/// covers `names` and is not due for renewal; otherwise issues a new one for `names`.
pub fn plan_server(
    existing: Option<(&str, &str)>,
    ca: &CertificateAuthority,
    names: &[String],
    now: SystemTime,
    lifetime: Duration,
) -> Result<ServerPlan, CertificateError> {
    let reason = match existing {
        None => IssueReason::Missing,
        Some((certificate, key)) => match keep_until(certificate, key, ca, names, now) {
            Ok(renew_at) => return Ok(ServerPlan::Keep { renew_at }),
            Err(reason) => reason,
        },
    };
    let certificate = ca.issue(names, Validity::starting(now, lifetime))?;
    Ok(ServerPlan::Issue {
        certificate,
        reason,
    })
}

fn keep_until(
    certificate: &str,
    key: &str,
    ca: &CertificateAuthority,
    names: &[String],
    now: SystemTime,
) -> Result<SystemTime, IssueReason> {
    let facts = CertificateFacts::read("kept", certificate)
        .map_err(|error| IssueReason::Unreadable(error.to_string()))?;
    if key.trim().is_empty() {
        return Err(IssueReason::Unreadable("it has no key".to_owned()));
    }
    let key_pair = rcgen::KeyPair::from_pem(key)
        .map_err(|error| IssueReason::Unreadable(format!("its key: {error}")))?;
    if rcgen::PublicKeyData::subject_public_key_info(&key_pair) != facts.public_key_info {
        return Err(IssueReason::Unreadable(
            "its key is not the certificate's".to_owned(),
        ));
    }
    if !facts
        .issued_by(ca.certificate_pem())
        .map_err(|error| IssueReason::Unreadable(error.to_string()))?
    {
        return Err(IssueReason::OtherCa);
    }
    let missing = facts.missing_names(names);
    if !missing.is_empty() {
        return Err(IssueReason::NamesNotCovered(
            missing.into_iter().map(str::to_owned).collect(),
        ));
    }
    if facts.renewal_due(now) {
        return Err(IssueReason::RenewalDue);
    }
    Ok(facts.renew_at())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use pretty_assertions::assert_eq;
    use rstest::rstest;

    use super::*;

    use crate::testing::{DAY, start};

    fn names(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn a_ca_is_created_once_and_kept_afterwards() {
        let created = plan_ca(None, "simple-zk", start()).unwrap();
        let CaPlan::Create(authority) = &created else {
            panic!("{created:?}")
        };
        let kept = plan_ca(
            Some((authority.certificate_pem(), authority.key_pem())),
            "simple-zk",
            start() + 400 * DAY,
        )
        .unwrap();
        assert_eq!(kept, CaPlan::Keep(authority.clone()));
    }

    #[test]
    fn a_secret_without_a_usable_ca_is_an_error_not_a_new_ca() {
        let error = plan_ca(Some(("garbage", "garbage")), "simple-zk", start()).unwrap_err();
        assert!(error.to_string().contains("of the CA"), "{error}");
    }

    /// The reason a certificate issued at the start for `issued_for`, checked `days`
    /// later against `wanted`, is issued again, or `None` when it is kept.
    #[rstest]
    #[case::kept_while_it_covers_every_name(&["a", "b"], &["a", "b"], 19, None)]
    #[case::fewer_names_are_still_covered(&["a", "b"], &["a"], 1, None)]
    #[case::renewed_two_thirds_into_its_lifetime(&["a"], &["a"], 20, Some(IssueReason::RenewalDue))]
    #[case::a_new_pod_is_not_covered(
        &["a"], &["a", "b"], 1, Some(IssueReason::NamesNotCovered(vec!["b".to_owned()]))
    )]
    fn server_certificates_are_kept_or_issued_again(
        #[case] issued_for: &[&str],
        #[case] wanted: &[&str],
        #[case] days: u32,
        #[case] reason: Option<IssueReason>,
    ) {
        let ca =
            CertificateAuthority::create("ca", Validity::starting(start(), CA_LIFETIME)).unwrap();
        let first = plan_server(None, &ca, &names(issued_for), start(), 30 * DAY).unwrap();
        let ServerPlan::Issue {
            certificate,
            reason: IssueReason::Missing,
        } = first
        else {
            panic!("{first:?}")
        };
        let later = plan_server(
            Some((certificate.certificate_pem(), certificate.key_pem())),
            &ca,
            &names(wanted),
            start() + days * DAY,
            30 * DAY,
        )
        .unwrap();
        match (later, reason) {
            (ServerPlan::Keep { .. }, None) => {}
            (
                ServerPlan::Issue {
                    reason: found,
                    certificate: again,
                },
                Some(expected),
            ) => {
                assert_eq!(found, expected);
                let facts = CertificateFacts::read("again", again.certificate_pem()).unwrap();
                assert_eq!(facts.dns_names, names(wanted));
            }
            (other, expected) => panic!("{other:?}, expected {expected:?}"),
        }
    }

    #[test]
    fn a_certificate_of_another_ca_or_without_a_key_is_issued_again() {
        let validity = Validity::starting(start(), CA_LIFETIME);
        let ca = CertificateAuthority::create("ca", validity).unwrap();
        let other = CertificateAuthority::create("other", validity).unwrap();
        let foreign = other
            .issue(&names(&["a"]), Validity::starting(start(), DAY))
            .unwrap();
        let plan = |key: &str| match plan_server(
            Some((foreign.certificate_pem(), key)),
            &ca,
            &names(&["a"]),
            start(),
            DAY,
        )
        .unwrap()
        {
            ServerPlan::Issue { reason, .. } => reason,
            kept => panic!("{kept:?}"),
        };
        assert_eq!(plan(foreign.key_pem()), IssueReason::OtherCa);
        assert!(matches!(plan(""), IssueReason::Unreadable(_)));
        let own = ca
            .issue(&names(&["a"]), Validity::starting(start(), DAY))
            .unwrap();
        let with_another_key = plan_server(
            Some((own.certificate_pem(), foreign.key_pem())),
            &ca,
            &names(&["a"]),
            start(),
            DAY,
        )
        .unwrap();
        assert!(
            matches!(&with_another_key, ServerPlan::Issue { reason: IssueReason::Unreadable(why), .. } if why.contains("not the certificate's")),
            "{with_another_key:?}"
        );
    }
}
