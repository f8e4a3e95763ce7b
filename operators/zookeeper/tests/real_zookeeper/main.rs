//! Tests against real ZooKeeper 3.9.5 servers, run by the pod runner exactly as
//! `zookeeper-operator` renders them (see `support::pods`). They need root and the image
//! directory, so they are ignored by default and run by `cargo xtask test`, which exports
//! `STRATA_ZOOKEEPER_IMAGE`; without it they fail and name the missing variable.
//! `cargo xtask tools` prints the variables for a manual
//! `cargo test -p zookeeper-operator --test real_zookeeper -- --include-ignored`.
//!
//! Each test has a runner of its own, with its own pod network, so they run in parallel.

mod ca_rotation;
mod certificates;
mod operated;
mod quorum_trust;
mod rotation;
mod runner;
mod scaling;
mod support;
mod tls;
mod upgrade;
mod znode_client;
mod znode_controller;
