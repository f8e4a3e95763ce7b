use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use rstest::rstest;
use strata_certificates::facts::CertificateFacts;

use super::*;
use crate::apply::ApplyMode;

const DAY: Duration = Duration::from_secs(86_400);

fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000)
}

fn request() -> CertificateRequest {
    CertificateRequest {
        namespace: "data".to_owned(),
        ca_secret_name: "zk-ca".to_owned(),
        ca_common_name: "zk CA".to_owned(),
        labels: BTreeMap::from([("app.kubernetes.io/instance".to_owned(), "zk".to_owned())]),
        servers: vec![ServerCertificateRequest {
            secret_name: "zk-server-default-tls".to_owned(),
            names: vec![
                "*.zk-server-default.data.svc.cluster.local".to_owned(),
                "zk.data.svc.cluster.local".to_owned(),
            ],
        }],
        lifetime: 30 * DAY,
        client_ca: None,
    }
}

/// What the API server would hold after applying `certificates`.
fn stored_after(certificates: Certificates, before: &StoredSecrets) -> StoredSecrets {
    let mut desired = DesiredObjects::new();
    certificates.push_into(&mut desired);
    let mut stored = before.0.clone();
    for object in desired.into_objects(false).expect("erase") {
        if object.mode().is_create_once() && stored.contains_key(object.name()) {
            continue;
        }
        let secret: Secret =
            serde_json::from_value(object.creation_value().clone()).expect("a Secret");
        let data = secret
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(key, value)| (key, value.0))
            .collect();
        stored.insert(object.name().to_owned(), data);
    }
    StoredSecrets(stored)
}

fn server_certificate(stored: &StoredSecrets) -> CertificateFacts {
    let pem = &stored.0["zk-server-default-tls"]["tls.crt"];
    CertificateFacts::read("server", &String::from_utf8_lossy(pem)).expect("a certificate")
}

#[test]
fn a_new_cluster_gets_a_ca_and_a_server_certificate_it_signed() {
    let planned = plan_certificates(&request(), &StoredSecrets::default(), now()).expect("plan");
    assert_eq!(planned.issued.len(), 2, "{:?}", planned.issued);
    let stored = stored_after(planned.clone(), &StoredSecrets::default());
    let server = server_certificate(&stored);
    assert!(server.missing_names(&request().servers[0].names).is_empty());
    assert!(
        server
            .missing_names(&[
                "zk-server-default-2.zk-server-default.data.svc.cluster.local".to_owned()
            ])
            .is_empty()
    );
    let ca = String::from_utf8_lossy(&stored.0["zk-ca"]["ca.crt"]).into_owned();
    assert!(server.issued_by(&ca).expect("check"));
    assert_eq!(stored.0["zk-server-default-tls"]["ca.crt"], ca.as_bytes());
    assert_eq!(planned.ca_pem, ca);
}

#[test]
fn the_next_reconcile_keeps_everything_and_asks_to_come_back_at_renewal() {
    let first = plan_certificates(&request(), &StoredSecrets::default(), now()).expect("plan");
    let fingerprints = first.fingerprints.clone();
    let stored = stored_after(first, &StoredSecrets::default());
    let second = plan_certificates(&request(), &stored, now() + DAY).expect("plan");
    assert!(second.issued.is_empty(), "{:?}", second.issued);
    assert_eq!(second.fingerprints, fingerprints);
    // Two thirds of 30 days from the start, less the start's small backdating.
    let renew_in = second.renew_in(now() + DAY).expect("a renewal");
    assert!(
        (19 * DAY - Duration::from_secs(3600)..=19 * DAY).contains(&renew_in),
        "{renew_in:?}"
    );
    assert_eq!(stored_after(second, &stored), stored, "nothing changes");
}

#[rstest]
#[case::renewal_due(21, None, "due for renewal")]
#[case::a_name_added(1, Some("zk-extra.data.svc.cluster.local"), "does not cover")]
fn a_server_certificate_is_issued_again_by_the_same_ca(
    #[case] days_later: u32,
    #[case] added_name: Option<&str>,
    #[case] why: &str,
) {
    let first = plan_certificates(&request(), &StoredSecrets::default(), now()).expect("plan");
    let stored = stored_after(first.clone(), &StoredSecrets::default());
    let mut request = request();
    request.servers[0]
        .names
        .extend(added_name.map(str::to_owned));
    let later = plan_certificates(&request, &stored, now() + DAY * days_later).expect("plan");
    assert_eq!(later.issued.len(), 1, "{:?}", later.issued);
    assert!(later.issued[0].contains(why), "{:?}", later.issued);
    assert_ne!(later.fingerprints, first.fingerprints, "the pods roll");
    assert_eq!(later.ca_pem, first.ca_pem, "the CA stays");
}

#[test]
fn a_ca_secret_that_does_not_parse_is_never_replaced() {
    let stored = StoredSecrets::from_values(BTreeMap::from([(
        "zk-ca".to_owned(),
        BTreeMap::from([("ca.crt".to_owned(), b"not a certificate".to_vec())]),
    )]));
    let error = plan_certificates(&request(), &stored, now()).expect_err("refused");
    assert_eq!(error.reason(), "CaSecretUnreadable");
    assert!(!error.is_transient());
}

/// How the apply step writes each Secret of `certificates`, and whether it gives it an
/// owner reference the garbage collector follows.
fn writes(certificates: Certificates) -> BTreeMap<String, (ApplyMode, bool)> {
    let owner = OwnerReference {
        api_version: "zookeeper.strata.dev/v1alpha1".to_owned(),
        kind: "ZookeeperCluster".to_owned(),
        name: "zk".to_owned(),
        uid: "uid-1".to_owned(),
        ..OwnerReference::default()
    };
    let mut desired = DesiredObjects::new();
    certificates.push_into(&mut desired);
    desired
        .into_objects(false)
        .expect("erase")
        .into_iter()
        .map(|object| {
            let object = object.owned_by(&owner);
            let owned = object.creation_value()["metadata"]
                .get("ownerReferences")
                .is_some();
            (object.name().to_owned(), (object.mode(), owned))
        })
        .collect()
}

/// Security review, finding 10: the CAs outlive their cluster, whether made, kept or
/// rewritten by a rotation step, so a cluster deleted and created again comes back
/// with the CA its clients trust; the server certificates go with the cluster.
#[rstest]
#[case::made(None, ApplyMode::CreateOnceRetained, ApplyMode::CreateOnceRetained)]
#[case::kept_which_releases_one_made_owned(
    Some(None),
    ApplyMode::AdoptRetained,
    ApplyMode::AdoptRetained
)]
#[case::rewritten_by_a_rotation_step(
    Some(Some("2026-12-01")),
    ApplyMode::ApplyRetained,
    ApplyMode::AdoptRetained
)]
fn the_cas_are_retained_and_the_server_certificates_owned(
    #[case] before: Option<Option<&str>>,
    #[case] ca_write: ApplyMode,
    #[case] client_ca_write: ApplyMode,
) {
    let request = with_client_ca();
    let first = plan_certificates(&request, &StoredSecrets::default(), now()).expect("plan");
    let planned = match before {
        None => first,
        Some(requested) => {
            let stored = stored_after(first, &StoredSecrets::default());
            let rotation = RotationInput {
                requested,
                rolled: &all_rolled,
            };
            plan_rotating(&request, &stored, now(), &rotation).expect("plan")
        }
    };
    assert_eq!(
        writes(planned),
        BTreeMap::from([
            ("zk-ca".to_owned(), (ca_write, false)),
            ("zk-client-ca".to_owned(), (client_ca_write, false)),
            ("zk-server-default-tls".to_owned(), (ApplyMode::Apply, true)),
        ])
    );
}

/// Security review, finding 10: a CA Secret deleted under a cluster whose server
/// certificates it signed is not replaced, which would roll the pods onto a CA the
/// others and the clients do not trust. Once those certificates are gone too (the
/// cluster deleted, or stopped and cleared on purpose), a new CA is made.
#[test]
fn a_ca_deleted_under_the_certificates_it_signed_is_not_replaced() {
    let first = plan_certificates(&request(), &StoredSecrets::default(), now()).expect("plan");
    let mut stored = stored_after(first, &StoredSecrets::default());
    stored.0.remove("zk-ca");
    let error = plan_certificates(&request(), &stored, now()).expect_err("refused");
    assert_eq!(error.reason(), "CaSecretMissing");
    assert!(!error.is_transient());
    assert!(
        error.message().contains("zk-server-default-tls"),
        "{}",
        error.message()
    );

    stored.0.remove("zk-server-default-tls");
    let fresh = plan_certificates(&request(), &stored, now()).expect("a new CA");
    assert!(fresh.issued.iter().any(|issued| issued.contains("the CA")));
}

fn with_client_ca() -> CertificateRequest {
    CertificateRequest {
        client_ca: Some(ClientCaRequest {
            secret_name: "zk-client-ca".to_owned(),
            common_name: "zk client CA".to_owned(),
        }),
        ..request()
    }
}

fn text(stored: &StoredSecrets, secret: &str, key: &str) -> String {
    String::from_utf8_lossy(&stored.0[secret][key]).into_owned()
}

#[test]
fn a_client_ca_apart_signs_no_server_and_the_servers_trust_it_for_clients_only() {
    let planned =
        plan_certificates(&with_client_ca(), &StoredSecrets::default(), now()).expect("plan");
    assert!(
        planned
            .issued
            .iter()
            .any(|issued| issued.contains("the client CA in Secret zk-client-ca")),
        "{:?}",
        planned.issued
    );
    let stored = stored_after(planned.clone(), &StoredSecrets::default());
    let ca = text(&stored, "zk-ca", "ca.crt");
    let client_ca = text(&stored, "zk-client-ca", "ca.crt");
    assert_ne!(client_ca, ca, "two CAs");
    assert_eq!(planned.client_ca_pem.as_deref(), Some(client_ca.as_str()));
    let server = server_certificate(&stored);
    assert!(server.issued_by(&ca).expect("check"));
    assert!(!server.issued_by(&client_ca).expect("check"));
    assert_eq!(
        text(&stored, "zk-server-default-tls", "ca.crt"),
        ca,
        "what the quorum trusts: the servers' CA alone"
    );
    assert_eq!(
        text(&stored, "zk-server-default-tls", CLIENT_CA_KEY),
        format!("{client_ca}\n{ca}"),
        "what the client port trusts: the client CA, and the servers' CA"
    );

    let second = plan_certificates(&with_client_ca(), &stored, now() + DAY).expect("plan");
    assert!(second.issued.is_empty(), "{:?}", second.issued);
    assert_eq!(
        second.client_ca_pem, planned.client_ca_pem,
        "the client CA stays"
    );
    assert_eq!(stored_after(second, &stored), stored, "nothing changes");
}

#[test]
fn a_client_ca_secret_that_does_not_parse_is_never_replaced() {
    let first =
        plan_certificates(&with_client_ca(), &StoredSecrets::default(), now()).expect("plan");
    let mut stored = stored_after(first, &StoredSecrets::default());
    stored.0.insert(
        "zk-client-ca".to_owned(),
        BTreeMap::from([("ca.crt".to_owned(), b"not a certificate".to_vec())]),
    );
    let error = plan_certificates(&with_client_ca(), &stored, now()).expect_err("refused");
    assert_eq!(error.reason(), "ClientCaSecretUnreadable");
    assert!(!error.is_transient());
}

#[test]
fn without_a_client_ca_the_servers_secrets_keep_cert_managers_three_keys() {
    let planned = plan_certificates(&request(), &StoredSecrets::default(), now()).expect("plan");
    let stored = stored_after(planned, &StoredSecrets::default());
    let keys: Vec<&String> = stored.0["zk-server-default-tls"].keys().collect();
    assert_eq!(keys, ["ca.crt", "tls.crt", "tls.key"]);
    assert!(!stored.0.contains_key("zk-client-ca"));
}

#[test]
fn no_key_is_rendered_compared_or_logged() {
    let planned = plan_certificates(&request(), &StoredSecrets::default(), now()).expect("plan");
    let stored = stored_after(planned.clone(), &StoredSecrets::default());
    let keys: Vec<String> = stored
        .0
        .values()
        .flat_map(|data| data.iter())
        .filter(|(name, _)| name.ends_with(".key"))
        .map(|(_, value)| String::from_utf8_lossy(value).into_owned())
        .collect();
    assert_eq!(keys.len(), 2);
    let mut desired = DesiredObjects::new();
    planned.clone().push_into(&mut desired);
    let logged = format!("{planned:?} {desired:?} {stored:?}");
    // The key names stand for the values: what shows them, shows the values too.
    let decided = format!("{planned:?} {desired:?}");
    for name in ["tls.key", "ca.key"] {
        assert!(
            !decided.contains(name),
            "a Secret's values in Debug output: {decided}"
        );
    }
    let rendered: Vec<_> = desired
        .into_objects(false)
        .expect("erase")
        .into_iter()
        .map(|object| object.into_value().to_string())
        .collect();
    for key in &keys {
        let body = key.lines().nth(1).expect("a PEM body line");
        assert!(!logged.contains(body), "a key in Debug output");
        assert!(
            !rendered.iter().any(|text| text.contains(body)),
            "a key rendered"
        );
    }
}

#[rstest]
#[case::one_ca(request(), &["zk-ca", "zk-server-default-tls"])]
#[case::with_a_client_ca(with_client_ca(), &["zk-ca", "zk-client-ca", "zk-server-default-tls"])]
fn render_shows_where_the_certificates_will_be(
    #[case] request: CertificateRequest,
    #[case] expected: &[&str],
) {
    let secrets = rendered_secrets(&request);
    let names: Vec<_> = secrets
        .iter()
        .map(|secret| secret.metadata.name.clone().unwrap_or_default())
        .collect();
    assert_eq!(names, expected);
    assert!(secrets.iter().all(|secret| secret.data.is_none()));
}

/// A lifetime of minutes, as a rotation test uses: the certificate is kept until two
/// thirds of it, not renewed on every reconcile.
#[test]
fn a_short_lived_certificate_is_kept_until_two_thirds_into_its_lifetime() {
    let minute = Duration::from_secs(60);
    let mut request = request();
    request.lifetime = 5 * minute;
    let first = plan_certificates(&request, &StoredSecrets::default(), now()).expect("plan");
    let stored = stored_after(first, &StoredSecrets::default());
    let soon = plan_certificates(&request, &stored, now() + minute).expect("plan");
    assert!(soon.issued.is_empty(), "{:?}", soon.issued);
    let renew_in = soon.renew_in(now() + minute).expect("a renewal");
    assert!(
        (2 * minute..=3 * minute).contains(&renew_in),
        "{renew_in:?} after the first minute"
    );
    let later = plan_certificates(&request, &stored, now() + 4 * minute).expect("plan");
    assert_eq!(later.issued.len(), 1, "{:?}", later.issued);
}

/// Every pod carries every annotation: the rollout of each step is done.
fn all_rolled(_: &str, _: &str) -> bool {
    true
}

fn none_rolled(_: &str, _: &str) -> bool {
    false
}

fn plan_with(
    stored: &StoredSecrets,
    requested: Option<&str>,
    rolled: &dyn Fn(&str, &str) -> bool,
) -> Certificates {
    plan_rotating(
        &request(),
        stored,
        now(),
        &RotationInput { requested, rolled },
    )
    .expect("a plan")
}

fn ca_keys(stored: &StoredSecrets) -> Vec<String> {
    stored.0["zk-ca"].keys().cloned().collect()
}

fn pem_count(text: &str) -> usize {
    text.matches("BEGIN CERTIFICATE").count()
}

/// A whole rotation, one step per reconcile, each only once the pods rolled onto
/// the one before: both CAs trusted, then the new one signs, then the old one leaves.
#[test]
fn a_requested_ca_rotation_trusts_both_then_signs_with_the_new_then_retires_the_old() {
    let first = plan_certificates(&request(), &StoredSecrets::default(), now()).expect("a plan");
    let old_ca = first.ca_pem.clone();
    let stored = stored_after(first, &StoredSecrets::default());
    let old_server = server_certificate(&stored);

    // Nothing asked: nothing changes, and no pod template annotation.
    let steady = plan_with(&stored, None, &all_rolled);
    assert!(steady.pod_annotations.is_empty() && steady.issued.is_empty());

    // Asked: a next CA, trusted next to the old one; the old one still signs.
    let introduced = plan_with(&stored, Some("2026-11-28"), &none_rolled);
    assert_eq!(pem_count(&introduced.ca_pem), 2, "both CAs in the bundle");
    assert!(introduced.ca_pem.starts_with(&old_ca), "oldest first");
    let annotations: Vec<&str> = introduced
        .pod_annotations
        .iter()
        .map(|(key, _)| *key)
        .collect();
    assert_eq!(annotations, [rotation::TRUST_ANNOTATION]);
    assert!(
        introduced
            .issued
            .iter()
            .any(|note| note.contains("2026-11-28"))
    );
    let stored = stored_after(introduced, &stored);
    assert_eq!(
        ca_keys(&stored),
        [
            "ca.crt",
            "ca.key",
            "next-ca.crt",
            "next-ca.key",
            "rotated-for"
        ]
    );
    assert!(
        server_certificate(&stored)
            .issued_by(&old_ca)
            .expect("checked")
    );
    let server_pem =
        String::from_utf8_lossy(&stored.0["zk-server-default-tls"]["ca.crt"]).into_owned();
    assert_eq!(pem_count(&server_pem), 2, "the pods' bundle too");
    let next_ca = String::from_utf8_lossy(&stored.0["zk-ca"]["next-ca.crt"]).into_owned();

    // The pods have not rolled: the step waits, writing nothing.
    let waiting = plan_with(&stored, Some("2026-11-28"), &none_rolled);
    assert!(waiting.issued.is_empty());
    assert_eq!(stored_after(waiting, &stored), stored);

    // They have: the new CA signs, and every server certificate is issued again.
    let switched = plan_with(&stored, Some("2026-11-28"), &all_rolled);
    let stored = stored_after(switched, &stored);
    assert_eq!(
        ca_keys(&stored),
        ["ca.crt", "ca.key", "previous-ca.crt", "rotated-for"]
    );
    assert!(
        server_certificate(&stored)
            .issued_by(&next_ca)
            .expect("checked")
    );
    assert_ne!(server_certificate(&stored), old_server);

    // Every pod has a certificate of the new CA: the old one leaves the bundles.
    let retired = plan_with(&stored, Some("2026-11-28"), &all_rolled);
    assert!(retired.pod_annotations.is_empty());
    assert_eq!(retired.ca_pem, next_ca);
    let stored = stored_after(retired, &stored);
    assert_eq!(ca_keys(&stored), ["ca.crt", "ca.key", "rotated-for"]);
    let server_pem =
        String::from_utf8_lossy(&stored.0["zk-server-default-tls"]["ca.crt"]).into_owned();
    assert_eq!(server_pem, next_ca);

    // The same request again starts nothing.
    let done = plan_with(&stored, Some("2026-11-28"), &all_rolled);
    assert!(done.issued.is_empty() && done.pod_annotations.is_empty());
}

#[test]
fn no_ca_key_is_rendered_or_compared_during_a_rotation() {
    let first = plan_certificates(&request(), &StoredSecrets::default(), now()).expect("a plan");
    let stored = stored_after(first, &StoredSecrets::default());
    let introduced = plan_with(&stored, Some("now"), &none_rolled);
    assert!(!format!("{introduced:?}").contains("PRIVATE KEY"));
    let mut desired = DesiredObjects::new();
    introduced.push_into(&mut desired);
    for object in desired.into_objects(false).expect("erase") {
        assert!(
            !object
                .clone()
                .into_value()
                .to_string()
                .contains("PRIVATE KEY"),
            "{}",
            object.name()
        );
    }
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
        .collect()
}

/// A Secret of the request's name that another cluster or a user made is never read as
/// this cluster's: its CA key would sign this cluster's certificates.
#[rstest]
#[case::this_clusters(&[(NAME_LABEL, "trino"), (INSTANCE_LABEL, "data")], None)]
#[case::a_zookeeper_of_the_same_name(&[(NAME_LABEL, "zookeeper"), (INSTANCE_LABEL, "data")], Some("NameTakenByOtherProduct"))]
#[case::another_trino(&[(NAME_LABEL, "trino"), (INSTANCE_LABEL, "other")], Some("ObjectNotOwned"))]
#[case::a_users_unlabeled_secret(&[], Some("ObjectNotOwned"))]
fn a_secret_of_another_cluster_is_refused(
    #[case] secret_labels: &[(&str, &str)],
    #[case] reason: Option<&str>,
) {
    let own = labels(&[
        (NAME_LABEL, "trino"),
        (INSTANCE_LABEL, "data"),
        ("app.kubernetes.io/managed-by", "trino-operator"),
    ]);
    let error = not_this_clusters("data-ca", &labels(secret_labels), &own);
    assert_eq!(error.as_ref().map(ReconcileError::reason), reason);
    if let Some(error) = error {
        assert!(!error.is_transient());
        assert!(
            error.to_string().contains("Secret data-ca exists"),
            "{error}"
        );
    }
}
