//! CA rotation for real: the operator on the real control plane, three real ZooKeeper
//! 3.9.5 servers on the pod runner's node. The cluster's `strata.dev/rotate-ca`
//! annotation asks for a new CA. The operator trusts both CAs everywhere first, then
//! signs with the new one, then retires the old one, each step only once every pod
//! rolled onto the one before. Throughout, a client that reads the discovery
//! ConfigMap's CA afresh for each probe (as a client in the cluster rereads its
//! mounted file) asks every server over TLS every two seconds. A majority serves at
//! every probe but during each roll's one election, which must end within
//! [`LONGEST_ELECTION`]. At the end every server presents a certificate of the new
//! CA, and the old one is trusted nowhere.

#![allow(clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use strata_certificates::facts::CertificateFacts;
use zookeeper_operator::crd::ZookeeperCluster;

use crate::operated::{CLUSTER, NAMESPACE, Operated, wait_settled};
use crate::rotation::{current_certificate, probe};
use crate::tls::client_config;

const CA_SECRET: &str = "simple-zk-ca";
/// One election per roll, as in `rotation.rs`.
const LONGEST_ELECTION: Duration = Duration::from_secs(15);

/// The CA Secret's keys, and its signing CA.
async fn ca_secret(secrets: &Api<Secret>) -> Option<(Vec<String>, String)> {
    let data = secrets.get_opt(CA_SECRET).await.ok()??.data?;
    let ca = String::from_utf8_lossy(&data.get("ca.crt")?.0).into_owned();
    Some((data.into_keys().collect(), ca))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root, the control plane and the ZooKeeper image directory; run by cargo xtask test"]
async fn a_requested_ca_rotation_rolls_the_ensemble_through_both_cas_while_a_majority_serves() {
    let operated = Operated::start().await;
    let client = operated.client.clone();
    operated
        .create_cluster(json!({"servers": {"roleGroups": {"default": {"replicas": 3}}}}))
        .await;
    wait_settled(&client, 3, Duration::from_secs(300)).await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    let (_, old_ca) = ca_secret(&secrets).await.expect("the CA Secret");
    let config = client_config(&operated.discovery_ca().await, None);
    crate::rotation::wait_serving(&operated, &config).await;

    Api::<ZookeeperCluster>::namespaced(client.clone(), NAMESPACE)
        .patch(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"strata.dev/rotate-ca": "test-1"}}})),
        )
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let asked = Instant::now();
    let deadline = asked + Duration::from_secs(600);
    let (mut bundle_seen, mut without_majority, mut longest) =
        (false, None::<Instant>, Duration::ZERO);
    let mut rounds = 0_u32;
    let new_ca = loop {
        assert!(
            Instant::now() < deadline,
            "the rotation did not finish in time"
        );
        let discovery = operated.discovery_ca().await;
        bundle_seen |= discovery.matches("BEGIN CERTIFICATE").count() == 2;
        let config = client_config(&discovery, None);
        let current = current_certificate(&secrets).await;
        let found = probe(
            &operated,
            &config,
            current.as_ref().map(|(_, der)| der.as_slice()),
        )
        .await;
        if found.serving >= 2 {
            if let Some(since) = without_majority.take() {
                longest = longest.max(since.elapsed());
            }
        } else {
            let since = *without_majority.get_or_insert_with(Instant::now);
            assert!(
                since.elapsed() <= LONGEST_ELECTION,
                "only {} of 3 servers served for {:?}: {:?}",
                found.serving,
                since.elapsed(),
                found.failures
            );
        }
        let (keys, signing) = ca_secret(&secrets).await.expect("the CA Secret");
        rounds += 1;
        if rounds.is_multiple_of(10) {
            eprintln!(
                "{:?} after the request: CA Secret keys {keys:?}, {} CA(s) in discovery, \
                 {} serving, {} presenting the current certificate",
                asked.elapsed(),
                discovery.matches("BEGIN CERTIFICATE").count(),
                found.serving,
                found.presenting_current
            );
        }
        let retired = signing != old_ca
            && !keys
                .iter()
                .any(|key| key.starts_with("previous") || key.starts_with("next"));
        if retired && found.presenting_current == 3 && discovery == signing {
            break signing;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    };
    eprintln!(
        "the CA rotation took {:?}; without a serving majority for {longest:?} at most",
        asked.elapsed()
    );
    assert!(
        bundle_seen,
        "discovery published both CAs during the rotation"
    );
    let pem = secrets
        .get("simple-zk-server-default-tls")
        .await
        .ok()
        .and_then(|secret| secret.data?.get("tls.crt").cloned())
        .map(|bytes| String::from_utf8_lossy(&bytes.0).into_owned())
        .expect("a server certificate");
    let facts = CertificateFacts::read("server", &pem).expect("a certificate");
    assert!(facts.issued_by(&new_ca).expect("checked"));
    assert!(!facts.issued_by(&old_ca).expect("checked"));
    // The last step's roll (the old CA leaving the bundles) restarts every server once
    // more; beside the rest of the suite in CI it took over two minutes.
    wait_settled(&client, 3, Duration::from_secs(300)).await;
    operated.stop().await;
}
