//! The Strata ZooKeeper operator: product-specific pieces that render ZooKeeper's
//! configuration and talk to a running ensemble.

pub mod build;
pub mod config;
pub mod crd;
pub mod render;
pub mod validate;
pub mod znode_client;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// Every CRD this operator owns, derived from the Rust types, for `crd`, the Helm chart
/// and `cargo xtask gen-crds`.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![crd::ZookeeperCluster::crd(), crd::ZookeeperZnode::crd()]
}
