//! Test support: real ZooKeeper 3.9.5 servers run by the pod runner from the objects
//! the operator renders.

pub mod pods;

use std::time::SystemTime;

use k8s_openapi::api::core::v1::Secret;
use serde_json::Value;
use strata_operator::certificates::{StoredSecrets, plan_certificates};
use zookeeper_operator::build::certificates::certificate_request;
use zookeeper_operator::crd::ZookeeperCluster;
use zookeeper_operator::validate::{DEFAULT_CERTIFICATE_LIFETIME, ValidatedCluster};

/// A `ZookeeperCluster` named `name` in `default` with one server: the smallest ensemble,
/// which ZooKeeper runs in standalone mode. In plaintext: its tests reach it through
/// loopback forwards, whose addresses no certificate names (TLS is proven in `tls` and
/// `certificates`).
pub fn standalone_manifest(name: &str) -> String {
    format!(
        "\
apiVersion: zookeeper.strata.dev/v1alpha1
kind: ZookeeperCluster
metadata:
  name: {name}
  namespace: default
spec:
  clusterConfig:
    tls:
      enabled: false
  servers:
    roleGroups:
      default:
        replicas: 1
"
    )
}

/// The Secrets the certificate step writes for `cluster` on its first reconcile, with
/// their values, and the CA.
#[allow(clippy::panic)]
pub fn issued_secrets(cluster: &Value) -> (Vec<Secret>, String) {
    let cluster: ZookeeperCluster = serde_json::from_value(cluster.clone())
        .unwrap_or_else(|error| panic!("a cluster: {error}"));
    let validated =
        ValidatedCluster::new(&cluster, "cluster.local").unwrap_or_else(|error| panic!("{error}"));
    let request = certificate_request(&validated, DEFAULT_CERTIFICATE_LIFETIME);
    let certificates = plan_certificates(&request, &StoredSecrets::default(), SystemTime::now())
        .unwrap_or_else(|error| panic!("{error}"));
    (certificates.sealed_secrets(), certificates.ca_pem)
}
