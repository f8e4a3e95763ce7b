//! Test support: real ZooKeeper servers from Debian's package, started from the
//! configuration the operator renders.

pub mod loopback;
pub mod server;
