//! The ServiceMonitor kind: which Services Prometheus scrapes, and how.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use serde::{Deserialize, Serialize};

use super::{
    PATH_ANNOTATION, POD_TARGET_LABELS, PORT_ANNOTATION, SCHEME_ANNOTATION, SCRAPE_LABEL,
    ServiceMonitorSettings, with_labels,
};

/// `monitoring.coreos.com/v1` `ServiceMonitor`, as far as the operators set it.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct ServiceMonitor {
    /// The object's metadata.
    pub metadata: ObjectMeta,
    /// What to scrape.
    pub spec: ServiceMonitorSpec,
}

/// A ServiceMonitor's spec.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ServiceMonitorSpec {
    /// The metrics Services of one cluster.
    pub selector: LabelSelector,
    /// Only the cluster's own namespace.
    pub namespace_selector: NamespaceSelector,
    /// One per distinct port, path and scheme of the selected Services.
    pub endpoints: Vec<Endpoint>,
    /// Pod labels copied onto every series.
    pub pod_target_labels: Vec<String>,
}

/// A ServiceMonitor's `namespaceSelector`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceSelector {
    /// The namespaces whose Services are selected.
    pub match_names: Vec<String>,
}

/// A ServiceMonitor endpoint: where each selected Service's pods are scraped.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    /// The Service port's name.
    pub port: String,
    /// The HTTP path.
    pub path: String,
    /// `http` or `https`.
    pub scheme: String,
    /// The scrape interval, when the cluster sets one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
    /// The CA and the name the targets' certificates are checked against, for HTTPS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_config: Option<TlsConfig>,
    /// The credentials Prometheus sends, where the endpoint authenticates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basic_auth: Option<BasicAuth>,
}

/// An endpoint's `tlsConfig`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "camelCase")]
pub struct TlsConfig {
    /// The CA, from a ConfigMap.
    pub ca: CaSource,
    /// The name every target's certificate must be valid for: Prometheus scrapes pod
    /// IPs, which no certificate names.
    pub server_name: String,
}

/// Where a `tlsConfig`'s CA is.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "camelCase")]
pub struct CaSource {
    /// A key of a ConfigMap in the ServiceMonitor's namespace.
    pub config_map: KeyReference,
}

/// An endpoint's `basicAuth`: both values from keys of Secrets in the ServiceMonitor's
/// namespace.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct BasicAuth {
    /// The user name.
    pub username: KeyReference,
    /// The password.
    pub password: KeyReference,
}

/// A key of a Secret or ConfigMap (Kubernetes' `SecretKeySelector` and
/// `ConfigMapKeySelector` as a ServiceMonitor holds them).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct KeyReference {
    /// The object's name.
    pub name: String,
    /// The key.
    pub key: String,
}

/// How Prometheus checks the targets of a product whose metrics endpoint speaks HTTPS
/// or authenticates (Trino), and proves itself to them; the same for every endpoint.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScrapeSecurity {
    /// The CA and the name every target's certificate is checked against, for HTTPS.
    pub tls: Option<TlsConfig>,
    /// What Prometheus sends, where the endpoint authenticates.
    pub basic_auth: Option<BasicAuth>,
}

/// The ServiceMonitor of a cluster whose objects carry `selector` (name and instance),
/// scraping each metrics Service in `services` (those with [`SCRAPE_LABEL`]) at the
/// port, path and scheme its annotations name, with `security`'s certificate check and
/// credentials. Services that share a port, path and scheme share an endpoint.
pub fn service_monitor(
    metadata: ObjectMeta,
    selector: BTreeMap<String, String>,
    settings: &ServiceMonitorSettings,
    services: &[&Service],
    security: &ScrapeSecurity,
) -> ServiceMonitor {
    let mut endpoints: Vec<Endpoint> = services
        .iter()
        .filter_map(|service| scrape_endpoint(service, settings.interval.as_deref()))
        .map(|endpoint| Endpoint {
            tls_config: security.tls.clone(),
            basic_auth: security.basic_auth.clone(),
            ..endpoint
        })
        .collect();
    endpoints.sort();
    endpoints.dedup();
    let mut match_labels = selector;
    match_labels.insert(SCRAPE_LABEL.to_owned(), "true".to_owned());
    let namespace = metadata.namespace.clone().unwrap_or_default();
    ServiceMonitor {
        metadata: with_labels(metadata, &settings.labels),
        spec: ServiceMonitorSpec {
            selector: LabelSelector {
                match_labels: Some(match_labels),
                match_expressions: None,
            },
            namespace_selector: NamespaceSelector {
                match_names: vec![namespace],
            },
            endpoints,
            pod_target_labels: POD_TARGET_LABELS.map(str::to_owned).to_vec(),
        },
    }
}

/// Where a metrics Service is scraped, from its annotations and its port's name;
/// `None` for a Service that is not one.
fn scrape_endpoint(service: &Service, interval: Option<&str>) -> Option<Endpoint> {
    let labels = service.metadata.labels.as_ref()?;
    if labels.get(SCRAPE_LABEL).map(String::as_str) != Some("true") {
        return None;
    }
    let annotations = service.metadata.annotations.as_ref()?;
    let port: i32 = annotations.get(PORT_ANNOTATION)?.parse().ok()?;
    let port_name = service
        .spec
        .as_ref()?
        .ports
        .as_ref()?
        .iter()
        .find(|service_port| service_port.port == port)?
        .name
        .clone()?;
    Some(Endpoint {
        port: port_name,
        path: annotations.get(PATH_ANNOTATION)?.clone(),
        scheme: annotations
            .get(SCHEME_ANNOTATION)
            .cloned()
            .unwrap_or_else(|| "http".to_owned()),
        interval: interval.map(str::to_owned),
        ..Endpoint::default()
    })
}
