//! TLS of a product's servers, as every operator offers it: on by default with
//! certificates the operator issues ([`crate::certificates`]), or with the user's own
//! Secret as cert-manager writes it (`tls.crt`, `tls.key` in PKCS#8, `ca.crt`).
//!
//! - [`certificate_source`] checks the spec's three settings (`enabled`, `secretName`,
//!   `certificateLifetime`) into where the certificates come from.
//! - [`certificate_step`] runs between validation and build. With the operator's
//!   certificates it reads the stored Secrets and plans the next ones; with the user's
//!   Secret it reads and checks it before anything is applied (a missing key, a PKCS#1
//!   key, a certificate from another CA or one that leaves a required name out is a
//!   Degraded reason; one about to expire is a Warning).
//! - [`TlsMaterial::into_prepared`] hands the outcome to the apply step: the Secrets,
//!   what rolls the pods (the server Secrets' fingerprints, or the user's Secret's
//!   version) and when to come back for the next renewal.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::core::v1::Pod;
use kube::Resource;
use kube::runtime::events::EventType;
use strata_certificates::user::{CA_KEY, Requirements, check_user_certificate};
use strata_model::duration::parse_seconds;
use strata_model::labels::{INSTANCE_LABEL, NAME_LABEL};
use strata_status::SpecWarning;

use crate::certificates::{
    CertificateRequest, Certificates, RotationInput, plan_rotating, read_secret, read_stored,
};
use crate::controller::Context;
use crate::error::ReconcileError;
use crate::pipeline::Prepared;
use crate::reference::{KeySource, KeysRead};
use crate::roll::PodRollState;

pub mod roll_budget;

/// The keys a server reads from its certificate Secret.
pub const TLS_SECRET_KEYS: [&str; 3] = ["tls.crt", "tls.key", "ca.crt"];

/// The operator's certificates' lifetime unless `certificateLifetime` says otherwise.
pub const DEFAULT_CERTIFICATE_LIFETIME: Duration = strata_certificates::plan::SERVER_LIFETIME;

/// The shortest lifetime accepted: a renewal rolls every pod, which takes minutes.
pub const MINIMUM_CERTIFICATE_LIFETIME: Duration = Duration::from_secs(300);

/// The spec field of the user's Secret, as errors name it.
pub const SECRET_NAME_FIELD: &str = "clusterConfig.tls.secretName";

/// Where the servers' certificates come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CertificateSource {
    /// Issued by the operator from the cluster's CA, one per role group, valid for
    /// `lifetime`.
    Operator {
        /// How long each server certificate is valid.
        lifetime: Duration,
    },
    /// The user's Secret, mounted by every server.
    User {
        /// Its name.
        secret_name: String,
    },
}

impl CertificateSource {
    /// The Secret the servers of the role group `group_object_name` mount.
    pub fn secret_name(&self, group_object_name: &str) -> String {
        match self {
            Self::Operator { .. } => operator_secret_name(group_object_name),
            Self::User { secret_name } => secret_name.clone(),
        }
    }
}

/// `<cluster>-ca`: the Secret with the cluster's CA, made once by the operator.
pub fn ca_secret_name(cluster_name: &str) -> String {
    format!("{cluster_name}-ca")
}

/// `<cluster>-client-ca`: the Secret with the CA of the cluster's client certificates,
/// for a product that keeps one apart ([`crate::certificates::ClientCaRequest`]).
pub fn client_ca_secret_name(cluster_name: &str) -> String {
    format!("{cluster_name}-client-ca")
}

/// `<role group object>-tls`: the operator's certificate of a role group.
pub fn operator_secret_name(group_object_name: &str) -> String {
    format!("{group_object_name}-tls")
}

/// `clusterConfig.tls`: on unless `enabled` is false, with the operator's certificates
/// unless a Secret is named; `None` for plaintext.
pub fn certificate_source(
    enabled: Option<bool>,
    secret_name: Option<&str>,
    certificate_lifetime: Option<&str>,
) -> Result<Option<CertificateSource>, ReconcileError> {
    if enabled == Some(false) {
        return Ok(None);
    }
    Ok(Some(match secret_name {
        Some("") => {
            return Err(ReconcileError::invalid_spec(
                "TlsSecretMissing",
                format!(
                    "{SECRET_NAME_FIELD} is empty: name the Secret with tls.crt, tls.key and \
                     ca.crt, or leave it out to have the operator issue the certificates"
                ),
            ));
        }
        Some(secret_name) => CertificateSource::User {
            secret_name: secret_name.to_owned(),
        },
        None => CertificateSource::Operator {
            lifetime: certificate_lifetime_of(certificate_lifetime)?,
        },
    }))
}

fn certificate_lifetime_of(text: Option<&str>) -> Result<Duration, ReconcileError> {
    let Some(text) = text else {
        return Ok(DEFAULT_CERTIFICATE_LIFETIME);
    };
    let invalid = |message: String| {
        ReconcileError::invalid_spec(
            "InvalidCertificateLifetime",
            format!("clusterConfig.tls.certificateLifetime: {message}"),
        )
    };
    let seconds = parse_seconds(text).map_err(|error| invalid(error.to_string()))?;
    let lifetime = Duration::from_secs(seconds.unsigned_abs());
    if lifetime < MINIMUM_CERTIFICATE_LIFETIME {
        return Err(invalid(format!(
            "{text:?} is shorter than 5m: every renewal rolls the pods, one at a time"
        )));
    }
    Ok(lifetime)
}

/// What the certificate step hands to the build step and the status.
#[derive(Debug, Default)]
pub struct TlsMaterial {
    /// What rolls the pods: `Secret/<name>` to its fingerprint or version.
    pub versions: BTreeMap<String, String>,
    /// The operator's Secrets to apply, if it issues the certificates.
    pub certificates: Option<Certificates>,
    /// A user's certificate close to its end, or one that leaves out an external name.
    pub warnings: Vec<SpecWarning>,
    /// When to come back for the next renewal.
    pub renew_in: Option<Duration>,
    /// The CA clients trust, PEM.
    pub ca_pem: String,
}

impl TlsMaterial {
    /// What the certificates add to the apply step: their Secrets (sealed), what was
    /// issued (announced once applied), the expiry warning and the next renewal. The pod templates roll on
    /// [`TlsMaterial::versions`], which the caller passes to the build.
    pub fn into_prepared(self, prepared: &mut Prepared) {
        if let Some(mut certificates) = self.certificates {
            prepared.certificates_issued = std::mem::take(&mut certificates.issued);
            certificates.push_into(&mut prepared.objects);
        }
        prepared.warnings.extend(self.warnings);
        prepared.recheck_after = self.renew_in;
    }
}

/// Logs and publishes a `CertificateIssued` Event for what a reconcile issued, once
/// its Secrets are applied.
pub(crate) async fn announce_issued<K, E>(context: &Context<E>, object: &K, issued: &[String])
where
    K: Resource<DynamicType = ()>,
{
    if issued.is_empty() {
        return;
    }
    let note = format!("Issued {}", issued.join("; "));
    tracing::info!(object = %object.meta().name.as_deref().unwrap_or_default(), "{note}");
    context
        .publish_event(
            object,
            EventType::Normal,
            "CertificateIssued",
            "Issue",
            note,
        )
        .await;
}

/// The Warning of a paused cluster whose certificates are due: nothing is written
/// while it is paused, so a certificate due for renewal runs on towards its end, a
/// third of its lifetime after renewal fell due, and the servers then stop serving TLS.
pub fn renewal_paused_warning(issued: &[String]) -> Option<SpecWarning> {
    (!issued.is_empty()).then(|| SpecWarning {
        reason: strata_status::reason!("CertificateRenewalPaused"),
        message: format!(
            "reconciliation is paused, so nothing is issued: {}. A server certificate due for \
             renewal ends a third of its lifetime after that; resume reconciliation before \
             then, or the servers stop serving TLS",
            issued.join("; ")
        ),
    })
}

/// Reads or makes the certificates of one cluster. `request` is what the operator
/// issues (used with [`CertificateSource::Operator`]); `required` is what a user's
/// certificate must hold (every server pod's FQDN and the client Service's, the TLS
/// uses, and the external names it is warned about).
///
/// `rotate_ca` is the cluster's
/// [`ROTATE_CA_ANNOTATION`](crate::certificates::rotation::ROTATE_CA_ANNOTATION): a new value starts a CA
/// rotation, which advances as the cluster's pods (from the pod cache, by the request's
/// instance label) roll onto each step.
pub async fn certificate_step<E>(
    source: &CertificateSource,
    namespace: &str,
    request: impl FnOnce(Duration) -> CertificateRequest,
    required: &Requirements,
    rotate_ca: Option<&str>,
    context: &Context<E>,
) -> Result<TlsMaterial, ReconcileError> {
    let now = SystemTime::now();
    match source {
        CertificateSource::Operator { lifetime } => {
            let request = request(*lifetime);
            let stored = read_stored(
                &context.client,
                &context.caches,
                &context.secret_values,
                &request,
            )
            .await?;
            let selector: BTreeMap<String, String> = request
                .labels
                .iter()
                .filter(|(key, _)| [INSTANCE_LABEL, NAME_LABEL].contains(&key.as_str()))
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect();
            let pods = context.caches.pods_matching(namespace, &selector);
            let rolled =
                |annotation: &str, value: &str| every_pod_carries(&pods, annotation, value);
            let rotation = RotationInput {
                requested: rotate_ca,
                rolled: &rolled,
            };
            let certificates = plan_rotating(&request, &stored, now, &rotation)?;
            Ok(TlsMaterial {
                versions: certificates
                    .fingerprints
                    .iter()
                    .map(|(name, fingerprint)| (format!("Secret/{name}"), fingerprint.clone()))
                    .collect(),
                renew_in: certificates.renew_in(now),
                warnings: Vec::new(),
                ca_pem: certificates.ca_pem.clone(),
                certificates: Some(certificates),
            })
        }
        CertificateSource::User { secret_name } => {
            user_certificate(namespace, secret_name, required, context, now).await
        }
    }
}

async fn user_certificate<E>(
    namespace: &str,
    secret_name: &str,
    required: &Requirements,
    context: &Context<E>,
    now: SystemTime,
) -> Result<TlsMaterial, ReconcileError> {
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
                field: SECRET_NAME_FIELD,
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
    let checked = check_user_certificate(&data, required, now).map_err(|problem| {
        ReconcileError::invalid_spec(
            problem.reason(),
            format!("Secret {secret_name} ({SECRET_NAME_FIELD}): {problem}"),
        )
    })?;
    let ca_pem =
        String::from_utf8_lossy(data.get(CA_KEY).map_or(&[][..], Vec::as_slice)).into_owned();
    Ok(TlsMaterial {
        versions,
        certificates: None,
        warnings: [
            (
                strata_status::reason!("TlsCertificateExpiring"),
                checked.expiry_warning,
            ),
            (
                strata_status::reason!("TlsExternalNameNotCovered"),
                checked.external_names_warning,
            ),
        ]
        .into_iter()
        .filter_map(|(reason, message)| {
            Some(SpecWarning {
                reason,
                message: format!("Secret {secret_name}: {}", message?),
            })
        })
        .collect(),
        renew_in: None,
        ca_pem,
    })
}

/// Whether every pod is Ready and carries `annotation` at `value`: pods are made from
/// their set's current template, so once each has it, no pod runs without it.
///
/// No pod has rolled onto anything, so a stopped cluster's CA rotation waits at its
/// step until the cluster runs again: otherwise it would run all three steps in three
/// reconciles, and clients would have seconds, not a roll, to take the two-CA bundle.
fn every_pod_carries(pods: &[Pod], annotation: &str, value: &str) -> bool {
    !pods.is_empty()
        && pods.iter().all(|pod| {
            let carries = pod
                .metadata
                .annotations
                .as_ref()
                .and_then(|annotations| annotations.get(annotation))
                .is_some_and(|found| found == value);
            // The pod cache keeps container statuses, not conditions.
            let state = PodRollState::of(pod, None);
            carries && state.ready && !state.terminating
        })
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use rstest::rstest;
    use serde_json::json;

    use super::*;

    const ANNOTATION: &str = "strata.dev/ca-bundle-sha256";

    #[rstest]
    #[case::nothing_due(&[], None)]
    #[case::a_renewal_waits(
        &["a certificate in Secret zk-server-default-tls, because the one there is due for renewal"],
        Some("CertificateRenewalPaused")
    )]
    fn a_paused_cluster_warns_only_when_a_certificate_waits(
        #[case] issued: &[&str],
        #[case] reason: Option<&str>,
    ) {
        let issued: Vec<String> = issued.iter().map(|note| (*note).to_owned()).collect();
        let warning = renewal_paused_warning(&issued);
        assert_eq!(
            warning.as_ref().map(|warning| warning.reason.as_str()),
            reason
        );
        if let Some(warning) = warning {
            assert!(
                issued.iter().all(|note| warning.message.contains(note)),
                "{warning:?}"
            );
        }
    }

    fn pod(carries: Option<&str>, ready: bool) -> Pod {
        let annotations = carries.map(|value| json!({ ANNOTATION: value }));
        serde_json::from_value(json!({
            "metadata": {"name": "zk-0", "annotations": annotations},
            "status": {
                "phase": "Running",
                "containerStatuses": [{
                    "name": "zookeeper", "image": "zookeeper", "imageID": "", "restartCount": 0,
                    "ready": ready, "state": {"running": {}},
                }],
            },
        }))
        .expect("a pod")
    }

    #[rstest]
    #[case::no_pod_as_on_a_stopped_cluster(vec![], false)]
    #[case::every_pod_ready_with_it(vec![pod(Some("new"), true), pod(Some("new"), true)], true)]
    #[case::one_pod_with_the_old_value(vec![pod(Some("new"), true), pod(Some("old"), true)], false)]
    #[case::one_pod_without_it(vec![pod(Some("new"), true), pod(None, true)], false)]
    #[case::one_pod_not_ready(vec![pod(Some("new"), true), pod(Some("new"), false)], false)]
    fn a_rotation_step_follows_only_once_every_pod_carries_the_last(
        #[case] pods: Vec<Pod>,
        #[case] rolled: bool,
    ) {
        assert_eq!(every_pod_carries(&pods, ANNOTATION, "new"), rolled);
    }
}
