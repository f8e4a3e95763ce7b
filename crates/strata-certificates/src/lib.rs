//! Certificates the operators manage themselves, without a companion operator: a CA
//! per cluster, server certificates it signs, what a certificate says (for the user's
//! own, such as cert-manager's), and the keystores a JVM product reads.
//!
//! - [`authority`]: a CA, created once and loaded from its PEM afterwards (it is never
//!   rewritten: every pod trusts it), and the server certificates it issues.
//! - [`facts`]: a certificate's validity and names, whether its names cover the pods'
//!   and Services', and when it is due for renewal (two thirds into its lifetime).
//! - [`keystore`]: PKCS#12 keystores and truststores for Java.
//! - [`plan`]: what a reconcile does: keep or create the CA, keep or issue each server
//!   certificate, and why.
//! - [`user`]: the user's own certificate (cert-manager's Secret), checked before
//!   anything is applied.
//!
//! Every function is pure but for the randomness of new keys and serial numbers; the
//! operators keep the results in Secrets. A private key never leaves these types but
//! through [`authority::IssuedCertificate::key_pem`] and the keystores, and no
//! `Debug` output shows one.

pub mod authority;
pub mod facts;
pub mod keystore;
pub mod plan;
pub mod user;

/// What the tests of every module share: a fixed start, and a day.
#[cfg(test)]
mod testing {
    use std::time::{Duration, SystemTime};

    pub(crate) const DAY: Duration = Duration::from_secs(86_400);

    /// A fixed moment (2026-09-21), so that validity checks do not depend on the clock.
    pub(crate) fn start() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000)
    }
}

/// Why a certificate could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum CertificateError {
    /// rcgen refused the parameters, the key or the CA.
    #[error("cannot {doing}: {source}")]
    Generate {
        /// What was being done.
        doing: &'static str,
        /// rcgen's error.
        source: rcgen::Error,
    },
    /// A PEM text holds no certificate, or one that does not parse.
    #[error("cannot read the certificate {what}: {reason}")]
    Read {
        /// Which certificate.
        what: String,
        /// Why.
        reason: String,
    },
    /// A PKCS#12 store could not be written.
    #[error("cannot write the PKCS#12 {store}: {reason}")]
    Keystore {
        /// `keystore` or `truststore`.
        store: &'static str,
        /// Why.
        reason: String,
    },
}
