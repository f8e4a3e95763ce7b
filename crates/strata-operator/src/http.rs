//! The HTTP endpoints kubelet and Prometheus talk to: `/healthz`, `/readyz`
//! and `/metrics`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use tokio_util::sync::CancellationToken;

use crate::metrics::Metrics;

/// Shared state of the endpoints.
#[derive(Clone, Debug)]
pub struct HealthState {
    /// Set once every watch cache has completed its first LIST.
    pub ready: Arc<AtomicBool>,
    /// The operator's metrics.
    pub metrics: Arc<Metrics>,
}

/// The router, separate from serving so tests can call it directly.
pub fn router(state: HealthState) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(state)
}

async fn readyz(State(state): State<HealthState>) -> (StatusCode, &'static str) {
    if state.ready.load(Ordering::Acquire) {
        (StatusCode::OK, "ready")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "watch caches are not synced yet",
        )
    }
}

async fn metrics(State(state): State<HealthState>) -> ([(&'static str, &'static str); 1], String) {
    (
        [(
            "content-type",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.encode(),
    )
}

/// Serves the endpoints until `shutdown` is cancelled.
pub async fn serve(
    address: SocketAddr,
    state: HealthState,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(address).await?;
    tracing::info!(%address, "serving /healthz, /readyz and /metrics");
    axum::serve(listener, router(state))
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
}
