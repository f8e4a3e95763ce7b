//! An in-memory Kubernetes API server for tests.
//!
//! Controllers built on kube-rs run against it unchanged: [`TestApiServer::client`] returns a
//! real `kube::Client` whose requests go through a `tower::Service` into this crate instead of
//! over the network. No kube-apiserver, envtest or kind is needed.
//!
//! ```
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::{Api, PostParams};
//! use strata_test_apiserver::{TestApiServer, Verb};
//!
//! let server = TestApiServer::new();
//! let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("settings".into());
//! api.create(&PostParams::default(), &cm).await?;
//!
//! assert_eq!(server.count(Verb::Create, "configmaps"), 1);
//! assert!(server.get_typed::<ConfigMap>("default", "settings").is_some());
//! # Ok(())
//! # }
//! ```
//!
//! What it implements:
//! - URL routing for core (`/api/v1`) and grouped (`/apis/{group}/{version}`) resources,
//!   namespaced, cluster-scoped and all-namespaces, with the `/status` subresource.
//! - get, list (label selectors incl. set-based, field selectors on any dotted path,
//!   `limit`/`continue`), create (`generateName`, uid, timestamps, generation),
//!   update with optimistic concurrency, delete with finalizers and owner-reference garbage
//!   collection, merge / strategic (as merge) / JSON patch, simplified server-side apply.
//! - Watches compatible with kube-runtime's `watcher` (list-then-watch and streaming lists),
//!   including bookmarks, resume from a resourceVersion and `410 Gone` after
//!   [`TestApiServer::compact_history`].
//! - A request log in RBAC terms ([`RequestRecord`]), fault injection ([`Fault`]) and direct
//!   state access that is neither logged nor faulted ([`TestApiServer::upsert`],
//!   [`TestApiServer::patch_status_direct`], [`TestApiServer::wait_for`], ...).
//!
//! Where it differs from a real API server is listed in the crate's `README.md`.

mod apply;
mod crd;
mod direct;
mod events;
mod fault;
mod fields;
mod gc;
mod kinds;
mod listener;
mod object;
mod patch;
mod read;
mod requests;
mod route;
mod selector;
mod server;
mod service;
mod status;
mod store;
mod watch;
mod write;

use std::sync::{Mutex, MutexGuard, PoisonError};

pub use direct::{DIRECT_MANAGER, DirectError};
pub use fault::{Fault, FaultEffect, FaultMatcher, FaultTimes};
pub use fields::{FieldPath, Segment};
pub use kinds::{ResourceInfo, ResourceKey, ScopeKind};
pub use listener::{ListenError, Listener};
pub use requests::{RequestRecord, Verb};
pub use server::TestApiServer;
pub use service::{ApiService, ResponseBody};
pub use status::ApiError;

/// Locks a mutex, recovering from poisoning: a panicking test must not cascade into every
/// later request failing with an unrelated error.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
