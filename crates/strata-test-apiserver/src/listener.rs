//! The in-memory API over HTTP, for clients in other processes: an operator
//! binary started with a kubeconfig (the operator-memory benchmark). `kubectl` and
//! `helm` run against the real control plane (`strata_testing::control_plane`), so no
//! discovery, OpenAPI or protobuf is served here.
//!
//! It serves plain HTTP on a loopback address only (tests may not open other
//! addresses, and there is no TLS to configure). Every request goes through the
//! same [`ApiService`] as an in-process client; watches stream as chunked
//! responses. A bearer token, when sent, is recorded as the request's user, so
//! a test can tell the operator's requests from its own.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use http::header::AUTHORIZATION;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::TestApiServer;
use crate::service::ApiService;

/// Largest request body accepted: far above any object the operators write.
const MAX_BODY: usize = 16 * 1024 * 1024;

/// A running listener; stops serving when dropped.
#[derive(Debug)]
pub struct Listener {
    /// Where it listens, with the port the OS chose when 0 was asked for.
    pub address: SocketAddr,
    stop: CancellationToken,
}

impl Listener {
    /// `http://<address>`, the `server` of a kubeconfig.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// A kubeconfig that reaches this listener as `user`, authenticating with
    /// `token`, defaulting to `namespace`.
    pub fn kubeconfig(&self, user: &str, token: &str, namespace: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: sandbox\n  cluster:\n    server: {url}\n\
             users:\n- name: {user}\n  user:\n    token: {token}\n\
             contexts:\n- name: {user}@sandbox\n  context:\n    cluster: sandbox\n    user: {user}\n    namespace: {namespace}\n\
             current-context: {user}@sandbox\n",
            url = self.url()
        )
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Why the listener could not start.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    /// Only loopback addresses are served.
    #[error("{0} is not a loopback address; the test API serves only 127.0.0.0/8 and ::1")]
    NotLoopback(SocketAddr),
    /// Binding failed, e.g. because the port is taken.
    #[error("cannot listen on {address}: {source}; choose another port, or 0 for a free one")]
    Bind {
        /// The address asked for.
        address: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
}

impl TestApiServer {
    /// Serves this API over HTTP on `address` (port 0 picks a free port) until
    /// the returned [`Listener`] is dropped. Must be called inside a tokio runtime.
    pub async fn listen(&self, address: SocketAddr) -> Result<Listener, ListenError> {
        if !address.ip().is_loopback() {
            return Err(ListenError::NotLoopback(address));
        }
        let socket = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|source| ListenError::Bind { address, source })?;
        let address = socket
            .local_addr()
            .map_err(|source| ListenError::Bind { address, source })?;
        let stop = CancellationToken::new();
        let router = axum::Router::new()
            .fallback(forward)
            .with_state(self.clone());
        let stopped = stop.clone();
        tokio::spawn(async move {
            let serve = axum::serve(socket, router)
                .with_graceful_shutdown(async move { stopped.cancelled().await });
            if let Err(error) = serve.await {
                tracing::warn!(%error, "the test API listener stopped");
            }
        });
        Ok(Listener { address, stop })
    }
}

async fn forward(State(server): State<TestApiServer>, request: Request) -> Response {
    let user = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::to_owned);
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(bytes) => bytes,
        Err(error) => {
            let mut response = Response::new(Body::from(format!("reading the body: {error}")));
            *response.status_mut() = http::StatusCode::BAD_REQUEST;
            return response;
        }
    };
    let request = http::Request::from_parts(parts, kube::client::Body::from(bytes.to_vec()));
    match ApiService::new(server, user).oneshot(request).await {
        Ok(response) => response.map(Body::new),
        Err(never) => match never {},
    }
}
