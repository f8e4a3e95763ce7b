//! `clusterConfig.tls` on real ZooKeeper 3.9.5 servers through the pod runner, exactly as
//! rendered, with a Secret as cert-manager writes it (`tls.crt`, a PKCS#8 `tls.key`,
//! `ca.crt`; here from `strata-certificates`):
//! - the quorum forms over TLS (`sslQuorum`: the servers talk to each other only through
//!   TLS), and every server is Ready through the admin server on its pod's loopback;
//! - from another pod, a client that trusts the CA gets an answer on the secure port,
//!   checking the server's name; plaintext is refused on both ports; a client that trusts
//!   another CA fails its handshake; a TLS 1.2 client offering only CBC suites is
//!   refused; a port-forward, which reaches the pod's loopback, gets no session and no
//!   snapshot;
//! - with `clientAuthentication: Required`, a client without a certificate is refused,
//!   and one with a certificate the CA signed is served: the ZNode controller's client
//!   among them, creating a znode over mutual TLS with the server's name checked (an IP
//!   SAN of the loopback forward it connects through, since the test machine resolves
//!   no cluster name);
//! - a certificate for `serverAuth` only (cert-manager's common `usages: [server
//!   auth]`) never forms a quorum: the JDK refuses it to a peer connecting as a TLS
//!   client. The operator's check refuses that Secret before anything is applied.

#![allow(clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rstest::rstest;
use serde_json::{Value, json};
use strata_certificates::authority::{CertificateAuthority, Validity};
use strata_certificates::facts::KeyPurpose;
use strata_certificates::user::{Requirements, check_user_certificate};
use strata_pod_runner::manifest::apply_all;
use strata_pod_runner::runner::PodRunner;
use strata_testing::tls::four_letter_word;

use zookeeper_operator::znode_client::{ClientTls, ZnodeClient};

use crate::support::pods::{NAMESPACE, pod_address, pod_runner};

const SECURE_PORT: u16 = 2282;
const PLAIN_PORT: u16 = 2181;
const ADMIN_PORT: u16 = 8080;
const SECRET: &str = "zk-tls";
const TIMEOUT: Duration = Duration::from_secs(5);

fn validity() -> Validity {
    Validity::starting(SystemTime::now(), Duration::from_secs(24 * 3600))
}

/// The cluster `name` with `servers` servers and TLS from [`SECRET`].
fn cluster(name: &str, servers: u16, client_authentication: &str) -> Value {
    json!({
        "apiVersion": "zookeeper.strata.dev/v1alpha1",
        "kind": "ZookeeperCluster",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "clusterConfig": {"tls": {
                "enabled": true,
                "secretName": SECRET,
                "clientAuthentication": client_authentication,
            }},
            "servers": {"roleGroups": {"default": {"replicas": servers}}},
        },
    })
}

/// The pods' FQDNs and the client Service's names: what a client may connect to.
fn server_names(name: &str, servers: u16) -> Vec<String> {
    let set = format!("{name}-server-default");
    (0..servers)
        .map(|ordinal| format!("{set}-{ordinal}.{set}.{NAMESPACE}.svc.cluster.local"))
        .chain([
            format!("{name}.{NAMESPACE}.svc.cluster.local"),
            format!("{name}.{NAMESPACE}.svc"),
            name.to_owned(),
        ])
        .collect()
}

/// The Secret as cert-manager writes it.
fn tls_secret(ca: &CertificateAuthority, names: &[String]) -> Secret {
    tls_secret_for(ca, names, &[KeyPurpose::ServerAuth, KeyPurpose::ClientAuth])
}

/// The same, for a certificate whose extended key usage is `purposes` only.
fn tls_secret_for(ca: &CertificateAuthority, names: &[String], purposes: &[KeyPurpose]) -> Secret {
    let issued = ca
        .issue_for(names, validity(), purposes)
        .expect("a server certificate");
    let data = [
        ("tls.crt", issued.certificate_pem()),
        ("tls.key", issued.key_pem()),
        ("ca.crt", ca.certificate_pem()),
    ]
    .map(|(key, value)| (key.to_owned(), ByteString(value.as_bytes().to_vec())))
    .into_iter()
    .collect();
    Secret {
        metadata: ObjectMeta {
            name: Some(SECRET.to_owned()),
            namespace: Some(NAMESPACE.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(data),
        type_: Some("kubernetes.io/tls".to_owned()),
        ..Secret::default()
    }
}

/// A TLS client trusting `ca_pem`, with `identity` (certificate and key PEM) if given.
pub(crate) fn client_config(
    ca_pem: &str,
    identity: Option<(&str, &str)>,
) -> Arc<rustls::ClientConfig> {
    strata_testing::tls::client_config(ca_pem, identity).unwrap_or_else(|error| panic!("{error}"))
}

/// `srvr` over TLS to `address`, checking the server's certificate for `name`.
pub(crate) fn srvr_over_tls(
    config: Arc<rustls::ClientConfig>,
    name: &str,
    address: SocketAddr,
) -> Result<String, String> {
    word_over_tls(config, name, address, "srvr")
}

/// A four-letter word over TLS, as [`srvr_over_tls`] sends `srvr`.
pub(crate) fn word_over_tls(
    config: Arc<rustls::ClientConfig>,
    name: &str,
    address: SocketAddr,
    word: &str,
) -> Result<String, String> {
    four_letter_word(config, name, address, word).map(|(answer, _)| answer)
}

/// `srvr` in plaintext: the answer, or why there is none.
fn srvr_in_plaintext(address: SocketAddr) -> Result<String, String> {
    let mut socket =
        TcpStream::connect_timeout(&address, TIMEOUT).map_err(|error| error.to_string())?;
    socket
        .set_read_timeout(Some(TIMEOUT))
        .map_err(|error| error.to_string())?;
    socket
        .write_all(b"srvr")
        .map_err(|error| error.to_string())?;
    let mut answer = String::new();
    socket
        .read_to_string(&mut answer)
        .map_err(|error| error.to_string())?;
    Ok(answer)
}

/// Runs `work` on a thread inside `pod`'s network.
pub(crate) fn in_pod<T: Send + 'static>(
    runner: &PodRunner,
    pod: &str,
    work: impl FnOnce() -> T + Send + 'static,
) -> T {
    runner
        .in_pod(NAMESPACE, pod, work)
        .unwrap_or_else(|error| panic!("{error}"))
}

/// Renders `cluster` with the Secret and runs it until every server is Ready.
async fn start(cluster: &Value, secret: Secret, pods: &[String]) -> PodRunner {
    let runner = apply(cluster, secret);
    let names: Vec<&str> = pods.iter().map(String::as_str).collect();
    runner
        .wait_ready(NAMESPACE, &names, Duration::from_secs(180))
        .await
        .unwrap_or_else(|report| panic!("{report}"));
    runner
}

/// Renders `cluster` with the Secret and starts its pods.
fn apply(cluster: &Value, secret: Secret) -> PodRunner {
    let mut runner = pod_runner().unwrap_or_else(|error| panic!("{error}"));
    runner
        .apply_secret(secret)
        .unwrap_or_else(|error| panic!("{error}"));
    let objects = zookeeper_operator::render::render(std::slice::from_ref(cluster))
        .unwrap_or_else(|error| panic!("{error}"))
        .objects;
    assert!(
        !objects.iter().any(|object| object["kind"] == "Secret"),
        "render shows where the key is, never a key"
    );
    apply_all(&mut runner, &objects).unwrap_or_else(|error| panic!("{error}"));
    runner
}

pub(crate) fn mode(answer: &str) -> Option<&str> {
    answer.lines().find_map(|line| line.strip_prefix("Mode: "))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the ZooKeeper image directory (STRATA_ZOOKEEPER_IMAGE); run by cargo xtask test"]
async fn a_three_server_ensemble_forms_its_quorum_over_tls_and_serves_clients_that_trust_its_ca() {
    let name = "tls-zk";
    let ca = CertificateAuthority::create("tls-zk CA", validity()).expect("a CA");
    let pods: Vec<String> = (0..3)
        .map(|i| format!("{name}-server-default-{i}"))
        .collect();
    let mut runner = start(
        &cluster(name, 3, "None"),
        tls_secret(&ca, &server_names(name, 3)),
        &pods,
    )
    .await;

    // Ready means each server answered `srvr` with a mode through the admin server on
    // its pod's loopback: the quorum formed, and quorum TLS is the only way it could.
    let (client, server) = (&pods[0], &pods[2]);
    let fqdn = server_names(name, 3)[2].clone();
    let secure = pod_address(&runner, server, SECURE_PORT).expect("the pod\'s address");
    let plain = pod_address(&runner, server, PLAIN_PORT).expect("the pod\'s address");
    let trusting = client_config(ca.certificate_pem(), None);
    let answer = in_pod(&runner, client, move || {
        srvr_over_tls(trusting, &fqdn, secure)
    })
    .unwrap_or_else(|error| panic!("srvr over TLS to {server}: {error}"));
    assert!(answer.contains("Zookeeper version: 3.9.5"), "{answer}");
    assert!(
        matches!(mode(&answer), Some("leader" | "follower")),
        "{answer}"
    );

    // The membership ZooKeeper publishes (`conf`, `/zookeeper/config`) names no
    // loopback client address, which clients that follow the ensemble would take.
    let trusting = client_config(ca.certificate_pem(), None);
    let fqdn = server_names(name, 3)[2].clone();
    let conf = in_pod(&runner, client, move || {
        word_over_tls(trusting, &fqdn, secure, "conf")
    })
    .unwrap_or_else(|error| panic!("conf over TLS to {server}: {error}"));
    let members: Vec<&str> = conf
        .lines()
        .filter(|line| line.starts_with("server."))
        .collect();
    assert_eq!(members.len(), 3, "{conf}");
    assert!(
        members.iter().all(|line| !line.contains("127.0.0.1")),
        "{members:?}"
    );

    let refused_plain = in_pod(&runner, client, move || srvr_in_plaintext(plain));
    assert!(
        refused_plain
            .as_ref()
            .is_err_and(|error| error.contains("refused")),
        "the plaintext port answered another pod: {refused_plain:?}"
    );
    let plain_on_secure = in_pod(&runner, client, move || srvr_in_plaintext(secure));
    assert!(
        plain_on_secure
            .as_ref()
            .map_or(true, |answer| mode(answer).is_none()),
        "the secure port answered plaintext: {plain_on_secure:?}"
    );

    let stranger = CertificateAuthority::create("another CA", validity()).expect("a CA");
    let distrusting = client_config(stranger.certificate_pem(), None);
    let fqdn = server_names(name, 3)[2].clone();
    let untrusted = in_pod(&runner, client, move || {
        srvr_over_tls(distrusting, &fqdn, secure)
    });
    eprintln!(
        "plaintext on 2181: {refused_plain:?}; plaintext on 2282: {plain_on_secure:?}; \
         another CA: {untrusted:?}"
    );
    assert!(
        untrusted
            .as_ref()
            .is_err_and(|error| error.contains("certificate")),
        "a client that trusts another CA got {untrusted:?}"
    );

    // Security review, finding 34: TLS 1.2 on the client port takes AEAD suites only.
    // A client offering nothing but CBC suites with SHA-1 MACs is refused; one offering
    // an AEAD suite is served (OpenSSL's own client, from another pod).
    let handshake = |ciphers: &'static str| {
        in_pod(&runner, client, move || {
            std::process::Command::new("openssl")
                .args(["s_client", "-connect", &secure.to_string(), "-tls1_2"])
                .args(["-cipher", ciphers, "-brief"])
                .stdin(std::process::Stdio::null())
                .output()
                .map(|output| {
                    (
                        output.status.success(),
                        String::from_utf8_lossy(&output.stderr).into_owned(),
                    )
                })
                .unwrap_or_else(|error| panic!("openssl: {error}"))
        })
    };
    let (cbc_served, cbc) = handshake("ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA");
    let (aead_served, aead) = handshake("ECDHE-ECDSA-AES128-GCM-SHA256");
    eprintln!("TLS 1.2 with CBC and SHA-1: {cbc:?}; with AES-GCM: {aead:?}");
    assert!(!cbc_served, "a CBC suite with SHA-1 was negotiated: {cbc}");
    assert!(
        aead_served && aead.contains("ECDHE-ECDSA-AES128-GCM-SHA256"),
        "the AEAD suite was refused: {aead}"
    );

    // Security review, finding 3: `kubectl port-forward` reaches the pod's own
    // loopback. No plaintext client port listens there, so it gets no ZooKeeper
    // session; the admin server there answers the probes' `srvr`, and sends no
    // snapshot of the data.
    let forwarded = runner
        .port_forward(NAMESPACE, server, PLAIN_PORT)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let session = ZnodeClient::connect(&forwarded.to_string(), TIMEOUT).await;
    assert!(
        session.is_err(),
        "a port-forward to {PLAIN_PORT} got a ZooKeeper session"
    );
    let admin = runner
        .port_forward(NAMESPACE, server, ADMIN_PORT)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let ask = |path: &'static str| {
        tokio::task::spawn_blocking(move || {
            strata_testing::http::request(&admin.to_string(), "GET", path, &[], None)
                .unwrap_or_else(|error| panic!("{error}"))
        })
    };
    let srvr = ask("/commands/srvr").await.expect("the request ends");
    assert_eq!(srvr.status, 200, "{}", srvr.body);
    assert!(srvr.body.contains("\"server_state\""), "{}", srvr.body);
    let snapshot = ask("/commands/snapshot").await.expect("the request ends");
    eprintln!(
        "through a port-forward: {PLAIN_PORT} {session:?}; the admin server's snapshot {} {:?}",
        snapshot.status, snapshot.body
    );
    assert!(
        snapshot.status >= 400 && snapshot.body.len() < 1024,
        "the admin server sent a snapshot: {} ({} bytes)",
        snapshot.status,
        snapshot.body.len()
    );
    runner.stop_all().await;
}

#[rstest]
#[case::without_a_certificate(false)]
#[case::with_a_certificate_the_ca_signed(true)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the ZooKeeper image directory (STRATA_ZOOKEEPER_IMAGE); run by cargo xtask test"]
async fn with_client_authentication_required_only_clients_with_a_certificate_are_served(
    #[case] presents_a_certificate: bool,
) {
    let name = if presents_a_certificate {
        "mtls-zk"
    } else {
        "mtls-refusing-zk"
    };
    let ca = CertificateAuthority::create("mtls CA", validity()).expect("a CA");
    let pods = vec![format!("{name}-server-default-0")];
    let mut names = server_names(name, 1);
    names.push("127.0.0.1".to_owned());
    let mut runner = start(
        &cluster(name, 1, "Required"),
        tls_secret(&ca, &names),
        &pods,
    )
    .await;
    let client_certificate = ca
        .issue(&["a-client".to_owned()], validity())
        .expect("a client certificate");
    let identity = presents_a_certificate.then(|| {
        (
            client_certificate.certificate_pem().to_owned(),
            client_certificate.key_pem().to_owned(),
        )
    });
    let config = client_config(
        ca.certificate_pem(),
        identity
            .as_ref()
            .map(|(certificate, key)| (certificate.as_str(), key.as_str())),
    );
    let fqdn = server_names(name, 1)[0].clone();
    let secure = pod_address(&runner, &pods[0], SECURE_PORT).expect("the pod\'s address");
    let answer = in_pod(&runner, &pods[0], move || {
        srvr_over_tls(config, &fqdn, secure)
    });
    if presents_a_certificate {
        let answer = answer.unwrap_or_else(|error| panic!("a client with a certificate: {error}"));
        assert_eq!(mode(&answer), Some("standalone"), "{answer}");
        let local = runner
            .forward(NAMESPACE, &pods[0], SECURE_PORT)
            .await
            .unwrap_or_else(|error| panic!("{error}"));
        let tls = ClientTls {
            ca_pem: ca.certificate_pem().to_owned(),
            certificate_pem: client_certificate.certificate_pem().to_owned(),
            key_pem: client_certificate.key_pem().to_owned(),
        };
        let client = ZnodeClient::connect_secure(&local.to_string(), TIMEOUT, &tls)
            .await
            .unwrap_or_else(|error| panic!("the ZNode client over mutual TLS: {error}"));
        client
            .ensure_path("/over-mtls/a")
            .await
            .unwrap_or_else(|error| panic!("{error}"));
        assert!(client.exists("/over-mtls/a").await.expect("an answer"));
    } else {
        eprintln!("without a certificate: {answer:?}");
        assert!(
            answer.as_ref().is_err_and(|error| error.contains("alert")),
            "a client without a certificate was not refused in the handshake: {answer:?}"
        );
    }
    runner.stop_all().await;
}

/// Security review, finding 11: a certificate every other check takes, but whose
/// extended key usage allows `serverAuth` only, on two real servers. Each peer connects
/// to the other's quorum port as a TLS client with it, the JDK refuses it for want of
/// `clientAuth`, and no server ever serves. The operator's check names the cause.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the ZooKeeper image directory (STRATA_ZOOKEEPER_IMAGE); run by cargo xtask test"]
async fn a_certificate_only_for_server_auth_forms_no_quorum_and_is_refused_by_the_operator() {
    let name = "eku-zk";
    let ca = CertificateAuthority::create("eku CA", validity()).expect("a CA");
    let secret = tls_secret_for(&ca, &server_names(name, 2), &[KeyPurpose::ServerAuth]);
    let data = secret
        .data
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|(key, value)| (key, value.0))
        .collect();
    let required = Requirements {
        names: server_names(name, 2),
        external_names: Vec::new(),
        purposes: vec![KeyPurpose::ServerAuth, KeyPurpose::ClientAuth],
    };
    let refused = check_user_certificate(&data, &required, SystemTime::now())
        .expect_err("the operator takes a serverAuth-only certificate");
    assert_eq!(refused.reason(), "TlsKeyUsageMissing", "{refused}");

    let mut runner = apply(&cluster(name, 2, "None"), secret);
    let pods: Vec<String> = (0..2)
        .map(|i| format!("{name}-server-default-{i}"))
        .collect();
    // The peer that checks the certificate refuses it after the client's Finished
    // (TLS 1.3), so the connecting side sees the `certificate_unknown` alert, or its
    // socket closed under the quorum's challenge, again at every retry.
    let logs = |runner: &PodRunner| -> String {
        pods.iter()
            .filter_map(|pod| runner.log(NAMESPACE, pod, "zookeeper", 0))
            .filter_map(|path| std::fs::read_to_string(path).ok())
            .collect()
    };
    let refused = |log: &str| {
        log.contains("certificate_unknown")
            || log
                .matches("Exception reading or writing challenge")
                .count()
                >= 4
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !refused(&logs(&runner)) {
        assert!(
            std::time::Instant::now() < deadline,
            "no server refused the other's certificate:\n{}",
            logs(&runner)
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    for pod in &pods {
        let secure = pod_address(&runner, pod, SECURE_PORT).expect("the pod's address");
        let trusting = client_config(ca.certificate_pem(), None);
        let fqdn = format!("{pod}.{name}-server-default.{NAMESPACE}.svc.cluster.local");
        let answer = in_pod(&runner, pod, move || srvr_over_tls(trusting, &fqdn, secure));
        assert!(
            answer
                .as_ref()
                .map_or(true, |answer| mode(answer).is_none()),
            "{pod} serves without a quorum: {answer:?}"
        );
    }
    runner.stop_all().await;
}
