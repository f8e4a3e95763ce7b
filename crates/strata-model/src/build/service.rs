//! Services: headless per role group, one per pod where a name must always resolve,
//! metrics for Prometheus, and the client Service.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::container::ContainerPort;
use crate::monitoring::{PATH_ANNOTATION, PORT_ANNOTATION, SCHEME_ANNOTATION, SCRAPE_LABEL};

/// A TCP Service port whose target is the container port of the same name.
pub fn service_port(port: ContainerPort) -> ServicePort {
    ServicePort {
        name: Some(port.name.to_owned()),
        port: i32::from(port.number),
        target_port: Some(IntOrString::String(port.name.to_owned())),
        protocol: Some("TCP".to_owned()),
        ..ServicePort::default()
    }
}

/// A headless Service: stable DNS names per pod (`<pod>.<service>`), the StatefulSet's
/// `serviceName`.
///
/// It publishes pods that are not ready: members of a quorum (ZooKeeper, journalnodes,
/// namenodes) become ready only after they have found each other, so hiding unready
/// pods would keep a fresh ensemble from ever forming.
pub fn headless_service(
    metadata: ObjectMeta,
    selector: BTreeMap<String, String>,
    ports: &[ContainerPort],
) -> Service {
    service(
        metadata,
        ServiceSpec {
            cluster_ip: Some("None".to_owned()),
            publish_not_ready_addresses: Some(true),
            ..ServiceSpec::default()
        },
        selector,
        ports,
    )
}

/// The label the StatefulSet controller puts on each of its pods, naming it.
pub const STATEFULSET_POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";

/// A Service of one StatefulSet pod, with a virtual address of its own: its name
/// resolves whether the pod runs or not, unlike the pod's name behind the headless
/// Service, which exists only while the pod has an address.
///
/// For products that resolve a peer's name once and fail for good when it does not
/// resolve (Hadoop's journal and namenode addresses): a pod being recreated, or
/// Pending, would otherwise stop its peers from starting. It publishes the pod while
/// it is not ready, for the same reason as [`headless_service`].
pub fn pod_service(metadata: ObjectMeta, pod: &str, ports: &[ContainerPort]) -> Service {
    service(
        metadata,
        ServiceSpec {
            publish_not_ready_addresses: Some(true),
            ..ServiceSpec::default()
        },
        BTreeMap::from([(STATEFULSET_POD_NAME_LABEL.to_owned(), pod.to_owned())]),
        ports,
    )
}

fn service(
    metadata: ObjectMeta,
    spec: ServiceSpec,
    selector: BTreeMap<String, String>,
    ports: &[ContainerPort],
) -> Service {
    Service {
        metadata,
        spec: Some(ServiceSpec {
            selector: Some(selector),
            ports: Some(ports.iter().copied().map(service_port).collect()),
            ..spec
        }),
        status: None,
    }
}

/// Where Prometheus scrapes a product.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrometheusScrape {
    /// The metrics port.
    pub port: ContainerPort,
    /// The HTTP path, such as `/metrics` (ZooKeeper) or `/prom` (Hadoop).
    pub path: &'static str,
    /// Whether the port speaks HTTPS (Trino with TLS) or plain HTTP.
    pub scheme: ScrapeScheme,
}

/// The scheme of a metrics endpoint, as `prometheus.io/scheme` names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, strum::AsRefStr)]
#[strum(serialize_all = "lowercase")]
pub enum ScrapeScheme {
    /// Plain HTTP.
    #[default]
    Http,
    /// HTTPS.
    Https,
}

/// A headless Service whose endpoints Prometheus scrapes pod by pod, found through
/// the conventional `prometheus.io/*` annotations. Unready pods are included: the
/// metrics of a server that lost its quorum matter most.
pub fn metrics_service(
    mut metadata: ObjectMeta,
    selector: BTreeMap<String, String>,
    scrape: PrometheusScrape,
) -> Service {
    metadata.annotations = Some(BTreeMap::from(
        [
            (SCRAPE_LABEL, "true".to_owned()),
            (PORT_ANNOTATION, scrape.port.number.to_string()),
            (PATH_ANNOTATION, scrape.path.to_owned()),
            (SCHEME_ANNOTATION, scrape.scheme.as_ref().to_owned()),
        ]
        .map(|(key, value)| (key.to_owned(), value)),
    ));
    // The same mark as a label, which a ServiceMonitor can select on.
    metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(SCRAPE_LABEL.to_owned(), "true".to_owned());
    headless_service(metadata, selector, &[scrape.port])
}

/// A ClusterIP Service clients connect to; it selects only ready pods, so clients
/// never land on a server that cannot serve.
pub fn client_service(
    metadata: ObjectMeta,
    selector: BTreeMap<String, String>,
    ports: &[ContainerPort],
) -> Service {
    service(
        metadata,
        ServiceSpec {
            type_: Some("ClusterIP".to_owned()),
            ..ServiceSpec::default()
        },
        selector,
        ports,
    )
}
