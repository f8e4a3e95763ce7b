//! A product's HTTP endpoint on loopback, for tests of operators that ask their
//! product over HTTP (an HDFS namenode's `/isActive` and JMX).
//!
//! [`serve`] answers every request with what `respond` returns for its request line,
//! as HTTP/1.1 with the connection closed after the answer, which is all the
//! operators' own minimal HTTP clients read.

use std::sync::Arc;

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
