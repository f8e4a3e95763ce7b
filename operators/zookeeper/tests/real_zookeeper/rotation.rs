//! Certificate rotation for real: the operator on the real control plane, three real
//! ZooKeeper 3.9.5 servers on the pod runner's node, certificates valid for five
//! minutes. Two thirds in, the operator issues a new certificate from the same CA, the
//! pod templates change with its fingerprint, and the planner restarts the servers one
//! at a time, leader last. Throughout, a client that trusts the discovery ConfigMap's
//! CA asks every server over TLS every two seconds: a majority serves at every probe,
//! and at the end every server presents the new certificate.

#![allow(clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::PostParams;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde_json::json;
use strata_operator::certificates::FINGERPRINT_ANNOTATION;
use zookeeper_operator::crd::ZookeeperCluster;

use crate::operated::{CLUSTER, NAMESPACE, Operated, server_fqdn, wait_settled};
use crate::tls::{client_config, exchange_over_tls, mode};

const SERVER_SECRET: &str = "simple-zk-server-default-tls";

/// The fingerprint the operator's server Secret carries, and its certificate (DER).
async fn current_certificate(secrets: &Api<Secret>) -> Option<(String, Vec<u8>)> {
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
    let cluster: ZookeeperCluster = serde_json::from_value(json!({
        "apiVersion": "zookeeper.strata.dev/v1alpha1",
        "kind": "ZookeeperCluster",
        "metadata": {"name": CLUSTER, "namespace": NAMESPACE},
        "spec": {
            "clusterConfig": {"tls": {"certificateLifetime": "5m"}},
            "servers": {"roleGroups": {"default": {"replicas": 3}}}
        }
    }))
    .expect("a ZookeeperCluster");
    Api::<ZookeeperCluster>::namespaced(client.clone(), NAMESPACE)
        .create(&PostParams::default(), &cluster)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let started = Instant::now();
    wait_settled(&client, 3, Duration::from_secs(300)).await;
    eprintln!("three TLS servers Available after {:?}", started.elapsed());

    let secrets: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    let (first_fingerprint, _) = current_certificate(&secrets)
        .await
        .expect("the operator's server certificate");
    let ca = Api::<ConfigMap>::namespaced(client.clone(), NAMESPACE)
        .get(CLUSTER)
        .await
        .ok()
        .and_then(|config_map| config_map.data?.get("ca.crt").cloned())
        .expect("the CA in the discovery ConfigMap");
    let config = client_config(&ca, None);

    // Probe until the certificate is renewed and every server presents it.
    let deadline = Instant::now() + Duration::from_secs(480);
    let mut fewest_serving = 3;
    let mut renewed_after = None;
    loop {
        assert!(
            Instant::now() < deadline,
            "no renewal rolled through the ensemble in time"
        );
        let current = current_certificate(&secrets).await;
        let mut serving = 0;
        let mut presenting_current = 0;
        for ordinal in 0..3 {
            let fqdn = server_fqdn(ordinal);
            let Some(address) = operated.forwarded.port(&fqdn, 2282) else {
                continue;
            };
            let address = address.parse().expect("a socket address");
            let config = config.clone();
            let answer = tokio::task::spawn_blocking(move || {
                exchange_over_tls(config, &fqdn, address, "srvr")
            })
            .await
            .expect("the probe ran");
            if let Ok((answer, presented)) = answer
                && mode(&answer).is_some()
            {
                serving += 1;
                if current.as_ref().is_some_and(|(_, der)| *der == presented) {
                    presenting_current += 1;
                }
            }
        }
        fewest_serving = fewest_serving.min(serving);
        assert!(
            serving >= 2,
            "only {serving} of 3 servers served during the rotation"
        );
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
         certificate {:?} after it; at least {fewest_serving} of 3 served at every probe",
        started.elapsed()
    );
    wait_settled(&client, 3, Duration::from_secs(120)).await;
    operated.stop().await;
}
