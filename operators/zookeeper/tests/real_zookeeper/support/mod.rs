//! Test support: real ZooKeeper 3.9.5 servers run by the pod runner from the objects
//! the operator renders.

pub mod pods;

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
