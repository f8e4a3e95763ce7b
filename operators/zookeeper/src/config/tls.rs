//! The TLS part of `zoo.cfg`: the secure client port, and quorum TLS, both with the one
//! certificate of the role group's Secret (the operator's, or the user's).
//!
//! ZooKeeper reads a PEM keystore as one file holding the key (PKCS#8) and its
//! certificate chain, so an init container joins the Secret's `tls.key` and `tls.crt`
//! into [`KEYSTORE_FILE`] on an in-memory volume ([`keystore_script`]). Its type must be
//! named: ZooKeeper guesses it only from a `.pem` or `.jks` file name, and `ca.crt` is
//! neither. A PEM keystore has no password: ZooKeeper reads a non-empty one as the key's
//! encryption password.
//!
//! There is no plaintext client port: even bound to loopback, it would give whoever may
//! `kubectl port-forward` to the pod (the kubelet dials the pod's loopback) a session
//! past TLS and client authentication (security review, finding 3). The probes ask the
//! admin server instead, bound to `127.0.0.1` ([`ADMIN_ADDRESS`]), which answers `ruok`
//! and `srvr` and opens no session; its `snapshot` and `restore` commands, which would
//! send or replace the data through that same forward, are off. Quorum TLS checks only that a
//! peer's certificate chains to the quorum's trust store (ZooKeeper 3.9 runs in FIPS
//! mode by default, where it checks no peer host name on quorum links), and a quorum
//! peer is trusted with everything: the leader sends a learner a snapshot of every
//! znode, whatever its ACL, and runs the requests it forwards under the identities it
//! claims. So with the operator's certificates the quorum trusts the servers' CA alone,
//! and the client port also trusts the client CA that signs the ZNodes' certificates
//! ([`CLIENT_TRUSTSTORE_FILE`]): a ZNode's certificate is refused at the quorum port.
//! A user's Secret has one CA for both; whoever issues its client certificates decides
//! (`docs/zookeeper.md`). Netty serves the secure port; the default NIO factory refuses
//! TLS.

use super::zoo_cfg::ADMIN_SERVER_PORT;

/// The secure client port (the one clients use when TLS is on).
pub const SECURE_CLIENT_PORT: u16 = 2282;
/// Where the user's Secret is mounted.
pub const TLS_DIR: &str = "/tls";
/// Where the init container writes the keystore.
pub const KEYSTORE_DIR: &str = "/keystore";
/// The keystore: the Secret's key and certificate in one PEM file.
pub const KEYSTORE_FILE: &str = "/keystore/keystore.pem";
/// The servers' CA bundle, which peers are checked against (and clients, with a user's
/// Secret).
pub const TRUSTSTORE_FILE: &str = "/tls/ca.crt";
/// The client CA and the servers' CA bundle, which clients are checked against with the
/// operator's certificates (`strata_operator::certificates::CLIENT_CA_KEY`).
pub const CLIENT_TRUSTSTORE_FILE: &str = "/tls/client-ca.crt";
/// The server connection factory that serves TLS.
pub const NETTY_CONNECTION_FACTORY: &str = "org.apache.zookeeper.server.NettyServerCnxnFactory";
/// Where the admin server listens while TLS is on: inside the pod only, for the probes.
pub const ADMIN_ADDRESS: &str = "127.0.0.1";
/// The TLS versions clients may use. ZooKeeper 3.9's Netty server accepts only TLS 1.3
/// unless told otherwise, and the ZooKeeper 3.8 client (Hadoop 3.4's, which the HDFS
/// failover controllers run) speaks only TLS 1.2: proven on the real pair, where the
/// server refused it ("client supported protocol versions [TLSv1.2] are not accepted
/// by server preferences [TLSv1.3]"). TLS 1.2 with the AEAD cipher suites of
/// [`CLIENT_CIPHER_SUITES`] is still sound. The quorum keeps the default, TLS 1.3 alone,
/// whose suites are all AEAD: every server is 3.9.
pub const CLIENT_PROTOCOLS: &str = "TLSv1.3,TLSv1.2";

/// The cipher suites of the client port: TLS 1.3's, then TLS 1.2's with ECDHE and an
/// AEAD cipher, for ECDSA and RSA keys alike (the operator's certificates are ECDSA, a
/// user's may be RSA). Without the key ZooKeeper enables its own list, which adds
/// TLS 1.2's CBC suites with SHA-1 MACs (security review, finding 34). The Java 11 and
/// 17 clients (Hadoop's ZKFCs, Curator) all offer these.
pub const CLIENT_CIPHER_SUITES: [&str; 9] = [
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
];

/// TLS as the validated spec asks for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TlsSettings {
    /// Whether clients must present a certificate the CA signed.
    pub client_auth_required: bool,
    /// Whether the Secret keeps the client CA apart ([`CLIENT_TRUSTSTORE_FILE`]): the
    /// operator's certificates do, a user's Secret does not.
    pub separate_client_ca: bool,
}

impl TlsSettings {
    /// The `zoo.cfg` entries; the server lines then carry no client address, and no
    /// `clientPort` is set.
    pub fn entries(&self) -> Vec<(String, String)> {
        let client_auth = if self.client_auth_required {
            "need"
        } else {
            "none"
        };
        let mut entries = vec![
            (
                "serverCnxnFactory".to_owned(),
                NETTY_CONNECTION_FACTORY.to_owned(),
            ),
            (
                "secureClientPort".to_owned(),
                SECURE_CLIENT_PORT.to_string(),
            ),
            ("ssl.clientAuth".to_owned(), client_auth.to_owned()),
            (
                "ssl.enabledProtocols".to_owned(),
                CLIENT_PROTOCOLS.to_owned(),
            ),
            (
                "ssl.ciphersuites".to_owned(),
                CLIENT_CIPHER_SUITES.join(","),
            ),
            ("sslQuorum".to_owned(), "true".to_owned()),
            ("admin.enableServer".to_owned(), "true".to_owned()),
            ("admin.serverAddress".to_owned(), ADMIN_ADDRESS.to_owned()),
            ("admin.serverPort".to_owned(), ADMIN_SERVER_PORT.to_string()),
            ("admin.snapshot.enabled".to_owned(), "false".to_owned()),
            ("admin.restore.enabled".to_owned(), "false".to_owned()),
        ];
        let client_truststore = if self.separate_client_ca {
            CLIENT_TRUSTSTORE_FILE
        } else {
            TRUSTSTORE_FILE
        };
        for (prefix, truststore) in [("ssl", client_truststore), ("ssl.quorum", TRUSTSTORE_FILE)] {
            for (key, value) in [
                ("keyStore.location", KEYSTORE_FILE),
                ("keyStore.type", "PEM"),
                ("trustStore.location", truststore),
                ("trustStore.type", "PEM"),
            ] {
                entries.push((format!("{prefix}.{key}"), value.to_owned()));
            }
        }
        entries
    }
}

/// Joins the Secret's key and certificate into [`KEYSTORE_FILE`], readable by the
/// server's user alone.
pub fn keystore_script() -> String {
    format!("umask 077 && cat {TLS_DIR}/tls.key {TLS_DIR}/tls.crt > {KEYSTORE_FILE}")
}
