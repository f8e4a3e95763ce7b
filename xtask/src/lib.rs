//! `cargo xtask`: the workspace's own automation, as a library so its logic is tested.
//!
//! - [`operators`]: the single registry of operators every generator iterates.
//! - [`generated`]: write-or-check of generator-owned directories.
//! - [`crds`]: `gen-crds`, built on both, refusing non-[`structural`] schemas.
//! - [`tools`] and [`pipeline`]: `cargo xtask test`, the full suite with real tools.

pub mod cli;
pub mod commands;
pub mod crds;
pub mod generated;
pub mod operators;
pub mod pipeline;
pub mod structural;
pub mod tools;
