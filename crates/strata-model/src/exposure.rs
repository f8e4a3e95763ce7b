//! How a product's client Service is reached from outside the cluster (issue 26, item
//! 3): its type, the annotations a cloud's load balancer reads, the ranges allowed in,
//! and what address a client outside would use once the Service has one.
//!
//! The operator never invents an address. A `LoadBalancer` Service has one only once a
//! load-balancer controller writes `status.loadBalancer.ingress`; until then the
//! cluster is Progressing with [`WAITING_FOR_LOAD_BALANCER`] and discovery publishes no
//! external address. A cluster with no such controller (bare metal without MetalLB, a
//! test cluster) stays so: the reason says to choose `NodePort` instead.

use std::collections::BTreeMap;
use std::net::IpAddr;

use k8s_openapi::api::core::v1::Service;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata_status::ProgressStep;

/// The Progressing reason while a `LoadBalancer` Service has no address.
pub const WAITING_FOR_LOAD_BALANCER: &str = "WaitingForLoadBalancer";
/// The condition reason of an exposure the API server would refuse or ignore.
pub const INVALID_SERVICE_EXPOSURE: &str = "InvalidServiceExposure";

/// The Kubernetes Service types a client Service may have.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    Deserialize,
    Serialize,
    JsonSchema,
    PartialEq,
    Eq,
    strum::Display,
    strum::AsRefStr,
)]
pub enum ServiceType {
    /// Reachable inside the cluster only.
    #[default]
    ClusterIP,
    /// Also on a port the API server allocates on every node (30000-32767).
    NodePort,
    /// Also at an address a load-balancer controller provides (a cloud's, MetalLB).
    LoadBalancer,
}

/// Whether a node forwards external traffic to pods on other nodes.
#[derive(
    Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq, strum::AsRefStr,
)]
pub enum ExternalTrafficPolicy {
    /// Any node forwards to any ready pod; the client's address is lost (SNAT).
    Cluster,
    /// Only nodes with a ready pod answer, and the pod sees the client's address.
    Local,
}

/// `clusterConfig.service`: the client Service's exposure.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ServiceExposure {
    /// `ClusterIP` (the default), `NodePort` or `LoadBalancer`.
    #[serde(default, rename = "type")]
    pub type_: ServiceType,
    /// Annotations on the Service, such as a cloud load balancer's settings
    /// (`service.beta.kubernetes.io/aws-load-balancer-scheme: internal`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// With `LoadBalancer`: the client address ranges (CIDRs) allowed in; empty allows
    /// every address.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub load_balancer_source_ranges: Vec<String>,
    /// With `NodePort` or `LoadBalancer`: `Cluster` (Kubernetes' default) or `Local`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_traffic_policy: Option<ExternalTrafficPolicy>,
}

impl ServiceExposure {
    /// Whether the spec leaves the Service as it always was.
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// What the API server would refuse or silently ignore, with `field` naming this
    /// exposure's place in the spec.
    pub fn check(&self, field: &str) -> Result<(), String> {
        if !self.load_balancer_source_ranges.is_empty() && self.type_ != ServiceType::LoadBalancer {
            return Err(format!(
                "{field}.loadBalancerSourceRanges applies only to type LoadBalancer, not {}",
                self.type_
            ));
        }
        if let Some(range) = self
            .load_balancer_source_ranges
            .iter()
            .find(|range| !is_cidr(range))
        {
            return Err(format!(
                "{field}.loadBalancerSourceRanges: {range:?} is not a CIDR such as 10.0.0.0/8"
            ));
        }
        if self.external_traffic_policy.is_some() && self.type_ == ServiceType::ClusterIP {
            return Err(format!(
                "{field}.externalTrafficPolicy applies only to types NodePort and LoadBalancer"
            ));
        }
        check_annotation_keys(field, &self.annotations)
    }

    /// Who can reach the Service from outside the cluster without an address list to
    /// stop them: every network that reaches a node (a node port), or the load
    /// balancer (one without `loadBalancerSourceRanges`); `None` inside the cluster or
    /// for trusted networks only. What the products' exposure Warnings name.
    pub fn open_to(&self) -> Option<&'static str> {
        match self.type_ {
            ServiceType::ClusterIP => None,
            ServiceType::NodePort => Some("every network that reaches a node"),
            ServiceType::LoadBalancer if self.load_balancer_source_ranges.is_empty() => {
                Some("every network that reaches the load balancer")
            }
            ServiceType::LoadBalancer => None,
        }
    }

    /// Gives a built client Service this exposure.
    pub fn apply_to(&self, service: &mut Service) {
        if !self.annotations.is_empty() {
            service
                .metadata
                .annotations
                .get_or_insert_default()
                .extend(self.annotations.clone());
        }
        let spec = service.spec.get_or_insert_default();
        spec.type_ = Some(self.type_.to_string());
        if !self.load_balancer_source_ranges.is_empty() {
            spec.load_balancer_source_ranges = Some(self.load_balancer_source_ranges.clone());
        }
        spec.external_traffic_policy = self
            .external_traffic_policy
            .map(|policy| policy.as_ref().to_owned());
    }
}

/// `address/prefix`, with a prefix the address family allows.
fn is_cidr(range: &str) -> bool {
    let Some((address, prefix)) = range.split_once('/') else {
        return false;
    };
    let (Ok(address), Ok(prefix)) = (address.parse::<IpAddr>(), prefix.parse::<u8>()) else {
        return false;
    };
    prefix <= if address.is_ipv4() { 32 } else { 128 }
}

/// A qualified name with an optional DNS subdomain prefix, as the API server checks
/// annotation and label keys.
/// `field.annotations`' keys, as the API server checks them.
pub(crate) fn check_annotation_keys(
    field: &str,
    annotations: &BTreeMap<String, String>,
) -> Result<(), String> {
    match annotations.keys().find(|key| !is_qualified_name(key)) {
        Some(key) => Err(format!(
            "{field}.annotations: {key:?} is not an annotation key ([prefix/]name, the name at most 63 characters of letters, digits, '-', '_' and '.')"
        )),
        None => Ok(()),
    }
}

pub(crate) fn is_qualified_name(key: &str) -> bool {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let prefix_ok = prefix.is_none_or(|prefix| {
        !prefix.is_empty()
            && prefix.len() <= 253
            && prefix.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                    && label.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                    && label
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            })
    });
    name_ok && prefix_ok
}

/// Where a client outside the cluster reaches the Service, as far as the API server
/// knows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ExternalAddress {
    /// `ClusterIP`: no address outside the cluster.
    #[default]
    None,
    /// `NodePort`: any node's address, on these ports (by Service port name); empty
    /// until the API server has allocated them.
    NodePorts(BTreeMap<String, i32>),
    /// `LoadBalancer` with an address: its IP or host name, on the Service's ports.
    LoadBalancer(String),
    /// `LoadBalancer` that has no address yet.
    Pending,
}

impl ExternalAddress {
    /// What the stored Service `observed` offers for the exposure `wanted`. A Service
    /// that is not stored yet, or not yet of the wanted type, offers nothing yet.
    pub fn observe(wanted: &ServiceExposure, observed: Option<&Service>) -> Self {
        let spec = observed.and_then(|service| service.spec.as_ref());
        let stored_type = spec.and_then(|spec| spec.type_.as_deref());
        match wanted.type_ {
            ServiceType::ClusterIP => Self::None,
            ServiceType::LoadBalancer => {
                let ingress = observed
                    .filter(|_| stored_type == Some("LoadBalancer"))
                    .and_then(|service| service.status.as_ref())
                    .and_then(|status| status.load_balancer.as_ref())
                    .and_then(|balancer| balancer.ingress.as_ref())
                    .and_then(|ingress| ingress.first())
                    .and_then(|first| first.hostname.clone().or_else(|| first.ip.clone()));
                ingress.map_or(Self::Pending, Self::LoadBalancer)
            }
            ServiceType::NodePort => Self::NodePorts(
                spec.filter(|_| stored_type == Some("NodePort"))
                    .and_then(|spec| spec.ports.as_ref())
                    .into_iter()
                    .flatten()
                    .filter_map(|port| Some((port.name.clone()?, port.node_port?)))
                    .collect(),
            ),
        }
    }

    /// The discovery keys this adds, named after `prefix` (`TRINO`): `<prefix>_EXTERNAL_HOST`
    /// and `<prefix>_EXTERNAL_PORT` for a load balancer, `<prefix>_NODE_PORT` for a node
    /// port (of the Service port `port_name`). Nothing for an address not known yet.
    pub fn discovery_keys(
        &self,
        prefix: &str,
        port_name: &str,
        service_port: u16,
    ) -> BTreeMap<String, String> {
        match self {
            Self::LoadBalancer(host) => BTreeMap::from([
                (format!("{prefix}_EXTERNAL_HOST"), host.clone()),
                (format!("{prefix}_EXTERNAL_PORT"), service_port.to_string()),
            ]),
            Self::NodePorts(ports) => ports
                .get(port_name)
                .map(|port| BTreeMap::from([(format!("{prefix}_NODE_PORT"), port.to_string())]))
                .unwrap_or_default(),
            Self::None | Self::Pending => BTreeMap::new(),
        }
    }

    /// The Progressing step ([`WAITING_FOR_LOAD_BALANCER`]) while the Service `service`
    /// has no address yet. A controller reports it only when no other step drives the
    /// cluster.
    pub fn waiting_step(&self, service: &str) -> Option<ProgressStep> {
        (*self == Self::Pending).then(|| ProgressStep {
            reason: strata_status::reason!("WaitingForLoadBalancer"),
            message: format!(
                "Service {service} is of type LoadBalancer and has no address yet; discovery \
                 publishes none until a load-balancer controller gives it one. A cluster \
                 without such a controller never does: use type NodePort, or an Ingress."
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::{Value, json};

    use super::*;

    fn exposure(value: Value) -> ServiceExposure {
        serde_json::from_value(value).expect("an exposure")
    }

    fn service(value: Value) -> Service {
        serde_json::from_value(value).expect("a Service")
    }

    #[rstest]
    #[case::inside_the_cluster(json!({}), None)]
    #[case::a_node_port(json!({"type": "NodePort"}), Some("every network that reaches a node"))]
    #[case::an_open_load_balancer(json!({"type": "LoadBalancer"}), Some("every network that reaches the load balancer"))]
    #[case::a_load_balancer_for_trusted_networks(json!({"type": "LoadBalancer", "loadBalancerSourceRanges": ["10.0.0.0/8"]}), None)]
    fn only_a_node_port_or_an_open_load_balancer_is_open_to_outside(
        #[case] value: Value,
        #[case] open_to: Option<&str>,
    ) {
        assert_eq!(exposure(value).open_to(), open_to);
    }

    #[rstest]
    #[case::the_default(json!({}))]
    #[case::a_load_balancer_with_ranges(json!({"type": "LoadBalancer", "loadBalancerSourceRanges": ["10.0.0.0/8", "2001:db8::/32"], "externalTrafficPolicy": "Local"}))]
    #[case::a_node_port(json!({"type": "NodePort", "externalTrafficPolicy": "Cluster"}))]
    #[case::cloud_annotations(json!({"type": "LoadBalancer", "annotations": {"service.beta.kubernetes.io/aws-load-balancer-scheme": "internal", "metallb.universe.tf/address-pool": "public"}}))]
    fn accepted(#[case] value: Value) {
        assert_eq!(exposure(value).check("clusterConfig.service"), Ok(()));
    }

    #[rstest]
    #[case::ranges_without_a_load_balancer(json!({"type": "NodePort", "loadBalancerSourceRanges": ["10.0.0.0/8"]}), "applies only to type LoadBalancer, not NodePort")]
    #[case::a_range_that_is_no_cidr(json!({"type": "LoadBalancer", "loadBalancerSourceRanges": ["10.0.0.0"]}), "\"10.0.0.0\" is not a CIDR")]
    #[case::a_prefix_too_long(json!({"type": "LoadBalancer", "loadBalancerSourceRanges": ["10.0.0.0/33"]}), "is not a CIDR")]
    #[case::a_traffic_policy_inside_the_cluster(json!({"externalTrafficPolicy": "Local"}), "externalTrafficPolicy applies only")]
    #[case::an_annotation_key_with_a_space(json!({"annotations": {"bad key": "x"}}), "\"bad key\" is not an annotation key")]
    #[case::an_annotation_prefix_in_capitals(json!({"annotations": {"Example.COM/x": "y"}}), "is not an annotation key")]
    fn refused(#[case] value: Value, #[case] expected: &str) {
        let refused = exposure(value)
            .check("clusterConfig.service")
            .expect_err("refused");
        assert!(refused.starts_with("clusterConfig.service."), "{refused}");
        assert!(refused.contains(expected), "{refused}");
    }

    #[test]
    fn the_service_gets_the_type_annotations_ranges_and_policy() {
        let mut built = service(json!({
            "metadata": {"name": "t", "annotations": {"kept": "yes"}},
            "spec": {"type": "ClusterIP", "ports": [{"name": "https", "port": 8443}]}
        }));
        exposure(json!({
            "type": "LoadBalancer",
            "annotations": {"lb.example.com/internal": "true"},
            "loadBalancerSourceRanges": ["192.0.2.0/24"],
            "externalTrafficPolicy": "Local"
        }))
        .apply_to(&mut built);
        let built = serde_json::to_value(built).expect("serializes");
        assert_eq!(
            built["metadata"]["annotations"],
            json!({"kept": "yes", "lb.example.com/internal": "true"})
        );
        assert_eq!(built["spec"]["type"], "LoadBalancer");
        assert_eq!(
            built["spec"]["loadBalancerSourceRanges"],
            json!(["192.0.2.0/24"])
        );
        assert_eq!(built["spec"]["externalTrafficPolicy"], "Local");
    }

    #[test]
    fn the_default_keeps_a_plain_cluster_ip_service() {
        let mut built = service(json!({"metadata": {"name": "t"}, "spec": {"type": "ClusterIP"}}));
        let before = built.clone();
        ServiceExposure::default().apply_to(&mut built);
        assert_eq!(built, before);
    }

    #[rstest]
    #[case::cluster_ip(json!({}), None, ExternalAddress::None)]
    #[case::a_load_balancer_not_stored_yet(json!({"type": "LoadBalancer"}), None, ExternalAddress::Pending)]
    #[case::a_load_balancer_still_stored_as_cluster_ip(
        json!({"type": "LoadBalancer"}),
        Some(json!({"spec": {"type": "ClusterIP"}, "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.7"}]}}})),
        ExternalAddress::Pending
    )]
    #[case::a_load_balancer_without_an_address(
        json!({"type": "LoadBalancer"}),
        Some(json!({"spec": {"type": "LoadBalancer"}, "status": {"loadBalancer": {}}})),
        ExternalAddress::Pending
    )]
    #[case::a_load_balancer_with_an_ip(
        json!({"type": "LoadBalancer"}),
        Some(json!({"spec": {"type": "LoadBalancer"}, "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.7"}]}}})),
        ExternalAddress::LoadBalancer("192.0.2.7".to_owned())
    )]
    #[case::a_load_balancer_with_a_host_name(
        json!({"type": "LoadBalancer"}),
        Some(json!({"spec": {"type": "LoadBalancer"}, "status": {"loadBalancer": {"ingress": [{"hostname": "lb.example.com", "ip": "192.0.2.7"}]}}})),
        ExternalAddress::LoadBalancer("lb.example.com".to_owned())
    )]
    #[case::node_ports(
        json!({"type": "NodePort"}),
        Some(json!({"spec": {"type": "NodePort", "ports": [{"name": "https", "port": 8443, "nodePort": 31443}]}})),
        ExternalAddress::NodePorts(BTreeMap::from([("https".to_owned(), 31443)]))
    )]
    fn the_external_address_comes_from_the_stored_service(
        #[case] wanted: Value,
        #[case] stored: Option<Value>,
        #[case] expected: ExternalAddress,
    ) {
        let stored = stored.map(service);
        assert_eq!(
            ExternalAddress::observe(&exposure(wanted), stored.as_ref()),
            expected
        );
    }

    #[rstest]
    #[case::none(ExternalAddress::None, json!({}))]
    #[case::pending(ExternalAddress::Pending, json!({}))]
    #[case::a_load_balancer(ExternalAddress::LoadBalancer("192.0.2.7".to_owned()), json!({"TRINO_EXTERNAL_HOST": "192.0.2.7", "TRINO_EXTERNAL_PORT": "8443"}))]
    #[case::a_node_port(ExternalAddress::NodePorts(BTreeMap::from([("https".to_owned(), 31443)])), json!({"TRINO_NODE_PORT": "31443"}))]
    #[case::node_ports_not_allocated_yet(ExternalAddress::NodePorts(BTreeMap::new()), json!({}))]
    fn discovery_publishes_only_a_known_address(
        #[case] address: ExternalAddress,
        #[case] expected: Value,
    ) {
        let keys = address.discovery_keys("TRINO", "https", 8443);
        assert_eq!(serde_json::to_value(keys).expect("serializes"), expected);
    }

    #[test]
    fn only_a_pending_load_balancer_waits() {
        let step = ExternalAddress::Pending.waiting_step("t").expect("a step");
        assert_eq!(step.reason.as_str(), WAITING_FOR_LOAD_BALANCER);
        assert!(
            step.message
                .starts_with("Service t is of type LoadBalancer")
        );
        assert!(ExternalAddress::None.waiting_step("t").is_none());
        assert!(
            ExternalAddress::LoadBalancer("h".to_owned())
                .waiting_step("t")
                .is_none()
        );
    }
}
