//! Building blocks every Strata operator uses.
//!
//! An operator's reconcile reads as the same five steps everywhere:
//! dereference, validate, build (pure), apply ([`apply`]), status. This crate
//! holds everything in those steps that is not product-specific: roles and
//! role groups with config merging, product images, cluster operations,
//! labels and checked names, server-side apply with pruning from watch caches,
//! the controller wiring with metrics, Events and health endpoints, and the
//! shared command line.

pub mod apply;
pub mod cache;
pub mod cli;
pub mod cluster_operation;
pub mod controller;
pub mod error;
pub mod http;
pub mod image;
pub mod labels;
pub mod merge;
pub mod metrics;
pub mod names;
pub mod quantity;
pub mod rbac;
pub mod render;
pub mod role;
pub mod status;
#[cfg(feature = "testing")]
pub mod testing;
