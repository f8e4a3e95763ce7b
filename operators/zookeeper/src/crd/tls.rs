//! `spec.clusterConfig`: settings of the whole ensemble: its TLS, exposure,
//! monitoring, and which namespaces' ZNodes may use it.
//!
//! TLS covers both links ZooKeeper serves: clients on the secure client port, and the
//! servers' quorum and leader election (`sslQuorum`). It is on by default, with
//! certificates the operator issues from a CA of the cluster's own (no companion
//! operator); or with the Secret the user names, as cert-manager writes it
//! (`tls.crt`, `tls.key` in PKCS#8, `ca.crt`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata_model::exposure::ServiceExposure;
use strata_model::monitoring::Monitoring;

/// Settings of the whole ensemble.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ZookeeperClusterConfig {
    /// TLS for clients and for the quorum.
    #[serde(default, skip_serializing_if = "ZookeeperTls::is_default")]
    pub tls: ZookeeperTls,

    /// How clients outside the cluster reach the client Service (`<cluster>`): its
    /// type (`ClusterIP`, the default, `NodePort` or `LoadBalancer`), annotations,
    /// `loadBalancerSourceRanges` and `externalTrafficPolicy`. The discovery ConfigMap
    /// adds the external address once the Service has one.
    #[serde(default, skip_serializing_if = "ServiceExposure::is_default")]
    pub service: ServiceExposure,

    /// What a Prometheus Operator in the cluster gets: a ServiceMonitor that scrapes
    /// every server's metrics port (7000), and a PrometheusRule with ZooKeeper's
    /// alerts (docs/monitoring.md). Both need the Prometheus Operator's CRDs.
    #[serde(default, skip_serializing_if = "Monitoring::is_default")]
    pub monitoring: Monitoring,

    /// The namespaces, besides the cluster's own, whose `ZookeeperZnode`s may use this
    /// cluster. Each such ZNode gets a path and, with the operator's certificates, a
    /// client certificate the servers trust: listing a namespace grants whoever may
    /// create ZNodes there a path and client access to this ensemble. A ZNode from any
    /// other namespace is refused (`ZnodeNamespaceNotAllowed`) and gets neither.
    /// Empty by default: only the cluster's own namespace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 1000), inner(length(min = 1, max = 63)))]
    pub znode_namespaces: Vec<String>,
}

/// TLS for clients (port 2282) and for the servers' quorum traffic.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ZookeeperTls {
    /// Whether clients connect over TLS on port 2282 and the servers encrypt their
    /// quorum traffic. The plaintext client port then listens only inside each pod (for
    /// the probes). Defaults to true; false serves plaintext to anyone who reaches the
    /// pods, and says so in the Warning condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,

    /// The user's own certificate instead of the operator's: a Secret in the cluster's
    /// namespace with `tls.crt` (the server certificate, valid for every server pod's
    /// FQDN and the client Service's), `tls.key` (its key, PKCS#8: cert-manager's
    /// `privateKey.encoding: PKCS8`) and `ca.crt` (the CA clients and peers are checked
    /// against). Unset: the operator keeps a CA in `<cluster>-ca` and a certificate per
    /// role group in `<cluster>-server-<roleGroup>-tls`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_name: Option<String>,

    /// How long the operator's server certificates are valid, such as `720h` (the
    /// default, 30 days); each is renewed two thirds into it, and the pods roll onto
    /// the new one. At least `5m`. Not used with `secretName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_lifetime: Option<String>,

    /// `None` (the default): clients need no certificate. `Required`: every client
    /// presents a certificate signed by the cluster's CA (mutual TLS,
    /// `ssl.clientAuth=need`).
    #[serde(default, skip_serializing_if = "ClientAuthentication::is_default")]
    pub client_authentication: ClientAuthentication,
}

impl ZookeeperTls {
    fn is_default(&self) -> bool {
        self == &Self::default()
    }
}

/// Whether clients must present a certificate.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum ClientAuthentication {
    /// Any client that trusts the CA connects.
    #[default]
    None,
    /// Only clients with a certificate the CA signed connect.
    Required,
}

impl ClientAuthentication {
    fn is_default(&self) -> bool {
        *self == Self::None
    }
}
