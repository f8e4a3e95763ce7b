//! Certificate renewal on the real control plane: with five-minute certificates, the
//! operator issues new ones two thirds into their lifetime, and the pods roll onto
//! them (the coordinator through its StatefulSet, the worker through its drain) while
//! a client keeps querying over HTTPS with the CA from discovery. Trino has one
//! coordinator, so its restart refuses queries for a while: the test measures that
//! window and bounds it.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::PostParams;
use serde_json::json;
use strata_operator::certificates::FINGERPRINT_ANNOTATION;
use strata_pod_runner::manifest::apply_all;
use strata_testing::control_plane::wait_until;
use trino_operator::crd::{TrinoCatalog, TrinoCluster};

use crate::operated::{Operated, pod_uids, wait_condition, wait_rolled_out};
use crate::support::{CLIENT_POD, NAMESPACE, client_plan, client_pod};

/// The coordinator's certificate Secret.
const COORDINATOR_TLS: &str = "simple-trino-coordinator-default-tls";

/// The fingerprint of the coordinator's certificate.
async fn fingerprint(secrets: &Api<Secret>) -> Option<String> {
    let secret = secrets.get_opt(COORDINATOR_TLS).await.ok()??;
    secret
        .metadata
        .annotations?
        .get(FINGERPRINT_ANNOTATION)
        .cloned()
}

/// One query from the client pod: whether it answered 25 rows. A refusal (the
/// coordinator restarting) is an answer here, not a failure.
async fn answers(operated: &Operated) -> bool {
    let plan = client_plan(
        &*operated.agent.runner().lock().await,
        &["query", "test", "SELECT count(*) FROM tpch.tiny.nation"],
    );
    let Ok(Some((0, output))) = plan.run(Duration::from_secs(60)).await else {
        return false;
    };
    let last = output.lines().last().unwrap_or_default();
    serde_json::from_str::<serde_json::Value>(last)
        .is_ok_and(|answer| answer["rows"] == json!([[25]]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root, the control plane and the Trino image directory; run by cargo xtask test"]
async fn five_minute_certificates_are_renewed_and_the_pods_roll_onto_them() {
    let operated = Operated::start().await;
    let client = operated.client.clone();
    let clusters: Api<TrinoCluster> = Api::namespaced(client.clone(), NAMESPACE);
    let catalogs: Api<TrinoCatalog> = Api::namespaced(client.clone(), NAMESPACE);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    let cluster: TrinoCluster = serde_json::from_value(json!({
        "apiVersion": "trino.strata.dev/v1alpha1",
        "kind": "TrinoCluster",
        "metadata": {"name": "simple-trino", "namespace": NAMESPACE},
        "spec": {
            "clusterConfig": {
                "catalogLabelSelector": {"matchLabels": {"trino": "simple-trino"}},
                "tls": {"certificateLifetime": "5m"}
            },
            "coordinators": {
                "config": {"resources": {"memory": {"limit": "1280Mi"}}},
                "roleGroups": {"default": {"replicas": 1}}
            },
            "workers": {
                "config": {"resources": {"memory": {"limit": "1280Mi"}}, "shutdownGracePeriod": "5s"},
                "roleGroups": {"default": {"replicas": 1}}
            }
        }
    }))
    .expect("a TrinoCluster");
    let tpch: TrinoCatalog = serde_json::from_value(json!({
        "apiVersion": "trino.strata.dev/v1alpha1",
        "kind": "TrinoCatalog",
        "metadata": {"name": "tpch", "namespace": NAMESPACE, "labels": {"trino": "simple-trino"}},
        "spec": {"connector": {"tpch": {}}}
    }))
    .expect("a TrinoCatalog");
    catalogs
        .create(&PostParams::default(), &tpch)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    clusters
        .create(&PostParams::default(), &cluster)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let created = Instant::now();
    wait_rolled_out(&client, Duration::from_secs(300)).await;
    wait_condition(&clusters, "Available", "True", Duration::from_secs(60)).await;
    let runner = operated.agent.runner();
    apply_all(&mut *runner.lock().await, &[client_pod(&[])])
        .unwrap_or_else(|error| panic!("{error}"));
    runner
        .lock()
        .await
        .wait_ready(NAMESPACE, &[CLIENT_POD], Duration::from_secs(60))
        .await
        .unwrap_or_else(|report| panic!("{report}"));
    assert!(
        answers(&operated).await,
        "the cluster answers before the renewal"
    );
    let first = fingerprint(&secrets)
        .await
        .expect("the coordinator's certificate");
    let before = pod_uids(&client).await;

    // Two thirds of five minutes after issuance: a new certificate.
    let renewed = wait_until(
        "a renewed coordinator certificate",
        Duration::from_secs(330),
        async || fingerprint(&secrets).await.filter(|now| *now != first),
    )
    .await;
    let renewed_after = created.elapsed();
    eprintln!("the certificates were renewed {renewed_after:?} after the cluster's creation");

    // The pods roll onto it while the client keeps asking.
    let rolling = Instant::now();
    let (mut asked, mut refused) = (0_u32, Vec::new());
    loop {
        let now = pod_uids(&client).await;
        let all_new = !now.is_empty()
            && before
                .iter()
                .all(|(pod, (uid, _))| now.get(pod).is_some_and(|(new, _)| new != uid));
        if all_new {
            break;
        }
        assert!(
            rolling.elapsed() < Duration::from_secs(300),
            "not every pod restarted onto the new certificate: {now:?}"
        );
        asked += 1;
        if !answers(&operated).await {
            refused.push(rolling.elapsed().as_secs());
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    wait_rolled_out(&client, Duration::from_secs(300)).await;
    let window = refused
        .last()
        .zip(refused.first())
        .map(|(last, first)| last - first);
    eprintln!(
        "the renewal's roll took {:?}; {} of {asked} queries were refused, from {:?} s to {:?} s",
        rolling.elapsed(),
        refused.len(),
        refused.first(),
        refused.last()
    );
    let after = pod_uids(&client).await;
    assert_eq!(after.len(), before.len(), "{after:?}");
    assert_eq!(fingerprint(&secrets).await, Some(renewed));
    assert!(
        window.is_none_or(|seconds| seconds <= 120),
        "queries were refused for more than two minutes: {refused:?}"
    );
    wait_until(
        "the cluster answers on its new certificates",
        Duration::from_secs(120),
        async || answers(&operated).await.then_some(()),
    )
    .await;
    operated.stop().await;
}
