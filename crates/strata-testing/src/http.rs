//! Plain HTTP for tests, both ways.
//!
//! - [`serve`]: a product's HTTP endpoint on loopback, for tests of operators that ask
//!   their product over HTTP (an HDFS namenode's `/isActive` and JMX). It answers every
//!   request with what `respond` returns for its request line, as HTTP/1.1 with the
//!   connection closed after the answer, which is all the operators' own minimal HTTP
//!   clients read.
//! - [`request`]: a blocking client for the real products' HTTP APIs (Superset's REST
//!   API, Trino's client protocol), one request per connection.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// An answer: the status line's code and reason (`200 OK`), and the body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// Such as `200 OK` or `405 Method Not Allowed`.
    pub status: String,
    /// The body.
    pub body: String,
}

impl Answer {
    /// An answer with `status` and `body`.
    pub fn new(status: &str, body: impl Into<String>) -> Self {
        Self {
            status: status.to_owned(),
            body: body.into(),
        }
    }
}

/// Serves `respond` on a free loopback port until the runtime ends, and returns its
/// `127.0.0.1:port`. Must be called inside a tokio runtime.
pub fn serve(respond: impl Fn(&str) -> Answer + Send + Sync + 'static) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port is free");
    let address = listener
        .local_addr()
        .expect("the listener has an address")
        .to_string();
    listener
        .set_nonblocking(true)
        .expect("the listener can be non-blocking");
    let listener =
        tokio::net::TcpListener::from_std(listener).expect("called inside a tokio runtime");
    let respond = Arc::new(respond);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let respond = respond.clone();
            tokio::spawn(async move {
                let mut request = [0_u8; 2048];
                let read = stream.read(&mut request).await.unwrap_or(0);
                let request = String::from_utf8_lossy(&request[..read]);
                let answer = respond(request.lines().next().unwrap_or_default());
                let _written = stream
                    .write_all(
                        format!("HTTP/1.1 {}\r\n\r\n{}", answer.status, answer.body).as_bytes(),
                    )
                    .await;
            });
        }
    });
    address
}

/// How long [`request`] waits for an answer.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// An HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Header names in lower case, with their values.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: String,
}

impl Response {
    /// The body parsed as JSON.
    pub fn json(&self) -> Result<serde_json::Value, String> {
        serde_json::from_str(&self.body)
            .map_err(|error| format!("{error} in {} body {:?}", self.status, self.body))
    }
}

/// One HTTP/1.1 request on a fresh connection (`Connection: close`), read to EOF.
pub fn request(
    address: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Result<Response, String> {
    let failed = |error: std::io::Error| format!("{method} http://{address}{path}: {error}");
    let mut stream = TcpStream::connect(address).map_err(failed)?;
    stream
        .set_read_timeout(Some(REQUEST_TIMEOUT))
        .map_err(failed)?;
    stream
        .write_all(request_text(address, method, path, headers, body).as_bytes())
        .map_err(failed)?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).map_err(failed)?;
    parse_response(&raw).map_err(|error| format!("{method} http://{address}{path}: {error}"))
}

/// The text of an HTTP/1.1 request on a connection of its own (`Connection: close`).
pub(crate) fn request_text(
    host: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> String {
    let mut head =
        format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nAccept: */*\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    let body = body.unwrap_or_default();
    if !body.is_empty() || method != "GET" {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    format!("{head}{body}")
}

/// Status, headers and body of a complete HTTP/1.1 response.
pub(crate) fn parse_response(raw: &[u8]) -> Result<Response, String> {
    let split = raw
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .ok_or("no end of headers in the answer")?;
    let head = String::from_utf8_lossy(&raw[..split]);
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("bad status line {status_line:?}"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(name, value)| name == "transfer-encoding" && value.contains("chunked"));
    let rest = &raw[split + 4..];
    // An interim answer (`100 Continue`, which Hadoop's datanodes send to a PUT that
    // did not ask for it) precedes the final one.
    if (100..200).contains(&status) {
        return parse_response(rest);
    }
    let body = if chunked {
        dechunk(rest)?
    } else {
        rest.to_vec()
    };
    Ok(Response {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// The payload of a chunked body.
fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let line_end = rest
            .windows(2)
            .position(|window| window == b"\r\n")
            .ok_or("chunk size line without CRLF")?;
        let size_text = String::from_utf8_lossy(&rest[..line_end]);
        let size_hex = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_hex, 16)
            .map_err(|error| format!("bad chunk size {size_text:?}: {error}"))?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Ok(body);
        }
        let chunk = rest.get(..size).ok_or("chunk shorter than its size")?;
        body.extend_from_slice(chunk);
        rest = rest.get(size + 2..).ok_or("chunk without its CRLF")?;
    }
}
