//! Security review, finding 10, on the real control plane: the cluster's CA outlives the
//! cluster through the real garbage collector, and a CA Secret deleted under running
//! servers is not replaced by a CA they do not trust.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use strata_certificates::facts::CertificateFacts;
use strata_testing::control_plane::{ControlPlaneOptions, wait_until};
use strata_testing::manifests::secret_text;
use zookeeper_operator::crd::ZookeeperCluster;

use crate::{Cluster, TIMEOUT, condition, event_with_reason, zookeeper_cluster};

const CA_SECRET: &str = "simple-ca";
const SERVER_SECRET: &str = "simple-server-default-tls";

/// The Secret `name`'s key `key`, `None` while either is missing.
async fn secret_key(secrets: &Api<Secret>, name: &str, key: &str) -> Option<String> {
    let secret = secrets.get_opt(name).await.ok()??;
    secret_text(&secret, key)
}

// Multi-threaded: `kubectl` blocks this thread while the operator runs on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane (STRATA_CONTROL_PLANE_BIN); run by cargo xtask test"]
async fn the_ca_outlives_its_cluster_and_is_never_replaced_under_the_certificates_it_signed() {
    let cluster = Cluster::start(ControlPlaneOptions::default()).await;
    let _operator = cluster.run_operator().await;
    let Cluster {
        control_plane,
        client,
    } = &cluster;
    let clusters: Api<ZookeeperCluster> = Api::namespaced(client.clone(), "default");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    clusters
        .create(&PostParams::default(), &zookeeper_cluster("simple", 1))
        .await
        .expect("the cluster is created");
    let server_pem = wait_until("the server certificate", TIMEOUT, async || {
        secret_key(&secrets, SERVER_SECRET, "tls.crt").await
    })
    .await;
    let ca = secrets.get(CA_SECRET).await.expect("the CA Secret");
    assert!(
        ca.metadata
            .owner_references
            .as_ref()
            .is_none_or(|owners| owners.iter().all(|owner| owner.controller != Some(true))),
        "no owner the garbage collector follows: {:?}",
        ca.metadata.owner_references
    );

    // Deleted under the server certificate it signed: refused, and nothing re-issued.
    secrets
        .delete(CA_SECRET, &DeleteParams::default())
        .await
        .expect("the CA Secret is deleted");
    wait_until("Degraded with CaSecretMissing", TIMEOUT, async || {
        let degraded = condition(control_plane, "Degraded");
        (degraded["reason"] == "CaSecretMissing").then_some(())
    })
    .await;
    event_with_reason(client, "simple", "CaSecretMissing").await;
    assert!(
        secrets.get_opt(CA_SECRET).await.expect("a read").is_none(),
        "no new CA was made"
    );
    assert_eq!(
        secret_key(&secrets, SERVER_SECRET, "tls.crt").await,
        Some(server_pem.clone()),
        "the server certificate stays"
    );

    // Restored from a backup: the cluster recovers.
    let restored = Secret {
        metadata: ObjectMeta {
            name: Some(CA_SECRET.to_owned()),
            labels: ca.metadata.labels.clone(),
            ..ObjectMeta::default()
        },
        data: ca.data.clone(),
        type_: ca.type_.clone(),
        ..Secret::default()
    };
    secrets
        .create(&PostParams::default(), &restored)
        .await
        .expect("the CA Secret is restored");
    wait_until(
        "Degraded no more with CaSecretMissing",
        TIMEOUT,
        async || {
            let degraded = condition(control_plane, "Degraded");
            (degraded["reason"] != "CaSecretMissing").then_some(())
        },
    )
    .await;
    let kept = secrets.get(CA_SECRET).await.expect("the CA Secret");

    // The cluster deleted: the real garbage collector takes its workload and its server
    // certificate, and leaves the CA.
    clusters
        .delete("simple", &DeleteParams::foreground())
        .await
        .expect("the cluster is deleted");
    wait_until("the garbage collector done", TIMEOUT, async || {
        let sets = Api::<StatefulSet>::namespaced(client.clone(), "default");
        let gone = sets.get_opt("simple-server-default").await.ok()?.is_none()
            && secrets.get_opt(SERVER_SECRET).await.ok()?.is_none()
            && clusters.get_opt("simple").await.ok()?.is_none();
        gone.then_some(())
    })
    .await;
    let outlived = secrets
        .get_opt(CA_SECRET)
        .await
        .expect("a read")
        .expect("the CA outlives its cluster");
    assert_eq!(outlived.metadata.uid, kept.metadata.uid);

    // Created again: the CA is adopted, and signs the new server certificate.
    clusters
        .create(&PostParams::default(), &zookeeper_cluster("simple", 1))
        .await
        .expect("the cluster is created again");
    let reissued = wait_until("a new server certificate", TIMEOUT, async || {
        secret_key(&secrets, SERVER_SECRET, "tls.crt").await
    })
    .await;
    let ca_pem = secret_text(&outlived, "ca.crt").expect("the CA's certificate");
    let facts = CertificateFacts::read("the server's", &reissued).expect("a certificate");
    assert!(
        facts.issued_by(&ca_pem).expect("a check"),
        "signed by the CA the clients trust"
    );
    let adopted = secrets.get(CA_SECRET).await.expect("the CA Secret");
    assert_eq!(
        adopted.metadata.uid, kept.metadata.uid,
        "adopted, not replaced"
    );
    assert_eq!(secret_text(&adopted, "ca.crt"), Some(ca_pem));
}
