//! The custom resources of the Trino operator: `TrinoCluster` (a coordinator and its
//! workers) and `TrinoCatalog` (one catalog, selected by clusters through labels).

pub mod catalog;
pub mod config;
pub mod security;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata_model::cluster_operation::ClusterOperation;
use strata_model::exposure::ServiceExposure;
use strata_model::image::ProductImage;
use strata_model::role::{GenericRoleConfig, Role};
use strata_status::ClusterStatus;

pub use self::catalog::{TrinoCatalog, TrinoCatalogSpec};
pub use self::config::{TrinoConfig, TrinoConfigOverrides};
pub use self::security::{
    LdapAuthentication, OAuth2Authentication, PasswordAuthentication, TrinoAuthentication,
    TrinoAuthorization, TrinoTls,
};

/// Product name: `app.kubernetes.io/name` of every object.
pub const APP_NAME: &str = "trino";
/// The operator's name: `app.kubernetes.io/managed-by` and the field manager.
pub const OPERATOR_NAME: &str = "trino-operator";
/// The coordinator role.
pub const COORDINATOR_ROLE: &str = "coordinator";
/// The worker role.
pub const WORKER_ROLE: &str = "worker";
/// Repository of the upstream image; the tag is the Trino release.
pub const UPSTREAM_IMAGE_REPOSITORY: &str = "docker.io/trinodb/trino";
/// Trino release run when `spec.image.productVersion` is absent. Every property the
/// operator writes is checked against this release's documentation.
pub const DEFAULT_PRODUCT_VERSION: &str = "483";

/// A Trino cluster: one coordinator StatefulSet and one worker StatefulSet per role
/// group, serving the `TrinoCatalog`s its label selector picks.
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[kube(
    group = "trino.strata.dev",
    version = "v1alpha1",
    kind = "TrinoCluster",
    plural = "trinoclusters",
    shortname = "trino",
    namespaced,
    status = "ClusterStatus<TrinoStatus>",
    derive = "PartialEq",
    doc = "A Trino cluster managed by the Strata Trino operator.",
    printcolumn = r#"{"name":"Available","type":"string","jsonPath":".status.conditions[?(@.type==\"Available\")].status"}"#,
    printcolumn = r#"{"name":"Degraded","type":"string","jsonPath":".status.conditions[?(@.type==\"Degraded\")].status"}"#,
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".status.deployedProductVersion"}"#,
    printcolumn = r#"{"name":"Catalogs","type":"string","jsonPath":".status.catalogs","priority":1}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct TrinoClusterSpec {
    /// The Trino release and image. Defaults to the upstream `trinodb/trino` image in
    /// release 483.
    #[serde(default)]
    pub image: ProductImage,

    /// Pause reconciliation or stop the cluster (scale to zero).
    #[serde(default)]
    pub cluster_operation: ClusterOperation,

    /// Settings of the whole cluster.
    #[serde(default)]
    pub cluster_config: TrinoClusterConfig,

    /// The coordinator: exactly one replica over all role groups, since Trino has no
    /// coordinator high availability.
    pub coordinators: Role<TrinoConfig, GenericRoleConfig, TrinoConfigOverrides>,

    /// The workers.
    pub workers: Role<TrinoConfig, GenericRoleConfig, TrinoConfigOverrides>,
}

/// `spec.clusterConfig`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TrinoClusterConfig {
    /// Which `TrinoCatalog`s in the cluster's namespace it serves, by label. Absent:
    /// none (only Trino's built-in `system` catalog). `{}` selects every catalog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_label_selector: Option<LabelSelector>,

    /// HTTPS for clients and TLS between the nodes: on by default.
    #[serde(default, skip_serializing_if = "TrinoTls::is_default")]
    pub tls: TrinoTls,

    /// How clients authenticate, tried in order. Empty (the default): clients name
    /// themselves (`X-Trino-User`) and are believed. Needs TLS.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authentication: Vec<TrinoAuthentication>,

    /// What authenticated users may do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<TrinoAuthorization>,

    /// How clients outside the cluster reach the coordinator Service
    /// (`<trino>-coordinator`): its type (`ClusterIP`, the default, `NodePort` or
    /// `LoadBalancer`), annotations, `loadBalancerSourceRanges` and
    /// `externalTrafficPolicy`. The discovery ConfigMap adds the external address once
    /// the Service has one.
    #[serde(default, skip_serializing_if = "ServiceExposure::is_default")]
    pub service: ServiceExposure,

    /// An Ingress for the web UI and the HTTP clients: a host name (and path) routed to
    /// the coordinator Service's server port, through the IngressClass given or the
    /// cluster's default. With TLS on (the default) the coordinator serves HTTPS, so the
    /// controller must speak HTTPS to it: an annotation of its own
    /// (`nginx.ingress.kubernetes.io/backend-protocol: HTTPS` for ingress-nginx). The
    /// discovery ConfigMap adds `TRINO_EXTERNAL_URL` once the Ingress has an address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress: Option<strata_model::ingress::IngressExposure>,

    /// A Gateway API HTTPRoute for the web UI and the HTTP clients, attached to the
    /// Gateways named, the alternative to an Ingress. With TLS on (the default) the
    /// operator adds a BackendTLSPolicy `<trino>`, so the Gateway speaks HTTPS to the
    /// coordinator and checks its certificate against the discovery ConfigMap's
    /// `ca.crt` under the coordinator Service's name. Both need the Gateway API CRDs.
    /// The discovery ConfigMap adds `TRINO_EXTERNAL_ROUTE` (host and path) once a
    /// Gateway accepts the route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_route: Option<strata_model::http_route::HttpRouteExposure>,

    /// What a Prometheus Operator in the cluster gets: a ServiceMonitor that scrapes
    /// every node's `/metrics` as the operator's metrics user (over HTTPS with the
    /// cluster's CA, unless TLS is off), and a PrometheusRule with Trino's alerts
    /// (docs/monitoring.md).
    /// Both need the Prometheus Operator's CRDs.
    #[serde(
        default,
        skip_serializing_if = "strata_model::monitoring::Monitoring::is_default"
    )]
    pub monitoring: strata_model::monitoring::Monitoring,
}

/// What a `TrinoCluster`'s status adds to the shared fields.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct TrinoStatus {
    /// The catalogs the pods serve, by catalog name, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub catalogs: Vec<String>,
}

impl strata_operator::pipeline::Operated for TrinoCluster {
    fn cluster_operation(&self) -> &strata_model::cluster_operation::ClusterOperation {
        &self.spec.cluster_operation
    }
}

#[cfg(test)]
mod tests {
    use kube::CustomResourceExt;
    use serde_json::json;

    use super::*;

    #[test]
    fn the_crds_are_namespaced_with_short_names_and_status_subresources()
    -> Result<(), serde_json::Error> {
        for (crd, plural, short) in [
            (TrinoCluster::crd(), "trinoclusters", "trino"),
            (TrinoCatalog::crd(), "trinocatalogs", "trinocat"),
        ] {
            let crd = serde_json::to_value(crd)?;
            assert_eq!(
                crd["metadata"]["name"],
                json!(format!("{plural}.trino.strata.dev"))
            );
            assert_eq!(crd["spec"]["scope"], "Namespaced");
            assert_eq!(crd["spec"]["names"]["shortNames"], json!([short]));
            assert_eq!(
                crd["spec"]["versions"][0]["subresources"]["status"],
                json!({})
            );
        }
        Ok(())
    }

    #[test]
    fn a_minimal_cluster_parses_with_defaults() -> Result<(), serde_json::Error> {
        let spec: TrinoClusterSpec = serde_json::from_value(json!({
            "coordinators": {"roleGroups": {"default": {"replicas": 1}}},
            "workers": {"roleGroups": {"default": {"replicas": 2}}}
        }))?;
        assert_eq!(spec.cluster_config.catalog_label_selector, None);
        assert_eq!(spec.image.product_version, None);
        Ok(())
    }
}
