//! The TLS part of `zoo.cfg`: the secure client port, and quorum TLS, both with the one
//! certificate of the user's Secret.
//!
//! ZooKeeper reads a PEM keystore as one file holding the key (PKCS#8) and its
//! certificate chain, so an init container joins the Secret's `tls.key` and `tls.crt`
//! into [`KEYSTORE_FILE`] on an in-memory volume ([`keystore_script`]). Its type must be
//! named: ZooKeeper guesses it only from a `.pem` or `.jks` file name, and `ca.crt` is
//! neither. A PEM keystore has no password: ZooKeeper reads a non-empty one as the key's
//! encryption password.
//!
//! The plaintext client port stays, bound to `127.0.0.1` (`clientPortAddress`): the
//! probes ask it, and nothing outside the pod reaches it. Quorum TLS checks that a peer's certificate
//! chains to the CA (ZooKeeper 3.9 runs in FIPS mode by default, where it checks no
//! peer host name on quorum links). Netty serves the secure port; the default NIO
//! factory refuses TLS.

/// The secure client port (the one clients use when TLS is on).
pub const SECURE_CLIENT_PORT: u16 = 2282;
/// Where the user's Secret is mounted.
pub const TLS_DIR: &str = "/tls";
/// Where the init container writes the keystore.
pub const KEYSTORE_DIR: &str = "/keystore";
/// The keystore: the Secret's key and certificate in one PEM file.
pub const KEYSTORE_FILE: &str = "/keystore/keystore.pem";
/// The CA certificate clients and peers are checked against.
pub const TRUSTSTORE_FILE: &str = "/tls/ca.crt";
/// The server connection factory that serves TLS.
pub const NETTY_CONNECTION_FACTORY: &str = "org.apache.zookeeper.server.NettyServerCnxnFactory";
/// Where the plaintext client port listens while TLS is on: inside the pod only.
pub const LOOPBACK: &str = "127.0.0.1";
/// The TLS versions clients may use. ZooKeeper 3.9's Netty server accepts only TLS 1.3
/// unless told otherwise, and the ZooKeeper 3.8 client (Hadoop 3.4's, which the HDFS
/// failover controllers run) speaks only TLS 1.2: proven on the real pair, where the
/// server refused it ("client supported protocol versions [TLSv1.2] are not accepted
/// by server preferences [TLSv1.3]"). TLS 1.2 with ZooKeeper's AEAD cipher suites is
/// still sound. The quorum keeps the default: every server is 3.9.
pub const CLIENT_PROTOCOLS: &str = "TLSv1.3,TLSv1.2";

/// TLS as the validated spec asks for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TlsSettings {
    /// Whether clients must present a certificate the CA signed.
    pub client_auth_required: bool,
}

impl TlsSettings {
    /// The `zoo.cfg` entries; the server lines then carry no client address.
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
            ("clientPortAddress".to_owned(), LOOPBACK.to_owned()),
            (
                "secureClientPort".to_owned(),
                SECURE_CLIENT_PORT.to_string(),
            ),
            ("ssl.clientAuth".to_owned(), client_auth.to_owned()),
            (
                "ssl.enabledProtocols".to_owned(),
                CLIENT_PROTOCOLS.to_owned(),
            ),
            ("sslQuorum".to_owned(), "true".to_owned()),
        ];
        for prefix in ["ssl", "ssl.quorum"] {
            for (key, value) in [
                ("keyStore.location", KEYSTORE_FILE),
                ("keyStore.type", "PEM"),
                ("trustStore.location", TRUSTSTORE_FILE),
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
