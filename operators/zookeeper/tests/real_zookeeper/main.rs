//! Tests against real ZooKeeper servers started from what `zookeeper-operator render`
//! prints. Those that run Java are ignored by default and run by `cargo xtask test`, which
//! exports `STRATA_JAVA` and `STRATA_ZOOKEEPER_CLASSPATH`; without them they fail and name
//! the missing variable. `cargo xtask tools` prints the variables for a manual
//! `cargo test -p zookeeper-operator --test real_zookeeper -- --include-ignored`.
//!
//! Every test uses its own loopback addresses, so they run in parallel: 127.0.0.2-4 for the
//! ensemble, 127.0.0.10 and up for single servers, 127.0.0.20 and up for the ZNode
//! controller.

mod ensemble;
mod operated;
mod runner;
mod scaling;
mod support;
mod znode_client;
mod znode_controller;
