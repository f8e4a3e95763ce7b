//! Test support: real ZooKeeper servers (Java and the classpath from `cargo xtask test`),
//! started from the objects `zookeeper-operator render` prints.

pub mod loopback;
pub mod rendered;
pub mod server;

use std::fs;
use std::net::Ipv4Addr;
use std::time::Duration;

use zookeeper_operator::validate::DEFAULT_CLUSTER_DOMAIN;

use self::loopback::LoopbackGroup;
use self::rendered::{RenderedRoleGroup, render_manifest};
use self::server::{HarnessError, io_context};

/// A `ZookeeperCluster` named `name` in `default` with one server: the smallest ensemble,
/// which ZooKeeper runs in standalone mode.
pub fn standalone_manifest(name: &str) -> String {
    format!(
        "\
apiVersion: zookeeper.strata.dev/v1alpha1
kind: ZookeeperCluster
metadata:
  name: {name}
  namespace: default
spec:
  servers:
    roleGroups:
      default:
        replicas: 1
"
    )
}

/// Renders [`standalone_manifest`] and runs its one server on `address`, waiting until it
/// serves clients in standalone mode.
pub fn start_standalone(name: &str, address: Ipv4Addr) -> Result<LoopbackGroup, HarnessError> {
    let manifest = tempfile::Builder::new()
        .suffix(".yaml")
        .tempfile()
        .map_err(io_context("creating the manifest file"))?;
    fs::write(manifest.path(), standalone_manifest(name))
        .map_err(io_context("writing the manifest file"))?;
    let documents = render_manifest(manifest.path())?;
    let group = RenderedRoleGroup::single(&documents, DEFAULT_CLUSTER_DOMAIN)?;
    let mut servers = LoopbackGroup::start(&group, &[address])?;
    let modes = servers.wait_until_serving(Duration::from_secs(30))?;
    if modes != ["standalone"] {
        return Err(HarnessError::Rendered(format!(
            "a one-server role group should run standalone, but its modes are {modes:?}"
        )));
    }
    Ok(servers)
}
