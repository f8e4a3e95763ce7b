//! The Strata ZooKeeper operator: product-specific pieces that render ZooKeeper's
//! configuration and talk to a running ensemble.

pub mod config;
pub mod znode_client;
