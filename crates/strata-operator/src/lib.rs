//! Building blocks every Strata operator uses.
//!
//! An operator's reconcile reads as the same five steps everywhere:
//! dereference, validate, build (pure), apply ([`apply`]), status. This crate
//! holds the runtime half of those steps: server-side apply with pruning from watch caches,
//! the controller wiring with metrics, Events and health endpoints, and the
//! shared command line.

pub mod apply;
pub mod cache;
pub mod certificates;
pub mod child;
pub mod cli;
pub mod cluster_domain;
pub mod controller;
pub mod crds;
pub mod definition;
pub mod error;
pub mod events;
pub mod guard;
pub mod http;
pub mod leader;
pub mod metrics;
pub mod optional_kinds;
pub mod pipeline;
pub mod pod_security;
pub mod product_http;
pub mod rbac;
pub mod reference;
pub mod render;
pub mod roll;
pub mod status;
pub mod tls;
pub mod web_exposure;
