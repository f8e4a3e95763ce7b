//! How the namenodes' ZKFCs reach ZooKeeper: the connection string, and TLS when the ZNode
//! discovery ConfigMap says the ensemble serves it (`ZOOKEEPER_TLS: "true"`, as the
//! Strata ZooKeeper operator publishes by default, with the CA under `ca.crt`).
//!
//! Hadoop 3.4's ZKFC turns TLS on with `dfs.ha.zkfc.client.ssl.enabled` (scoped to the
//! ZKFC, where `hadoop.zk.ssl.enabled` would also switch the other Hadoop ZooKeeper
//! clients) and passes the `hadoop.zk.ssl.*` stores to its ZooKeeper 3.8.4 client
//! (`SecurityUtil.setSslConfiguration`), which checks the server's name against the
//! connection string's host names.
//! - The truststore is the discovery ConfigMap's `ca.crt`, mounted as `ca.pem`: the
//!   client infers the store's type from the file name, and reads PEM.
//! - Hadoop refuses to start without a keystore and both passwords, even where the
//!   servers ask for no client certificate. The keystore is a PKCS#12 store the operator
//!   makes once ([`fill_client_keystore`]) with a key of its own, signed by nobody the
//!   ensemble trusts: it only satisfies Hadoop. The passwords are not secrets (a PEM
//!   truststore has none, and the keystore authenticates nobody), so they are constants
//!   in `core-site.xml`.
//! - An ensemble that requires client certificates gets the ZNode's own: the Strata
//!   ZooKeeper operator issues one per ZNode with the cluster's CA and names its
//!   Secret in the discovery ConfigMap (`ZOOKEEPER_CLIENT_SECRET`). Its `keystore.p12`
//!   uses the same password, and replaces the operator's keystore in the pods.
//! - Only then: the ZooKeeper operator issues that certificate whatever the ensemble
//!   checks, and renews it every two thirds of its lifetime. Its version is in the
//!   namenodes' rolling hash, since the ZKFCs read it at start, so mounting it for an
//!   ensemble that ignores it would fail the active namenode over at every renewal for
//!   nothing (security review, finding 7). The discovery ConfigMap says what the
//!   ensemble checks (`ZOOKEEPER_CLIENT_AUTHENTICATION`); one that does not say, as an
//!   older ZooKeeper operator's, is taken as requiring the certificate it names, as
//!   before that key existed.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use strata_certificates::authority::{CertificateAuthority, Validity};
use strata_certificates::keystore::keystore;

/// The discovery key with the connection string: hosts and chroot.
pub const ZOOKEEPER_KEY: &str = "ZOOKEEPER";
/// The discovery key that says the ensemble serves clients over TLS.
pub const ZOOKEEPER_TLS_KEY: &str = "ZOOKEEPER_TLS";
/// The discovery key with the CA certificate the ensemble's certificates lead to.
pub const CA_KEY: &str = "ca.crt";
/// The discovery key naming the ZNode's client certificate Secret (its `keystore.p12`
/// is a PKCS#12 store with [`STORE_PASSWORD`], as the ZooKeeper operator writes it).
pub const ZOOKEEPER_CLIENT_SECRET_KEY: &str = "ZOOKEEPER_CLIENT_SECRET";
/// The discovery key that says whether the ensemble checks client certificates:
/// `Required` or `None`.
pub const ZOOKEEPER_CLIENT_AUTHENTICATION_KEY: &str = "ZOOKEEPER_CLIENT_AUTHENTICATION";
/// The [`ZOOKEEPER_CLIENT_AUTHENTICATION_KEY`] of an ensemble that checks none.
pub const NO_CLIENT_AUTHENTICATION: &str = "None";

/// Where the CA is mounted, and its file.
pub const CA_DIR: &str = "/strata/zookeeper-ca";
/// The truststore: `ca.crt` of the discovery ConfigMap, under a name that says PEM.
pub const TRUSTSTORE_FILE: &str = "ca.pem";
/// Where the client keystore is mounted.
pub const KEYSTORE_DIR: &str = "/strata/zookeeper-client";
/// The client keystore's key in its Secret, and its file name.
pub const KEYSTORE_FILE: &str = "keystore.p12";
/// The stores' password: Hadoop requires one, and it protects nothing (see the module).
pub const STORE_PASSWORD: &str = "strata-zookeeper-client";

/// How the ZKFCs connect, as the discovery ConfigMap says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZookeeperConnection {
    /// `ha.zookeeper.quorum`: hosts and chroot.
    pub quorum: String,
    /// Whether the ensemble serves clients over TLS only.
    pub tls: bool,
    /// The discovery ConfigMap, whose `ca.crt` the namenodes mount with TLS.
    pub config_map: String,
    /// The ZNode's client certificate Secret (`ZOOKEEPER_CLIENT_SECRET`), whose
    /// `keystore.p12` the ZKFCs present, for an ensemble that requires client
    /// certificates alone; otherwise the operator's own keystore that satisfies Hadoop.
    pub client_secret: Option<String>,
}

impl ZookeeperConnection {
    /// A plaintext connection to `quorum`.
    pub fn plaintext(quorum: &str) -> Self {
        Self {
            quorum: quorum.to_owned(),
            tls: false,
            config_map: String::new(),
            client_secret: None,
        }
    }
}

/// Why a discovery ConfigMap cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DiscoveryProblem {
    /// No connection string.
    #[error("it has no {ZOOKEEPER_KEY} key; name the discovery ConfigMap of a ZookeeperZnode")]
    NoQuorum,
    /// TLS without the CA to trust.
    #[error(
        "it says {ZOOKEEPER_TLS_KEY}=true but has no {CA_KEY}: the ZKFCs could not check the \
         servers' certificates"
    )]
    NoCa,
}

/// The connection the ZNode discovery ConfigMap `name` describes.
pub fn connection_of(
    name: &str,
    config_map: &ConfigMap,
) -> Result<ZookeeperConnection, DiscoveryProblem> {
    let empty = BTreeMap::new();
    let data = config_map.data.as_ref().unwrap_or(&empty);
    let quorum = data
        .get(ZOOKEEPER_KEY)
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
        .ok_or(DiscoveryProblem::NoQuorum)?;
    let tls = data.get(ZOOKEEPER_TLS_KEY).map(String::as_str) == Some("true");
    if tls && data.get(CA_KEY).is_none_or(|ca| ca.trim().is_empty()) {
        return Err(DiscoveryProblem::NoCa);
    }
    let checks_client_certificates = data
        .get(ZOOKEEPER_CLIENT_AUTHENTICATION_KEY)
        .is_none_or(|value| value.trim() != NO_CLIENT_AUTHENTICATION);
    let client_secret = data
        .get(ZOOKEEPER_CLIENT_SECRET_KEY)
        .filter(|_| tls && checks_client_certificates)
        .map(|secret| secret.trim().to_owned())
        .filter(|secret| !secret.is_empty());
    Ok(ZookeeperConnection {
        quorum,
        tls,
        config_map: name.to_owned(),
        client_secret,
    })
}

/// The discovery ConfigMap's `ca.crt` while it holds more than one CA: the ZooKeeper
/// operator is rotating its CA. The ZKFCs read their truststore at start, so each
/// change of the bundle during a rotation must roll the namenodes; a bundle of one CA
/// (outside rotations) rolls nothing, as before rotations existed.
pub fn rotating_ca_bundle(config_map: &ConfigMap) -> Option<String> {
    let bundle = config_map.data.as_ref()?.get(CA_KEY)?;
    (bundle.matches("BEGIN CERTIFICATE").count() > 1).then(|| bundle.clone())
}

/// The namenodes' `core-site.xml` properties for TLS to ZooKeeper.
pub fn core_properties() -> BTreeMap<String, String> {
    [
        (
            "hadoop.zk.ssl.keystore.location",
            format!("{KEYSTORE_DIR}/{KEYSTORE_FILE}"),
        ),
        ("hadoop.zk.ssl.keystore.password", STORE_PASSWORD.to_owned()),
        (
            "hadoop.zk.ssl.truststore.location",
            format!("{CA_DIR}/{TRUSTSTORE_FILE}"),
        ),
        (
            "hadoop.zk.ssl.truststore.password",
            STORE_PASSWORD.to_owned(),
        ),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_owned(), value))
    .collect()
}

/// The namenodes' `hdfs-site.xml` property that turns TLS on for the ZKFC alone.
pub const ZKFC_TLS_PROPERTY: &str = "dfs.ha.zkfc.client.ssl.enabled";

/// How long the client keystore's certificate is valid: it authenticates nobody, so its
/// end only has to be far away.
const KEYSTORE_LIFETIME: Duration = Duration::from_secs(100 * 365 * 86_400);

/// Makes the client keystore, once, just before its Secret is created.
pub fn fill_client_keystore(secret: &mut Secret) -> Result<(), String> {
    let now = SystemTime::now();
    let validity = Validity::starting(now, KEYSTORE_LIFETIME);
    let authority =
        CertificateAuthority::create("zkfc client", validity).map_err(|error| error.to_string())?;
    let certificate = authority
        .issue(&["zkfc".to_owned()], validity)
        .map_err(|error| error.to_string())?;
    let store = keystore(&certificate, authority.certificate_pem(), STORE_PASSWORD)
        .map_err(|error| error.to_string())?;
    secret.data = Some(BTreeMap::from([(
        KEYSTORE_FILE.to_owned(),
        ByteString(store),
    )]));
    Ok(())
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn discovery(data: &[(&str, &str)]) -> ConfigMap {
        ConfigMap {
            data: Some(
                data.iter()
                    .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
                    .collect(),
            ),
            ..ConfigMap::default()
        }
    }

    #[rstest]
    #[case::plaintext(
        &[("ZOOKEEPER", "zk:2181/znode-1")],
        Ok(ZookeeperConnection { quorum: "zk:2181/znode-1".to_owned(), tls: false, config_map: "hdfs-znode".to_owned(), client_secret: None })
    )]
    #[case::tls_with_its_ca(
        &[("ZOOKEEPER", "zk:2282/znode-1"), ("ZOOKEEPER_TLS", "true"), ("ca.crt", "-----BEGIN CERTIFICATE-----")],
        Ok(ZookeeperConnection { quorum: "zk:2282/znode-1".to_owned(), tls: true, config_map: "hdfs-znode".to_owned(), client_secret: None })
    )]
    #[case::tls_with_a_client_certificate(
        &[("ZOOKEEPER", "zk:2282/znode-1"), ("ZOOKEEPER_TLS", "true"), ("ca.crt", "-----BEGIN CERTIFICATE-----"),
          ("ZOOKEEPER_CLIENT_SECRET", "hdfs-znode-client-tls")],
        Ok(ZookeeperConnection { quorum: "zk:2282/znode-1".to_owned(), tls: true, config_map: "hdfs-znode".to_owned(),
            client_secret: Some("hdfs-znode-client-tls".to_owned()) })
    )]
    #[case::tls_with_a_client_certificate_the_ensemble_requires(
        &[("ZOOKEEPER", "zk:2282/znode-1"), ("ZOOKEEPER_TLS", "true"), ("ca.crt", "-----BEGIN CERTIFICATE-----"),
          ("ZOOKEEPER_CLIENT_SECRET", "hdfs-znode-client-tls"), ("ZOOKEEPER_CLIENT_AUTHENTICATION", "Required")],
        Ok(ZookeeperConnection { quorum: "zk:2282/znode-1".to_owned(), tls: true, config_map: "hdfs-znode".to_owned(),
            client_secret: Some("hdfs-znode-client-tls".to_owned()) })
    )]
    #[case::tls_with_a_client_certificate_the_ensemble_ignores(
        &[("ZOOKEEPER", "zk:2282/znode-1"), ("ZOOKEEPER_TLS", "true"), ("ca.crt", "-----BEGIN CERTIFICATE-----"),
          ("ZOOKEEPER_CLIENT_SECRET", "hdfs-znode-client-tls"), ("ZOOKEEPER_CLIENT_AUTHENTICATION", "None")],
        Ok(ZookeeperConnection { quorum: "zk:2282/znode-1".to_owned(), tls: true, config_map: "hdfs-znode".to_owned(), client_secret: None })
    )]
    #[case::tls_without_a_ca(&[("ZOOKEEPER", "zk:2282/znode-1"), ("ZOOKEEPER_TLS", "true")], Err(DiscoveryProblem::NoCa))]
    #[case::no_quorum(&[("ZOOKEEPER_TLS", "true")], Err(DiscoveryProblem::NoQuorum))]
    fn the_discovery_config_map_says_how_to_connect(
        #[case] data: &[(&str, &str)],
        #[case] expected: Result<ZookeeperConnection, DiscoveryProblem>,
    ) {
        assert_eq!(connection_of("hdfs-znode", &discovery(data)), expected);
    }

    #[rstest]
    #[case::one_ca(&[("ca.crt", "-----BEGIN CERTIFICATE-----\nA\n")], false)]
    #[case::two_cas_during_a_rotation(
        &[("ca.crt", "-----BEGIN CERTIFICATE-----\nA\n-----BEGIN CERTIFICATE-----\nB\n")],
        true
    )]
    #[case::no_ca(&[("ZOOKEEPER", "zk:2181/znode-1")], false)]
    fn only_a_bundle_of_two_cas_is_a_rotation(
        #[case] data: &[(&str, &str)],
        #[case] rotating: bool,
    ) {
        assert_eq!(rotating_ca_bundle(&discovery(data)).is_some(), rotating);
    }

    #[test]
    fn the_client_keystore_is_a_pkcs12_store_hadoop_can_open() -> Result<(), String> {
        let mut secret = Secret::default();
        fill_client_keystore(&mut secret)?;
        let store = secret
            .data
            .and_then(|mut data| data.remove(KEYSTORE_FILE))
            .ok_or("no keystore")?;
        let parsed = p12_keystore::KeyStore::from_pkcs12(&store.0, STORE_PASSWORD)
            .map_err(|error| error.to_string())?;
        assert_eq!(parsed.entries().count(), 1);
        Ok(())
    }
}
