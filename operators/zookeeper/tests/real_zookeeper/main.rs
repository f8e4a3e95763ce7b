//! Tests against real ZooKeeper servers (Debian's `zookeeper` package, or the classpath in
//! `STRATA_ZOOKEEPER_CLASSPATH`). They are ignored by default and run by `cargo xtask test`
//! or `cargo test -p zookeeper-operator -- --include-ignored`.
//!
//! Every test uses its own loopback addresses, so they run in parallel: 127.0.0.2-4 for the
//! ensemble, 127.0.0.10 and up for single servers.

mod ensemble;
mod support;
mod znode_client;
