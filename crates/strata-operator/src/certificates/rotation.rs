//! CA rotation: a new CA replaces the cluster's without a moment when a pod or a
//! client trusts one side only. The CA Secret says where a rotation stands, and the
//! pods say whether the next step is safe, so each reconcile decides purely, and
//! advances at most one step:
//!
//! 1. **Introduce.** Requested (the cluster's [`ROTATE_CA_ANNOTATION`] holds a value
//!    the CA Secret has not acted on) or due (the CA is two thirds into its life): a
//!    new CA is made and kept as `next-ca.*`. Every trust bundle (the server Secrets'
//!    and the discovery ConfigMaps' `ca.crt`) holds both CAs; certificates are still
//!    signed by the old one. The pods roll onto the bundle.
//! 2. **Switch**, once every pod of the cluster carries that bundle
//!    ([`TRUST_ANNOTATION`]): the new CA signs (`ca.*`), the old one stays trusted
//!    (`previous-ca.crt`), and every server certificate is issued again. The pods
//!    roll onto their new certificates, trusted by the pods that have not rolled yet.
//! 3. **Retire**, once every pod carries a certificate of the new CA
//!    ([`SIGNER_ANNOTATION`]): the old CA leaves the bundles, and the pods roll a last
//!    time.
//!
//! Clients read the bundle from discovery: they must pick it up while the rotation
//! runs (between steps 1 and 3), as pods do.

use std::time::SystemTime;

use sha2::{Digest, Sha256};
use strata_certificates::CertificateError;
use strata_certificates::authority::{CertificateAuthority, Validity};
use strata_certificates::facts::CertificateFacts;
use strata_certificates::plan::CA_LIFETIME;

/// The cluster's annotation that asks for a rotation: any new value starts one.
pub const ROTATE_CA_ANNOTATION: &str = "strata.dev/rotate-ca";
/// The pod template annotation with the SHA-256 of the trust bundle, while a rotation
/// runs: what says a pod trusts both CAs.
pub const TRUST_ANNOTATION: &str = "strata.dev/ca-bundle-sha256";
/// The pod template annotation with the SHA-256 of the signing CA, while a rotation
/// runs: what says a pod's certificate comes from the new CA.
pub const SIGNER_ANNOTATION: &str = "strata.dev/signing-ca-sha256";

/// The CA Secret's keys during a rotation, next to `ca.crt` and `ca.key`.
pub const NEXT_CA_KEY: &str = "next-ca.crt";
/// The next CA's private key.
pub const NEXT_CA_PRIVATE_KEY_KEY: &str = "next-ca.key";
/// The CA being retired, still trusted.
pub const PREVIOUS_CA_KEY: &str = "previous-ca.crt";
/// The rotation request the CA Secret acted on last.
pub const ROTATED_FOR_KEY: &str = "rotated-for";

/// What the CA Secret holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoredCa {
    /// The signing CA: certificate and key.
    pub current: (String, String),
    /// The CA being introduced: certificate and key.
    pub next: Option<(String, String)>,
    /// The CA being retired: its certificate.
    pub previous: Option<String>,
    /// The request acted on last.
    pub rotated_for: Option<String>,
}

/// Where a rotation stands after this reconcile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RotationStep {
    /// No rotation.
    Steady,
    /// Both CAs trusted, the old one signs.
    Introducing,
    /// Both CAs trusted, the new one signs.
    Switched,
}

/// What the reconcile does about the CA.
#[derive(Debug)]
pub struct CaDecision {
    /// The CA that signs the server certificates.
    pub signer: CertificateAuthority,
    /// The trust bundle's PEMs, oldest first (the order is stable across steps, so
    /// the bundle's hash changes only when a CA joins or leaves it).
    pub bundle: Vec<String>,
    /// Where the rotation stands.
    pub step: RotationStep,
    /// The CA Secret's new values, when they change.
    pub write: Option<Vec<(&'static str, String)>>,
    /// The pod template annotations the step needs.
    pub annotations: Vec<(&'static str, String)>,
    /// What changed, for the log and the Event.
    pub note: Option<String>,
}

/// The SHA-256 of PEMs joined, in hex.
pub fn pem_hash(pems: &[String]) -> String {
    hex::encode(Sha256::digest(pems.join("\n").as_bytes()))
}

/// Decides the CA's next step. `rolled(annotation, value)` says whether every pod of
/// the cluster carries the annotation with that value (and is Ready).
pub fn decide_ca(
    stored: &StoredCa,
    requested: Option<&str>,
    rolled: &dyn Fn(&str, &str) -> bool,
    common_name: &str,
    now: SystemTime,
) -> Result<CaDecision, CertificateError> {
    let current = CertificateAuthority::from_pem(&stored.current.0, &stored.current.1)?;
    let current_pem = stored.current.0.clone();
    let rotated_for = stored.rotated_for.clone().unwrap_or_default();
    if let Some((next_pem, next_key)) = &stored.next {
        let next = CertificateAuthority::from_pem(next_pem, next_key)?;
        let bundle = vec![current_pem.clone(), next_pem.clone()];
        let trust = pem_hash(&bundle);
        if !rolled(TRUST_ANNOTATION, &trust) {
            return Ok(CaDecision {
                signer: current,
                bundle,
                step: RotationStep::Introducing,
                write: None,
                annotations: vec![(TRUST_ANNOTATION, trust)],
                note: None,
            });
        }
        return Ok(CaDecision {
            signer: next,
            step: RotationStep::Switched,
            write: Some(vec![
                (strata_certificates::user::CA_KEY, next_pem.clone()),
                (super::CA_PRIVATE_KEY_KEY, next_key.clone()),
                (PREVIOUS_CA_KEY, current_pem),
                (ROTATED_FOR_KEY, rotated_for),
            ]),
            annotations: vec![
                (TRUST_ANNOTATION, trust),
                (SIGNER_ANNOTATION, pem_hash(std::slice::from_ref(next_pem))),
            ],
            bundle,
            note: Some(
                "the new CA signs from now on: every pod trusts it; the old CA stays trusted"
                    .to_owned(),
            ),
        });
    }
    if let Some(previous) = &stored.previous {
        let bundle = vec![previous.clone(), current_pem.clone()];
        let trust = pem_hash(&bundle);
        let signer = pem_hash(std::slice::from_ref(&current_pem));
        if !(rolled(SIGNER_ANNOTATION, &signer) && rolled(TRUST_ANNOTATION, &trust)) {
            return Ok(CaDecision {
                signer: current,
                bundle,
                step: RotationStep::Switched,
                write: None,
                annotations: vec![(TRUST_ANNOTATION, trust), (SIGNER_ANNOTATION, signer)],
                note: None,
            });
        }
        return Ok(CaDecision {
            signer: current,
            bundle: vec![current_pem.clone()],
            step: RotationStep::Steady,
            write: Some(vec![
                (strata_certificates::user::CA_KEY, current_pem),
                (super::CA_PRIVATE_KEY_KEY, stored.current.1.clone()),
                (ROTATED_FOR_KEY, rotated_for),
            ]),
            annotations: Vec::new(),
            note: Some(
                "the old CA is no longer trusted: every pod has a certificate of the new one"
                    .to_owned(),
            ),
        });
    }
    let asked = requested.filter(|request| !request.is_empty() && *request != rotated_for);
    let due = CertificateFacts::read("the CA", &current_pem)?.renewal_due(now);
    if asked.is_none() && !due {
        return Ok(CaDecision {
            signer: current,
            bundle: vec![current_pem],
            step: RotationStep::Steady,
            write: None,
            annotations: Vec::new(),
            note: None,
        });
    }
    // A subject of its own: PEM truststores (ZooKeeper's, for one) key each CA by its
    // subject, so a second CA of the same name would replace the first, and the
    // pods that still present the old CA's certificates would no longer be trusted.
    let since_epoch = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or_default();
    let next = CertificateAuthority::create(
        &format!("{common_name} {since_epoch}"),
        Validity::starting(now, CA_LIFETIME),
    )?;
    let bundle = vec![current_pem.clone(), next.certificate_pem().to_owned()];
    let trust = pem_hash(&bundle);
    let why = match asked {
        Some(request) => format!("the cluster asked for it ({ROTATE_CA_ANNOTATION}: {request})"),
        None => "the CA is two thirds into its lifetime".to_owned(),
    };
    Ok(CaDecision {
        signer: current,
        bundle,
        step: RotationStep::Introducing,
        write: Some(vec![
            (strata_certificates::user::CA_KEY, current_pem),
            (super::CA_PRIVATE_KEY_KEY, stored.current.1.clone()),
            (NEXT_CA_KEY, next.certificate_pem().to_owned()),
            (NEXT_CA_PRIVATE_KEY_KEY, next.key_pem().to_owned()),
            (ROTATED_FOR_KEY, asked.map_or(rotated_for, str::to_owned)),
        ]),
        annotations: vec![(TRUST_ANNOTATION, trust)],
        note: Some(format!(
            "a new CA, trusted next to the old one before it signs, because {why}"
        )),
    })
}
