//! TLS as a new cluster gets it by default, on real ZooKeeper 3.9.5 through the pod
//! runner: the certificate step's own CA and per-role-group certificates (made here by
//! the same pure functions the controller runs, from no stored Secret), the pods as
//! rendered.
//! - the quorum forms over TLS, and a client that trusts the CA is served on the secure
//!   port under a pod's FQDN and under the client Service's name, both checked against
//!   the certificate's names;
//! - the leader lookup finds the one leader on the metrics port, the same server `srvr`
//!   over TLS calls the leader.

#![allow(clippy::expect_used, clippy::panic)]

use std::time::Duration;

use serde_json::{Value, json};
use strata_pod_runner::manifest::apply_all;
use zookeeper_operator::controller::leader::find_leader;

use crate::support::issued_secrets;
use crate::support::pods::{NAMESPACE, pod_address, pod_runner};
use crate::tls::{client_config, in_pod, mode, srvr_over_tls};

const SECURE_PORT: u16 = 2282;
const METRICS_PORT: u16 = 7000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the ZooKeeper image directory (STRATA_ZOOKEEPER_IMAGE); run by cargo xtask test"]
async fn a_new_cluster_serves_tls_with_the_operators_certificates_and_its_leader_is_found() {
    let name = "auto-zk";
    let cluster = json!({
        "apiVersion": "zookeeper.strata.dev/v1alpha1",
        "kind": "ZookeeperCluster",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"servers": {"roleGroups": {"default": {"replicas": 3}}}},
    });
    let (secrets, ca_pem) = issued_secrets(&cluster);
    let mut runner = pod_runner().unwrap_or_else(|error| panic!("{error}"));
    for secret in secrets {
        runner
            .apply_secret(secret)
            .unwrap_or_else(|error| panic!("{error}"));
    }
    let rendered = zookeeper_operator::render::render(std::slice::from_ref(&cluster))
        .unwrap_or_else(|error| panic!("{error}"))
        .objects;
    let (shells, objects): (Vec<Value>, Vec<Value>) = rendered
        .into_iter()
        .partition(|object| object["kind"] == "Secret");
    assert_eq!(
        shells.len(),
        3,
        "the CA, the client CA and the role group's certificate"
    );
    assert!(
        shells
            .iter()
            .all(|secret| secret.get("data").is_none() && secret.get("stringData").is_none()),
        "render names the Secrets and shows no value: {shells:?}"
    );
    apply_all(&mut runner, &objects).unwrap_or_else(|error| panic!("{error}"));
    let pods: Vec<String> = (0..3)
        .map(|ordinal| format!("{name}-server-default-{ordinal}"))
        .collect();
    let names: Vec<&str> = pods.iter().map(String::as_str).collect();
    runner
        .wait_ready(NAMESPACE, &names, Duration::from_secs(180))
        .await
        .unwrap_or_else(|report| panic!("{report}"));

    // Each server answers under its own FQDN (the wildcard) and the client Service's.
    let mut leaders_by_srvr = Vec::new();
    for (ordinal, pod) in pods.iter().enumerate() {
        let secure = pod_address(&runner, pod, SECURE_PORT).expect("the pod's address");
        for server_name in [
            format!("{pod}.{name}-server-default.{NAMESPACE}.svc.cluster.local"),
            format!("{name}.{NAMESPACE}.svc.cluster.local"),
        ] {
            let config = client_config(&ca_pem, None);
            let answer = in_pod(&runner, &pods[(ordinal + 1) % 3], move || {
                srvr_over_tls(config, &server_name, secure)
            })
            .unwrap_or_else(|error| panic!("srvr over TLS to {pod}: {error}"));
            assert!(answer.contains("Zookeeper version: 3.9.5"), "{answer}");
            if mode(&answer) == Some("leader") {
                leaders_by_srvr.push(u32::try_from(ordinal + 1).expect("a small id"));
            }
        }
    }
    leaders_by_srvr.dedup();
    assert_eq!(leaders_by_srvr.len(), 1, "one leader: {leaders_by_srvr:?}");

    let mut metrics = Vec::new();
    for (ordinal, pod) in pods.iter().enumerate() {
        let local = runner
            .forward(NAMESPACE, pod, METRICS_PORT)
            .await
            .unwrap_or_else(|error| panic!("{error}"));
        metrics.push((
            u32::try_from(ordinal + 1).expect("a small id"),
            local.to_string(),
        ));
    }
    let leader = find_leader(metrics, Duration::from_secs(2)).await;
    assert_eq!(
        leader,
        leaders_by_srvr.first().copied(),
        "the metrics port names the leader srvr names"
    );
    runner.stop_all().await;
}
