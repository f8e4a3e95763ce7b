//! The pure layer of every Strata operator.
//!
//! Everything here is a plain function or type over `k8s-openapi` values: no API
//! client, no async runtime, no I/O. `render`, the build step and the tests all run this
//! code, so it must give the same bytes for the same input wherever it runs.
//!
//! - spec building blocks: [`role`] and role groups with [`merge`], [`image`],
//!   [`cluster_operation`], [`pdb`] (ADR030);
//! - checked values: [`names`], [`labels`], [`quantity`], [`duration`], and
//!   [`resources`] with their product defaults merged and validated, and the
//!   [`role_group`] every product builds its StatefulSets from;
//! - [`build`]: the object builders every product's build step uses;
//!
//! The runtime (watches, apply, status writes, the controller) lives in
//! `strata-operator`, which depends on this crate and never the other way round.

pub mod build;
pub mod cluster_operation;
pub mod duration;
pub mod exposure;
pub mod files;
pub mod http_route;
pub mod identity;
pub mod image;
pub mod ingress;
pub mod labels;
pub mod logging;
pub mod merge;
pub mod monitoring;
pub mod names;
pub mod pdb;
pub mod quantity;
pub mod resources;
pub mod role;
pub mod role_group;
