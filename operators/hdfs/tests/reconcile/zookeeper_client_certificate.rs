//! The ZNode's client certificate reaches the namenodes only where the ensemble checks
//! it (security review, finding 7). The ZooKeeper operator renews it two thirds into
//! its lifetime whatever `clientAuthentication` says, and the ZKFCs read it at start,
//! so each renewal the namenodes mount rolls them, the active one's restart a failover.

use k8s_openapi::api::apps::v1::StatefulSet;
use pretty_assertions::{assert_eq, assert_ne};
use rstest::rstest;
use serde_json::json;
use strata_model::build::REFERENCES_HASH_ANNOTATION;
use strata_testing::manifests::{create_secret, patch_secret};
use strata_testing::wait::eventually;

use crate::{QUORUM, create_cluster, publish_znode_with, spec, start};

/// The namenodes' StatefulSet.
const NAMENODES: &str = "simple-hdfs-namenode-default";
/// The Secret the ZooKeeper operator issues for the ZNode.
const ZNODE_CLIENT_SECRET: &str = "hdfs-znode-client-tls";

/// The namenodes' pod template: its references hash, and the Secret its ZooKeeper
/// keystore volume mounts.
fn namenode_template(harness: &strata_testing::Harness) -> Option<(Option<String>, String)> {
    let namenodes = harness
        .server
        .get_typed::<StatefulSet>(harness.namespace, NAMENODES)?;
    let template = namenodes.spec.template;
    let hash = template
        .metadata
        .and_then(|metadata| metadata.annotations)
        .and_then(|annotations| annotations.get(REFERENCES_HASH_ANNOTATION).cloned());
    let keystore = template
        .spec?
        .volumes?
        .into_iter()
        .find(|volume| volume.name == "zookeeper-client")?
        .secret?
        .secret_name?;
    Some((hash, keystore))
}

#[rstest]
#[case::the_ensemble_requires_client_certificates("Required", ZNODE_CLIENT_SECRET, true)]
#[case::the_ensemble_checks_none("None", "simple-hdfs-zookeeper-client", false)]
#[tokio::test]
async fn a_renewed_znode_certificate_rolls_the_namenodes_only_where_the_ensemble_checks_it(
    #[case] client_authentication: &str,
    #[case] mounted_keystore: &str,
    #[case] renewal_rolls: bool,
) {
    let harness = start();
    create_secret(&harness, ZNODE_CLIENT_SECRET, &[("keystore.p12", "first")]).await;
    publish_znode_with(
        &harness,
        QUORUM,
        json!({
            "ZOOKEEPER_TLS": "true",
            "ca.crt": "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n",
            "ZOOKEEPER_CLIENT_SECRET": ZNODE_CLIENT_SECRET,
            "ZOOKEEPER_CLIENT_AUTHENTICATION": client_authentication,
        }),
    )
    .await;
    create_cluster(&harness, spec(json!({}))).await;
    let (first_hash, keystore) = eventually(
        "the namenodes' StatefulSet",
        || namenode_template(&harness),
        || {
            harness
                .server
                .get_typed::<StatefulSet>(harness.namespace, NAMENODES)
        },
    )
    .await;
    assert_eq!(keystore, mounted_keystore, "the ZKFCs' keystore");
    harness.settle().await;

    patch_secret(
        &harness,
        ZNODE_CLIENT_SECRET,
        &[("keystore.p12", "renewed")],
    )
    .await;
    if renewal_rolls {
        eventually(
            "a new references hash on the namenodes' template",
            || {
                namenode_template(&harness)
                    .filter(|(hash, _)| *hash != first_hash)
                    .map(|_| ())
            },
            || namenode_template(&harness),
        )
        .await;
        assert_ne!(first_hash, None, "the certificate's version is hashed");
    } else {
        harness.settle().await;
        assert_eq!(
            namenode_template(&harness),
            Some((first_hash, keystore)),
            "nothing the namenodes read changed"
        );
    }
}
