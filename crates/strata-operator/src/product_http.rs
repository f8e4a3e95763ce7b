//! Asking a product over plain HTTP on the pod network: a bare `GET`, for the endpoints
//! products serve without TLS (HDFS's JMX, ZooKeeper's metrics).
//!
//! HTTP/1.0 keeps the client to a few lines: the server sends no chunked encoding and
//! closes the connection after the body, so the response is everything read until the
//! end. Each exchange is bounded by a timeout and the response by [`MAX_RESPONSE_BYTES`].

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The most read of one response: HDFS's `LiveNodes` takes about 700 bytes a datanode,
/// so this covers clusters of tens of thousands; a longer answer is cut and fails to
/// parse.
pub const MAX_RESPONSE_BYTES: u64 = 32 * 1024 * 1024;

/// `GET path` from the HTTP server at `address` (`host:port`): the status and the body,
/// or `None` if it does not answer in `timeout` or does not speak HTTP.
pub async fn get(address: &str, path: &str, timeout: Duration) -> Option<(u16, String)> {
    tokio::time::timeout(timeout, exchange(address, path))
        .await
        .ok()?
}

async fn exchange(address: &str, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(address).await.ok()?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut response = Vec::new();
    stream
        .take(MAX_RESPONSE_BYTES)
        .read_to_end(&mut response)
        .await
        .ok()?;
    parse_response(&response)
}

/// The status code and body of a whole HTTP response.
pub fn parse_response(response: &[u8]) -> Option<(u16, String)> {
    let text = String::from_utf8_lossy(response);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let mut status_line = head.lines().next()?.split_whitespace();
    status_line
        .next()
        .filter(|version| version.starts_with("HTTP/"))?;
    let status = status_line.next()?.parse().ok()?;
    Some((status, body.to_owned()))
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::ok(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{}", Some((200, "{}")))]
    #[case::standby(b"HTTP/1.1 405 Method Not Allowed\r\n\r\nI am not Active!", Some((405, "I am not Active!")))]
    #[case::no_body(b"HTTP/1.0 200 OK\r\n\r\n", Some((200, "")))]
    #[case::cut_in_the_headers(b"HTTP/1.1 200 OK\r\nContent-Ty", None)]
    #[case::not_http(b"SSH-2.0-OpenSSH\r\n\r\n", None)]
    #[case::empty(b"", None)]
    fn responses_are_split_into_status_and_body(
        #[case] response: &[u8],
        #[case] parsed: Option<(u16, &str)>,
    ) {
        let parsed = parsed.map(|(status, body)| (status, body.to_owned()));
        assert_eq!(parse_response(response), parsed);
    }
}
