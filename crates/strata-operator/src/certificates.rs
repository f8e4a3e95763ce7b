//! The certificate step: a cluster's own CA and the server certificates it signs, kept in
//! Secrets the operator owns, so that TLS needs no companion operator.
//!
//! It runs between dereference and build. [`read_stored`] reads the Secrets' values (the
//! only place an operator reads a Secret's data: the caches hold Secrets' metadata
//! alone), [`plan_certificates`] decides from them, purely, and [`Certificates::push_into`]
//! hands the Secrets to the apply step sealed ([`DesiredObjects::push_sealed`]): their
//! keys are sent to the API server and never compared, hashed, logged or rendered.
//!
//! - The CA Secret `<cluster>-ca` (`ca.crt`, `ca.key`) is created once and never
//!   patched: every pod and client trusts it. One that exists but does not parse is an
//!   error the user must resolve, never a reason to make another.
//! - Each server Secret has what cert-manager writes (`tls.crt`, `tls.key`, `ca.crt`), so
//!   the pods read the operator's certificates and the user's alike. It is issued again
//!   when it is missing, unreadable, signed by another CA, short of a name, or two thirds
//!   into its lifetime.
//! - A product whose clients authenticate with certificates the operator issues asks for
//!   a second CA ([`ClientCaRequest`], `<cluster>-client-ca`), made once and never
//!   patched like the first, that signs those client certificates and nothing else.
//!   The servers trust it, with their own CA, for clients only ([`CLIENT_CA_KEY`]), and
//!   trust their own CA alone for each other: a client's certificate then never passes
//!   for a server's, as ZooKeeper's quorum, which checks nothing but the chain, would
//!   take it.
//! - Each server Secret carries its certificate's fingerprint
//!   ([`FINGERPRINT_ANNOTATION`]); the pod templates carry it too, so a new certificate
//!   rolls the pods, which read their certificate only when they start.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::ApiResource;
use kube::{Api, Client};
use sha2::{Digest, Sha256};
use strata_certificates::authority::CertificateAuthority;
use strata_certificates::plan::{CaPlan, ServerPlan, plan_ca, plan_server};
use strata_certificates::user::{CA_KEY, CERTIFICATE_KEY, PRIVATE_KEY_KEY};
use strata_model::build::object_meta;
use strata_model::labels::{INSTANCE_LABEL, NAME_LABEL};

use crate::apply::DesiredObjects;
use crate::cache::ChildCaches;
use crate::error::ReconcileError;

/// The CA Secret's key for the CA's private key (its certificate is [`CA_KEY`]).
pub const CA_PRIVATE_KEY_KEY: &str = "ca.key";

/// The server Secret's key with the CAs whose client certificates the servers accept:
/// the client CA, then the servers' own CA bundle. Written only with a
/// [`ClientCaRequest`].
pub const CLIENT_CA_KEY: &str = "client-ca.crt";

/// Annotation with the SHA-256 of a server Secret's `tls.crt`: what changes when a new
/// certificate is issued, on the Secret and on the pod templates that mount it.
pub const FINGERPRINT_ANNOTATION: &str = "strata.dev/certificate-sha256";

/// Annotation with the SHA-256 of the CA Secret's certificates, written when a rotation
/// step rewrites it: what changes, since its values are never compared.
pub const CA_FINGERPRINT_ANNOTATION: &str = "strata.dev/ca-sha256";

/// What `render` shows in place of a fingerprint: the certificate exists only in the
/// cluster.
pub const ISSUED_IN_CLUSTER: &str = "issued-in-the-cluster";

/// The certificates a cluster needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertificateRequest {
    /// The cluster's namespace.
    pub namespace: String,
    /// The Secret that keeps the CA: `<cluster>-ca`.
    pub ca_secret_name: String,
    /// The CA's common name, naming the cluster to whoever inspects a chain.
    pub ca_common_name: String,
    /// The labels of every Secret the step writes (the cluster's recommended labels).
    pub labels: BTreeMap<String, String>,
    /// One server certificate per Secret.
    pub servers: Vec<ServerCertificateRequest>,
    /// How long a server certificate is valid.
    pub lifetime: Duration,
    /// The CA of the clients' certificates, for a product whose servers must tell
    /// a client's certificate from a peer's.
    pub client_ca: Option<ClientCaRequest>,
}

/// A CA apart from the servers' one, which signs only the certificates clients present.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientCaRequest {
    /// The Secret that keeps it: `<cluster>-client-ca`.
    pub secret_name: String,
    /// Its common name.
    pub common_name: String,
}

/// One server certificate: where it is kept and the names it must cover.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerCertificateRequest {
    /// The Secret's name.
    pub secret_name: String,
    /// DNS names (wildcards allowed) the certificate must cover.
    pub names: Vec<String>,
}

impl CertificateRequest {
    /// Every Secret the step reads and writes.
    pub fn secret_names(&self) -> Vec<&str> {
        std::iter::once(self.ca_secret_name.as_str())
            .chain(
                self.client_ca
                    .iter()
                    .map(|client_ca| client_ca.secret_name.as_str()),
            )
            .chain(
                self.servers
                    .iter()
                    .map(|server| server.secret_name.as_str()),
            )
            .collect()
    }
}

/// What the Secrets hold, by Secret name; a Secret that does not exist is absent.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct StoredSecrets(BTreeMap<String, BTreeMap<String, Vec<u8>>>);

impl std::fmt::Debug for StoredSecrets {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_list()
            .entries(self.0.iter().map(|(name, data)| (name, data.keys())))
            .finish()
    }
}

impl StoredSecrets {
    /// Secrets with these values, for tests.
    pub fn from_values(values: BTreeMap<String, BTreeMap<String, Vec<u8>>>) -> Self {
        Self(values)
    }

    /// The CA Secret's values, with a rotation's, if it exists.
    fn ca(&self, secret: &str) -> Option<rotation::StoredCa> {
        let data = self.0.get(secret)?;
        let text = |name: &str| {
            data.get(name)
                .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
        };
        Some(rotation::StoredCa {
            current: (
                text(CA_KEY).unwrap_or_default(),
                text(CA_PRIVATE_KEY_KEY).unwrap_or_default(),
            ),
            next: text(rotation::NEXT_CA_KEY).zip(text(rotation::NEXT_CA_PRIVATE_KEY_KEY)),
            previous: text(rotation::PREVIOUS_CA_KEY),
            rotated_for: text(rotation::ROTATED_FOR_KEY),
        })
    }

    /// The Secret `name` as it is stored, to be pushed unchanged: `(shown, sealed)`.
    fn kept(&self, request: &CertificateRequest, name: &str) -> Option<(Secret, Secret)> {
        let data: Vec<(&str, String)> = self
            .0
            .get(name)?
            .iter()
            .map(|(key, bytes)| (key.as_str(), String::from_utf8_lossy(bytes).into_owned()))
            .collect();
        Some(sealed_secret(request, name, &data, None))
    }

    fn pair(&self, secret: &str, certificate: &str, key: &str) -> Option<(String, String)> {
        let data = self.0.get(secret)?;
        let text = |name: &str| {
            data.get(name)
                .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
                .unwrap_or_default()
        };
        Some((text(certificate), text(key)))
    }
}

/// The values of Secrets read before, each with the `resourceVersion` it was read at.
/// The watch caches hold Secrets' metadata alone, so a version they still show means
/// the values are unchanged, and a steady reconcile reads no Secret at all. Held in the
/// operator's memory only, as the API server's responses are.
#[derive(Default)]
pub struct SecretValues(Mutex<HashMap<(String, String), (String, SecretData)>>);

/// A Secret's values, decoded, by key.
pub type SecretData = BTreeMap<String, Vec<u8>>;

impl std::fmt::Debug for SecretValues {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("SecretValues")
            .finish_non_exhaustive()
    }
}

impl SecretValues {
    fn known(&self, namespace: &str, name: &str, version: &str) -> Option<SecretData> {
        let values = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        values
            .get(&(namespace.to_owned(), name.to_owned()))
            .filter(|(read_at, _)| read_at == version)
            .map(|(_, data)| data.clone())
    }

    fn remember(&self, namespace: &str, name: &str, version: String, data: SecretData) {
        let mut values = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        values.insert((namespace.to_owned(), name.to_owned()), (version, data));
    }
}

/// Reads the values of the request's Secrets: from `known` when the watch cache shows the
/// version they were read at, otherwise from the API server. A failed read is transient:
/// the step is retried, and nothing is issued from a partial view.
///
/// A Secret of one of the request's names that is not this cluster's (its recommended
/// labels name another product or instance, or none) is an error the user must resolve:
/// its CA key would otherwise sign this cluster's certificates, as a ZookeeperCluster's
/// `<name>-ca` would a TrinoCluster's of the same name (security review, finding 33).
pub async fn read_stored(
    client: &Client,
    caches: &ChildCaches,
    known: &SecretValues,
    request: &CertificateRequest,
) -> Result<StoredSecrets, ReconcileError> {
    let namespace = &request.namespace;
    let resource = ApiResource::erase::<Secret>(&());
    let mut stored = BTreeMap::new();
    for name in request.secret_names() {
        let cached = caches.get(&resource, namespace, name);
        let read = read_labeled(
            client,
            known,
            namespace,
            name,
            cached.map(|c| c.metadata.clone()),
        );
        if let Some((labels, data)) = read.await? {
            if let Some(error) = not_this_clusters(name, &labels, &request.labels) {
                return Err(error);
            }
            stored.insert(name.to_owned(), data);
        }
    }
    Ok(StoredSecrets(stored))
}

/// The error for the Secret `name` labeled `labels` when its recommended name and
/// instance labels are not `own`'s; `None` when they are.
fn not_this_clusters(
    name: &str,
    labels: &BTreeMap<String, String>,
    own: &BTreeMap<String, String>,
) -> Option<ReconcileError> {
    let label = |labels: &BTreeMap<String, String>, key: &str| labels.get(key).cloned();
    let identity = [NAME_LABEL, INSTANCE_LABEL];
    if identity
        .iter()
        .all(|key| label(labels, key) == label(own, key))
    {
        return None;
    }
    let whose = match (label(labels, NAME_LABEL), label(labels, INSTANCE_LABEL)) {
        (Some(product), Some(instance)) => format!("{product}'s {instance}'s"),
        _ => "not labeled as any cluster's".to_owned(),
    };
    let other_product =
        label(labels, NAME_LABEL).is_some_and(|product| Some(product) != label(own, NAME_LABEL));
    let reason = if other_product {
        "NameTakenByOtherProduct"
    } else {
        "ObjectNotOwned"
    };
    Some(ReconcileError::invalid_spec(
        reason,
        format!(
            "Secret {name} exists and is {whose}: this cluster's CA or certificate would \
             replace it, and its key is not this cluster's to use. Rename the cluster, or \
             delete or rename the other Secret. Nothing was issued"
        ),
    ))
}

/// The values of one Secret, `None` when it does not exist: from `known` when
/// `cached_version` (what a watch cache shows of it) is the version they were read at,
/// otherwise from the API server.
pub async fn read_secret(
    client: &Client,
    known: &SecretValues,
    namespace: &str,
    name: &str,
    cached_version: Option<&str>,
) -> Result<Option<SecretData>, ReconcileError> {
    let cached = cached_version.map(|version| ObjectMeta {
        resource_version: Some(version.to_owned()),
        ..ObjectMeta::default()
    });
    let read = read_labeled(client, known, namespace, name, cached).await?;
    Ok(read.map(|(_, data)| data))
}

/// [`read_secret`] with the Secret's labels: the cached object's (`cached`, its
/// metadata) when its values are known at its version, else the API server's.
async fn read_labeled(
    client: &Client,
    known: &SecretValues,
    namespace: &str,
    name: &str,
    cached: Option<ObjectMeta>,
) -> Result<Option<(BTreeMap<String, String>, SecretData)>, ReconcileError> {
    if let Some(cached) = cached {
        let data = cached
            .resource_version
            .as_deref()
            .and_then(|version| known.known(namespace, name, version));
        if let Some(data) = data {
            return Ok(Some((cached.labels.unwrap_or_default(), data)));
        }
    }
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let secret = api.get_opt(name).await.map_err(|source| {
        ReconcileError::from_kube("SecretReadFailed", format!("reading Secret {name}"), source)
    })?;
    Ok(secret.map(|secret| {
        let version = secret.metadata.resource_version.clone().unwrap_or_default();
        let data: SecretData = secret
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(key, ByteString(bytes))| (key, bytes))
            .collect();
        known.remember(namespace, name, version, data.clone());
        (secret.metadata.labels.unwrap_or_default(), data)
    }))
}

/// The Secrets one reconcile writes, and what the rest of it needs to know of them.
/// `Debug` shows what was decided, never a Secret's values.
#[derive(Clone)]
pub struct Certificates {
    /// The CA's certificate, for discovery and for clients of the product.
    pub ca_pem: String,
    /// Per server Secret, its certificate's fingerprint.
    pub fingerprints: BTreeMap<String, String>,
    /// What is issued in this reconcile, and why: for the log and an Event.
    pub issued: Vec<String>,
    /// When the first kept certificate is due for renewal, so the cluster is
    /// reconciled again then.
    pub renew_at: Option<SystemTime>,
    /// The pod template annotations a CA rotation in progress needs.
    pub pod_annotations: Vec<(&'static str, String)>,
    /// The client CA's certificate, with a [`ClientCaRequest`].
    pub client_ca_pem: Option<String>,
    ca_secret: Option<CaWrite>,
    /// The client CA's Secret, made in this reconcile or kept as stored; retained alike.
    client_ca_secret: Option<ClientCaWrite>,
    server_secrets: Vec<(Secret, Secret)>,
}

/// How the CA Secret is written: created once, rewritten by a rotation step, or kept as
/// it is stored. Each is retained (security review, finding 10): the CA outlives its
/// cluster, so a cluster deleted and created again, by a GitOps replace or a reinstall,
/// comes back with the CA its clients trust. Pushing a kept CA too releases one that an
/// earlier version created owned.
#[derive(Clone)]
enum CaWrite {
    Create(Secret, Secret),
    Rotate(Secret, Secret),
    Keep(Secret, Secret),
}

/// How the client CA Secret is written: created once, or kept (adopted) as stored.
#[derive(Clone)]
enum ClientCaWrite {
    Create(Secret, Secret),
    Keep(Secret, Secret),
}

impl std::fmt::Debug for Certificates {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Certificates")
            .field("fingerprints", &self.fingerprints)
            .field("issued", &self.issued)
            .field("renew_at", &self.renew_at)
            .finish_non_exhaustive()
    }
}

impl Certificates {
    /// Adds the Secrets to what the apply step writes: the CA once, and every server
    /// Secret (unchanged ones match their stored copy and are not written again).
    pub fn push_into(self, desired: &mut DesiredObjects) {
        match self.ca_secret {
            Some(CaWrite::Create(shown, sealed)) => desired.push_sealed_retained(shown, sealed),
            Some(CaWrite::Keep(shown, sealed)) => desired.push_sealed_adopted(shown, sealed),
            Some(CaWrite::Rotate(shown, sealed)) => {
                desired.push_sealed_retained_rewrite(shown, sealed);
            }
            None => {}
        }
        match self.client_ca_secret {
            Some(ClientCaWrite::Create(shown, sealed)) => {
                desired.push_sealed_retained(shown, sealed);
            }
            Some(ClientCaWrite::Keep(shown, sealed)) => desired.push_sealed_adopted(shown, sealed),
            None => {}
        }
        for (shown, sealed) in self.server_secrets {
            desired.push_sealed(shown, sealed);
        }
        for (key, value) in &self.pod_annotations {
            desired.annotate_pod_templates(key, value);
        }
    }

    /// The Secrets as the API server stores them once applied, values included: for
    /// whoever runs the products without the apply step (the pod runner's tests).
    pub fn sealed_secrets(&self) -> Vec<Secret> {
        let ca = self.ca_secret.iter().map(|write| match write {
            CaWrite::Create(_, sealed) | CaWrite::Rotate(_, sealed) | CaWrite::Keep(_, sealed) => {
                sealed
            }
        });
        let client_ca = self.client_ca_secret.iter().map(|write| match write {
            ClientCaWrite::Create(_, sealed) | ClientCaWrite::Keep(_, sealed) => sealed,
        });
        ca.chain(client_ca)
            .chain(self.server_secrets.iter().map(|(_, sealed)| sealed))
            .cloned()
            .collect()
    }

    /// How long until the first renewal, from `now`.
    pub fn renew_in(&self, now: SystemTime) -> Option<Duration> {
        self.renew_at
            .map(|at| at.duration_since(now).unwrap_or(Duration::ZERO))
    }
}

/// What a CA rotation needs besides the Secrets: the cluster's request, and whether
/// every pod carries a pod template annotation (see [`rotation`]).
pub struct RotationInput<'a> {
    /// The value of the cluster's [`rotation::ROTATE_CA_ANNOTATION`].
    pub requested: Option<&'a str>,
    /// Whether every pod of the cluster is Ready with the annotation at that value.
    pub rolled: &'a dyn Fn(&str, &str) -> bool,
}

impl std::fmt::Debug for RotationInput<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("RotationInput")
            .field("requested", &self.requested)
            .finish_non_exhaustive()
    }
}

impl RotationInput<'_> {
    /// No request, and no pod known to have rolled: a rotation in the Secrets stays
    /// where it is (offline rendering, tests).
    pub const NONE: RotationInput<'static> = RotationInput {
        requested: None,
        rolled: &|_, _| false,
    };
}

/// Decides, from what the Secrets hold at `now`, which CA to keep or create and which
/// server certificates to keep or issue, with no rotation request.
pub fn plan_certificates(
    request: &CertificateRequest,
    stored: &StoredSecrets,
    now: SystemTime,
) -> Result<Certificates, ReconcileError> {
    plan_rotating(request, stored, now, &RotationInput::NONE)
}

/// [`plan_certificates`], advancing a CA rotation as `rotation` allows.
pub fn plan_rotating(
    request: &CertificateRequest,
    stored: &StoredSecrets,
    now: SystemTime,
    rotation: &RotationInput<'_>,
) -> Result<Certificates, ReconcileError> {
    let unreadable = |error: strata_certificates::CertificateError| {
        ReconcileError::invalid_spec(
            "CaSecretUnreadable",
            format!(
                "Secret {} holds no usable CA ({error}). The operator never replaces a CA \
                 that pods and clients may trust: restore it, or delete the Secret to have a \
                 new CA made (every client must then trust the new one)",
                request.ca_secret_name
            ),
        )
    };
    let (decision, ca_secret) = match stored.ca(&request.ca_secret_name) {
        Some(stored_ca) => {
            let decision = rotation::decide_ca(
                &stored_ca,
                rotation.requested,
                rotation.rolled,
                &request.ca_common_name,
                now,
            )
            .map_err(unreadable)?;
            let write = decision.write.as_ref().map(|values| {
                let (mut shown, sealed) =
                    sealed_secret(request, &request.ca_secret_name, values, None);
                let certificates: Vec<String> = values
                    .iter()
                    .filter(|(key, _)| !key.ends_with(".key"))
                    .map(|(key, value)| format!("{key}={value}"))
                    .collect();
                shown.metadata.annotations = Some(BTreeMap::from([(
                    CA_FINGERPRINT_ANNOTATION.to_owned(),
                    rotation::pem_hash(&certificates),
                )]));
                let mut sealed = sealed;
                sealed.metadata.annotations = shown.metadata.annotations.clone();
                CaWrite::Rotate(shown, sealed)
            });
            let write = write.or_else(|| {
                let (shown, sealed) = stored.kept(request, &request.ca_secret_name)?;
                Some(CaWrite::Keep(shown, sealed))
            });
            (decision, write)
        }
        None => {
            refuse_lost_ca(request, stored)?;
            let created = match plan_ca(None, &request.ca_common_name, now).map_err(unreadable)? {
                CaPlan::Create(created) | CaPlan::Keep(created) => created,
            };
            let data = [
                (CA_KEY, created.certificate_pem()),
                (CA_PRIVATE_KEY_KEY, created.key_pem()),
            ];
            let secret = sealed_secret(request, &request.ca_secret_name, &data, None);
            let decision = rotation::CaDecision {
                bundle: vec![created.certificate_pem().to_owned()],
                signer: created,
                step: rotation::RotationStep::Steady,
                write: None,
                annotations: Vec::new(),
                note: None,
            };
            (decision, Some(CaWrite::Create(secret.0, secret.1)))
        }
    };
    let bundle = decision.bundle.join("\n");
    let authority = &decision.signer;
    let mut certificates = Certificates {
        ca_pem: bundle.clone(),
        fingerprints: BTreeMap::new(),
        issued: Vec::new(),
        renew_at: None,
        pod_annotations: decision.annotations.clone(),
        client_ca_pem: None,
        ca_secret,
        client_ca_secret: None,
        server_secrets: Vec::new(),
    };
    if matches!(certificates.ca_secret, Some(CaWrite::Create(..))) {
        certificates
            .issued
            .push(format!("the CA in Secret {}", request.ca_secret_name));
    }
    if let Some(note) = &decision.note {
        certificates.issued.push(format!("CA rotation: {note}"));
    }
    if let Some(client_ca) = &request.client_ca {
        plan_client_ca(request, client_ca, stored, now, &mut certificates)?;
    }
    // The servers accept clients of the client CA, and of their own CA, whose client
    // certificates (issued before the client CA existed) keep working.
    let client_bundle = certificates
        .client_ca_pem
        .as_ref()
        .map(|client_ca| format!("{client_ca}\n{bundle}"));
    for server in &request.servers {
        let existing = stored.pair(&server.secret_name, CERTIFICATE_KEY, PRIVATE_KEY_KEY);
        let plan = plan_server(
            existing
                .as_ref()
                .map(|(certificate, key)| (certificate.as_str(), key.as_str())),
            authority,
            &server.names,
            now,
            request.lifetime,
        )
        .map_err(|error| {
            ReconcileError::operator_bug(
                "CertificateIssueFailed",
                format!(
                    "cannot issue the certificate of Secret {}: {error}",
                    server.secret_name
                ),
            )
        })?;
        let (certificate, key) = match plan {
            ServerPlan::Keep { renew_at } => {
                certificates.renew_at = Some(
                    certificates
                        .renew_at
                        .map_or(renew_at, |earliest| earliest.min(renew_at)),
                );
                existing.unwrap_or_default()
            }
            ServerPlan::Issue {
                certificate,
                reason,
            } => {
                certificates.issued.push(format!(
                    "a certificate in Secret {}, because {reason}",
                    server.secret_name
                ));
                (
                    certificate.certificate_pem().to_owned(),
                    certificate.key_pem().to_owned(),
                )
            }
        };
        // A bundle of one CA keeps the fingerprint of the certificate alone, as before
        // rotations existed; a bundle of two changes it, so the pods roll onto it.
        let fingerprint = match decision.bundle.len() {
            1 => fingerprint(&certificate),
            _ => fingerprint(&format!("{certificate}\n{bundle}")),
        };
        let mut data = vec![
            (CERTIFICATE_KEY, certificate.as_str()),
            (PRIVATE_KEY_KEY, key.as_str()),
            (CA_KEY, bundle.as_str()),
        ];
        if let Some(client_bundle) = &client_bundle {
            data.push((CLIENT_CA_KEY, client_bundle.as_str()));
        }
        certificates.server_secrets.push(sealed_secret(
            request,
            &server.secret_name,
            &data,
            Some(&fingerprint),
        ));
        certificates
            .fingerprints
            .insert(server.secret_name.clone(), fingerprint);
    }
    Ok(certificates)
}

/// Refuses to make a new CA while server Secrets it did not sign still exist: they
/// mean the CA Secret was deleted under a cluster whose pods and clients trust the
/// old CA. A new CA would roll the pods one at a time onto a CA the others do not
/// trust, which splits a ZooKeeper quorum and a Trino cluster, and cut off every
/// client (security review, finding 10). The server Secrets hold only the old CA's
/// certificate, not its key, so the operator cannot go on signing with it.
fn refuse_lost_ca(
    request: &CertificateRequest,
    stored: &StoredSecrets,
) -> Result<(), ReconcileError> {
    let issued: Vec<&str> = request
        .servers
        .iter()
        .map(|server| server.secret_name.as_str())
        .filter(|name| stored.0.contains_key(*name))
        .collect();
    if issued.is_empty() {
        return Ok(());
    }
    Err(ReconcileError::invalid_spec(
        "CaSecretMissing",
        format!(
            "Secret {ca} is gone, but the certificates in {servers} were issued by the CA \
             it held, and the pods and clients trust that CA alone. Nothing was issued or \
             rolled. Restore {ca} from a backup. To start over with a new CA instead, \
             stop the cluster (`clusterOperation.stopped: true`) and delete {servers}: the pods then all start on the new CA, \
             and every client must trust it",
            ca = request.ca_secret_name,
            servers = issued.join(", "),
        ),
    ))
}

/// Keeps the client CA of `client_ca`, or makes it: created once, never patched, and
/// never replaced when it does not parse, as the servers' CA.
fn plan_client_ca(
    request: &CertificateRequest,
    client_ca: &ClientCaRequest,
    stored: &StoredSecrets,
    now: SystemTime,
    certificates: &mut Certificates,
) -> Result<(), ReconcileError> {
    let unreadable = |error: strata_certificates::CertificateError| {
        ReconcileError::invalid_spec(
            "ClientCaSecretUnreadable",
            format!(
                "Secret {} holds no usable client CA ({error}). The operator never replaces a \
                 CA that servers trust: restore it, or delete the Secret to have a new one \
                 made (every client certificate it signed is then refused once the servers \
                 roll)",
                client_ca.secret_name
            ),
        )
    };
    match stored.pair(&client_ca.secret_name, CA_KEY, CA_PRIVATE_KEY_KEY) {
        Some((certificate, key)) => {
            CertificateAuthority::from_pem(&certificate, &key).map_err(unreadable)?;
            certificates.client_ca_pem = Some(certificate);
            certificates.client_ca_secret = stored
                .kept(request, &client_ca.secret_name)
                .map(|(shown, sealed)| ClientCaWrite::Keep(shown, sealed));
        }
        None => {
            let created = match plan_ca(None, &client_ca.common_name, now).map_err(unreadable)? {
                CaPlan::Create(created) | CaPlan::Keep(created) => created,
            };
            let data = [
                (CA_KEY, created.certificate_pem()),
                (CA_PRIVATE_KEY_KEY, created.key_pem()),
            ];
            let (shown, sealed) = sealed_secret(request, &client_ca.secret_name, &data, None);
            certificates.client_ca_secret = Some(ClientCaWrite::Create(shown, sealed));
            certificates.client_ca_pem = Some(created.certificate_pem().to_owned());
            certificates
                .issued
                .push(format!("the client CA in Secret {}", client_ca.secret_name));
        }
    }
    Ok(())
}

/// The Secrets as `render` shows them: names, labels and the keys they will hold, and
/// no value (there is no cluster to keep a CA in).
pub fn rendered_secrets(request: &CertificateRequest) -> Vec<Secret> {
    let ca = secret_shell(request, &request.ca_secret_name, None);
    let client_ca = request
        .client_ca
        .iter()
        .map(|client_ca| secret_shell(request, &client_ca.secret_name, None));
    let servers = request
        .servers
        .iter()
        .map(|server| secret_shell(request, &server.secret_name, Some(ISSUED_IN_CLUSTER)));
    std::iter::once(ca)
        .chain(client_ca)
        .chain(servers)
        .collect()
}

/// The SHA-256 of a certificate's PEM, in hex.
pub fn fingerprint(certificate_pem: &str) -> String {
    hex::encode(Sha256::digest(certificate_pem.as_bytes()))
}

fn sealed_secret<V: AsRef<str>>(
    request: &CertificateRequest,
    name: &str,
    data: &[(&str, V)],
    fingerprint: Option<&str>,
) -> (Secret, Secret) {
    let shown = secret_shell(request, name, fingerprint);
    let mut sealed = shown.clone();
    sealed.data = Some(
        data.iter()
            .map(|(key, value)| {
                (
                    (*key).to_owned(),
                    ByteString(value.as_ref().as_bytes().to_vec()),
                )
            })
            .collect(),
    );
    (shown, sealed)
}

fn secret_shell(request: &CertificateRequest, name: &str, fingerprint: Option<&str>) -> Secret {
    let mut metadata = object_meta(name, &request.namespace, request.labels.clone());
    if let Some(fingerprint) = fingerprint {
        metadata.annotations = Some(BTreeMap::from([(
            FINGERPRINT_ANNOTATION.to_owned(),
            fingerprint.to_owned(),
        )]));
    }
    Secret {
        metadata,
        type_: Some("Opaque".to_owned()),
        ..Secret::default()
    }
}

pub mod rotation;

#[cfg(test)]
mod tests;
