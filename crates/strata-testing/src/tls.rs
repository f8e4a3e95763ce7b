//! A TLS client for tests and the sandbox: it trusts a given CA, presents a certificate
//! if asked, and checks the server's certificate for a name of the caller's choosing,
//! so a server reached through a loopback forward is still checked under the DNS name a
//! client in the cluster would use.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

/// How long a connection, the request or the answer may take.
const TIMEOUT: Duration = Duration::from_secs(5);

/// A client configuration trusting `ca_pem`, presenting `identity` (certificate and key
/// PEM) if given.
pub fn client_config(
    ca_pem: &str,
    identity: Option<(&str, &str)>,
) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    for certificate in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        let certificate = certificate.map_err(|error| format!("the CA: {error}"))?;
        roots
            .add(certificate)
            .map_err(|error| format!("the CA as a trust anchor: {error}"))?;
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|error| error.to_string())?
    .with_root_certificates(roots);
    let config = match identity {
        None => builder.with_no_client_auth(),
        Some((certificate, key)) => {
            let chain = CertificateDer::pem_slice_iter(certificate.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|error| format!("the client certificate: {error}"))?;
            let key = PrivateKeyDer::from_pem_slice(key.as_bytes())
                .map_err(|error| format!("the client key: {error}"))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|error| format!("the client identity: {error}"))?
        }
    };
    Ok(Arc::new(config))
}

/// A TLS client connection to `address`, to check the server's certificate for `name`,
/// and its socket, which gives up reading after `read_timeout`. The handshake happens on
/// the first write or read (`rustls::Stream`).
pub fn connect(
    config: Arc<rustls::ClientConfig>,
    name: &str,
    address: SocketAddr,
    read_timeout: Duration,
) -> Result<(rustls::ClientConnection, TcpStream), String> {
    let server_name = ServerName::try_from(name.to_owned()).map_err(|error| error.to_string())?;
    let connection =
        rustls::ClientConnection::new(config, server_name).map_err(|error| error.to_string())?;
    let socket =
        TcpStream::connect_timeout(&address, TIMEOUT).map_err(|error| error.to_string())?;
    socket
        .set_read_timeout(Some(read_timeout))
        .map_err(|error| error.to_string())?;
    Ok((connection, socket))
}

/// A ZooKeeper four-letter word over TLS to `address`, checking the server's certificate
/// for `name`: the answer, and the certificate the server presented (DER).
pub fn four_letter_word(
    config: Arc<rustls::ClientConfig>,
    name: &str,
    address: SocketAddr,
    word: &str,
) -> Result<(String, Vec<u8>), String> {
    let (mut connection, mut socket) = connect(config, name, address, TIMEOUT)?;
    let mut stream = rustls::Stream::new(&mut connection, &mut socket);
    stream
        .write_all(word.as_bytes())
        .map_err(|error| format!("writing {word}: {error}"))?;
    let mut answer = String::new();
    let read = stream.read_to_string(&mut answer);
    let presented = connection
        .peer_certificates()
        .and_then(|chain| chain.first())
        .map(|leaf| leaf.as_ref().to_vec())
        .unwrap_or_default();
    match read {
        Ok(_) => Ok((answer, presented)),
        // ZooKeeper closes after a four-letter word without a TLS close_notify.
        Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof && !answer.is_empty() => {
            Ok((answer, presented))
        }
        Err(error) => Err(format!("reading the answer: {error}")),
    }
}

/// One HTTPS request to `address` (a loopback forward, say), checking the server's
/// certificate for `name`, which is also the request's `Host`; read to the end.
pub fn https_request(
    config: Arc<rustls::ClientConfig>,
    name: &str,
    address: SocketAddr,
    request: (&str, &str),
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Result<crate::http::Response, String> {
    let (method, path) = request;
    let failed = |error: String| format!("{method} https://{name}{path} via {address}: {error}");
    let (mut connection, mut socket) =
        connect(config, name, address, crate::http::REQUEST_TIMEOUT).map_err(failed)?;
    let mut stream = rustls::Stream::new(&mut connection, &mut socket);
    let text = crate::http::request_text(name, method, path, headers, body);
    stream
        .write_all(text.as_bytes())
        .map_err(|error| failed(error.to_string()))?;
    let mut raw = Vec::new();
    match stream.read_to_end(&mut raw) {
        Ok(_) => {}
        // A server may close without a TLS close_notify once it has answered.
        Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof && !raw.is_empty() => {}
        Err(error) => return Err(failed(error.to_string())),
    }
    crate::http::parse_response(&raw).map_err(failed)
}
