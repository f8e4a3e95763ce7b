//! Certificate rotation for real: the operator on the real control plane, three real
//! ZooKeeper 3.9.5 servers on the pod runner's node, certificates valid for five
//! minutes. Two thirds in, the operator issues a new certificate from the same CA, the
//! pod templates change with its fingerprint, and the planner restarts the servers one
//! at a time, leader last. Throughout, a client that trusts the discovery ConfigMap's
//! CA asks every server over TLS every two seconds. A majority serves at every probe
//! but during the one leader election the leader's restart causes (ZooKeeper has no
//! leadership handover; the first run of this test caught both followers "not currently
//! serving requests" while the leader restarted), which must end within
//! [`LONGEST_ELECTION`], well inside a client session's timeout. At the end every
//! server presents the new certificate.

#![allow(clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde_json::json;
use strata_operator::certificates::FINGERPRINT_ANNOTATION;
use strata_testing::control_plane::wait_until;

use crate::operated::{NAMESPACE, Operated, server_fqdn, wait_settled};
use strata_testing::tls::four_letter_word;

use crate::tls::{client_config, mode};

const SERVER_SECRET: &str = "simple-zk-server-default-tls";

/// The longest a majority may not serve: the election after the leader's restart. A
/// client's session outlives it (ZooKeeper's default session timeouts are 4 to 40 s).
const LONGEST_ELECTION: Duration = Duration::from_secs(15);

/// The fingerprint the operator's server Secret carries, and its certificate (DER).
pub(crate) async fn current_certificate(secrets: &Api<Secret>) -> Option<(String, Vec<u8>)> {
    let secret = secrets.get_opt(SERVER_SECRET).await.ok()??;
    let fingerprint = secret
        .metadata
        .annotations
        .as_ref()?
        .get(FINGERPRINT_ANNOTATION)?
        .clone();
    let pem = secret.data?.get("tls.crt")?.0.clone();
    let der = CertificateDer::from_pem_slice(&pem).ok()?;
    Some((fingerprint, der.as_ref().to_vec()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root, the control plane and the ZooKeeper image directory; run by cargo xtask test"]
async fn certificates_are_renewed_and_the_ensemble_rolls_onto_them_while_a_majority_serves() {
    let operated = Operated::start().await;
    let client = operated.client.clone();
    operated
        .create_cluster(json!({
            "clusterConfig": {"tls": {"certificateLifetime": "5m"}},
            "servers": {"roleGroups": {"default": {"replicas": 3}}}
        }))
        .await;
    let started = Instant::now();
    wait_settled(&client, 3, Duration::from_secs(300)).await;
    eprintln!("three TLS servers Available after {:?}", started.elapsed());

    let secrets: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    let (first_fingerprint, _) = current_certificate(&secrets)
        .await
        .expect("the operator's server certificate");
    let config = client_config(&operated.discovery_ca().await, None);
    wait_serving(&operated, &config).await;

    // Probe until the certificate is renewed and every server presents it.
    let deadline = Instant::now() + Duration::from_secs(480);
    let mut fewest_serving = 3;
    let mut renewed_after = None;
    let mut without_majority: Option<Instant> = None;
    let mut longest_without_majority = Duration::ZERO;
    loop {
        assert!(
            Instant::now() < deadline,
            "no renewal rolled through the ensemble in time"
        );
        let current = current_certificate(&secrets).await;
        let Probe {
            serving,
            presenting_current,
            failures,
        } = probe(
            &operated,
            &config,
            current.as_ref().map(|(_, der)| der.as_slice()),
        )
        .await;
        fewest_serving = fewest_serving.min(serving);
        if serving >= 2 {
            // From the first probe without a majority to the first with one again.
            if let Some(since) = without_majority.take() {
                longest_without_majority = longest_without_majority.max(since.elapsed());
            }
        } else {
            let since = *without_majority.get_or_insert_with(Instant::now);
            longest_without_majority = longest_without_majority.max(since.elapsed());
            assert!(
                since.elapsed() <= LONGEST_ELECTION,
                "only {serving} of 3 servers served for {:?}: {failures:?}",
                since.elapsed()
            );
        }
        let renewed = current
            .as_ref()
            .is_some_and(|(fingerprint, _)| *fingerprint != first_fingerprint);
        if renewed && renewed_after.is_none() {
            renewed_after = Some(started.elapsed());
        }
        if renewed && presenting_current == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    eprintln!(
        "renewed {renewed_after:?} after the cluster's creation; every server on the new \
         certificate at {:?}; at least {fewest_serving} of 3 served at every probe; \
         without a serving majority for {longest_without_majority:?} at most",
        started.elapsed()
    );
    wait_settled(&client, 3, Duration::from_secs(120)).await;
    operated.stop().await;
}

/// What one round of probes found.
pub(crate) struct Probe {
    pub(crate) serving: usize,
    pub(crate) presenting_current: usize,
    pub(crate) failures: Vec<String>,
}

/// Waits until every server serves over TLS: Available counts Ready pods, and the
/// node's forwards and a busy host may lag behind.
pub(crate) async fn wait_serving(operated: &Operated, config: &Arc<rustls::ClientConfig>) {
    wait_until(
        "every server serving over TLS",
        Duration::from_secs(120),
        async || (probe(operated, config, None).await.serving == 3).then_some(()),
    )
    .await;
}

/// `srvr` over TLS to every server through the node's forwards, checking each server's
/// name; how many serve, and how many present `current` (DER).
pub(crate) async fn probe(
    operated: &Operated,
    config: &Arc<rustls::ClientConfig>,
    current: Option<&[u8]>,
) -> Probe {
    let mut found = Probe {
        serving: 0,
        presenting_current: 0,
        failures: Vec::new(),
    };
    for ordinal in 0..3 {
        let fqdn = server_fqdn(ordinal);
        let Some(address) = operated.forwarded.port(&fqdn, 2282) else {
            found.failures.push(format!("{fqdn}: not forwarded"));
            continue;
        };
        let address = address.parse().expect("a socket address");
        let config = config.clone();
        let answer =
            tokio::task::spawn_blocking(move || four_letter_word(config, &fqdn, address, "srvr"))
                .await
                .expect("the probe ran");
        match answer {
            Ok((answer, presented)) if mode(&answer).is_some() => {
                found.serving += 1;
                if current == Some(presented.as_slice()) {
                    found.presenting_current += 1;
                }
            }
            Ok((answer, _)) => found.failures.push(format!("server {ordinal}: {answer}")),
            Err(error) => found.failures.push(format!("server {ordinal}: {error}")),
        }
    }
    found
}
