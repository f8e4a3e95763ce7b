//! `cargo xtask`: the workspace's own automation, as a library so its logic is tested.
//!
//! - [`operators`]: the single registry of operators every generator iterates.
//! - [`generated`]: write-or-check of generator-owned directories.
//! - [`crds`]: `gen-crds`, built on both, refusing non-[`structural`] schemas.
//! - [`helm`]: `gen-helm`, a chart per operator with RBAC derived from its registration.
//! - [`images`]: `images`, a container image per operator, and hadolint on the Dockerfiles.
//! - [`tools`] and [`pipeline`]: `cargo xtask test`, the full suite with real tools.
//! - [`lanes`]: its test step, every test binary run side by side.
//! - [`sandbox`]: `cargo xtask sandbox`, the operators on the real control plane.
//! - [`build`]: the binaries each command starts, built by the command itself.
//! - [`checks`]: the shared operator checks, run for every registered operator.

pub mod build;
pub mod checks;
pub mod cli;
pub mod commands;
pub mod cpu_account;
pub mod crds;
pub mod generated;
pub mod helm;
pub mod images;
pub mod lanes;
pub mod operators;
pub mod pipeline;
pub mod run;
pub mod sandbox;
pub mod structural;
pub mod tools;
