//! PKCS#12 stores for the JVM products (ZooKeeper, Hadoop, Trino): a keystore with a
//! server certificate, its key and its CA, and a truststore with CAs only. Written with
//! PBES2 (AES-256) and an HMAC-SHA256 integrity check, as Java's own `keytool` writes
//! them. The password is not a secret of its own (Hadoop refuses an empty one, and the
//! store lives in the same Secret as the PEM key): it only satisfies the readers.

use p12_keystore::{Certificate, KeyStore, KeyStoreEntry, PrivateKeyChain};
use rcgen::KeyPair;
use x509_parser::pem::parse_x509_pem;

use crate::CertificateError;
use crate::authority::IssuedCertificate;

/// The alias of the server's entry in a keystore.
pub const SERVER_ALIAS: &str = "server";

/// A keystore holding `certificate`, its key and the chain up to `ca_pem`.
pub fn keystore(
    certificate: &IssuedCertificate,
    ca_pem: &str,
    password: &str,
) -> Result<Vec<u8>, CertificateError> {
    let failed = |reason: String| CertificateError::Keystore {
        store: "keystore",
        reason,
    };
    let key = KeyPair::from_pem(certificate.key_pem())
        .map_err(|error| failed(format!("the key: {error}")))?;
    let chain = [
        der_certificate("server", certificate.certificate_pem())?,
        der_certificate("of the CA", ca_pem)?,
    ];
    let mut store = KeyStore::new();
    store.add_entry(
        SERVER_ALIAS,
        KeyStoreEntry::PrivateKeyChain(PrivateKeyChain::new(
            key.serialize_der(),
            SERVER_ALIAS.as_bytes(),
            chain,
        )),
    );
    store
        .writer(password)
        .write()
        .map_err(|error| failed(error.to_string()))
}

/// A truststore holding every CA of `ca_pems` (two while a CA is being replaced), each
/// as a trusted certificate entry `ca-<n>`.
pub fn truststore(ca_pems: &[&str], password: &str) -> Result<Vec<u8>, CertificateError> {
    let mut store = KeyStore::new();
    for (index, pem) in ca_pems.iter().enumerate() {
        store.add_entry(
            &format!("ca-{index}"),
            KeyStoreEntry::Certificate(der_certificate("of a CA", pem)?),
        );
    }
    store
        .writer(password)
        .write()
        .map_err(|error| CertificateError::Keystore {
            store: "truststore",
            reason: error.to_string(),
        })
}

fn der_certificate(what: &str, pem: &str) -> Result<Certificate, CertificateError> {
    let refused = |reason: String| CertificateError::Read {
        what: what.to_owned(),
        reason,
    };
    let (_, block) =
        parse_x509_pem(pem.as_bytes()).map_err(|error| refused(format!("no PEM: {error}")))?;
    Certificate::from_der(&block.contents).map_err(|error| refused(error.to_string()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use std::path::PathBuf;
    use std::process::Command;
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::authority::{CertificateAuthority, Validity};

    /// Java's own `keytool` lists what the stores hold: the JVM products read them.
    #[test]
    #[ignore = "needs the JDK of cargo xtask tools (STRATA_JAVA); run by cargo xtask test"]
    fn java_reads_the_keystore_and_the_truststore() {
        let java = PathBuf::from(
            std::env::var_os(strata_testing::tools::JAVA).expect("STRATA_JAVA is set"),
        );
        let keytool = java.with_file_name("keytool");
        let validity = Validity::starting(SystemTime::now(), Duration::from_secs(86_400));
        let ca = CertificateAuthority::create("simple-zk", validity).unwrap();
        let next_ca = CertificateAuthority::create("simple-zk-next", validity).unwrap();
        let server = ca
            .issue(&["zk-0.zk.ns.svc.cluster.local".to_owned()], validity)
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let stores = [
            (
                "keystore.p12",
                keystore(&server, ca.certificate_pem(), "changeit").unwrap(),
            ),
            (
                "truststore.p12",
                truststore(
                    &[ca.certificate_pem(), next_ca.certificate_pem()],
                    "changeit",
                )
                .unwrap(),
            ),
        ];
        let mut listings = Vec::new();
        for (name, bytes) in stores {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            let output = Command::new(&keytool)
                .args([
                    "-list",
                    "-v",
                    "-storetype",
                    "PKCS12",
                    "-storepass",
                    "changeit",
                ])
                .arg("-keystore")
                .arg(&path)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&output.stdout).into_owned();
            assert!(
                output.status.success(),
                "{name}: {text}{}",
                String::from_utf8_lossy(&output.stderr)
            );
            listings.push(text);
        }
        let (keys, trust) = (&listings[0], &listings[1]);
        assert!(
            keys.contains("Alias name: server") && keys.contains("PrivateKeyEntry"),
            "{keys}"
        );
        assert!(keys.contains("Certificate chain length: 2"), "{keys}");
        assert!(keys.contains("zk-0.zk.ns.svc.cluster.local"), "{keys}");
        assert_eq!(trust.matches("trustedCertEntry").count(), 2, "{trust}");
        assert!(trust.contains("CN=simple-zk-next"), "{trust}");
    }
}
