//! The Gateway API's `BackendTLSPolicy`: how a Gateway checks a product that serves
//! HTTPS behind an HTTPRoute (Trino's coordinator, with TLS on by default).
//!
//! Without it a Gateway speaks plain HTTP to the backend port, and every request to
//! an HTTPS-only product fails. The policy names the CA a product's certificates lead
//! to, from a ConfigMap key `ca.crt`, the key the operators' discovery ConfigMaps
//! already publish it under, and the host name the certificate must carry: the
//! product's client Service's, which every certificate the operators issue covers.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

/// `gateway.networking.k8s.io/v1` `BackendTLSPolicy`, as far as the operators set it.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct BackendTlsPolicy {
    /// The object's metadata.
    pub metadata: ObjectMeta,
    /// Which Service it applies to, and how its certificate is checked.
    pub spec: BackendTlsPolicySpec,
}

/// A BackendTLSPolicy's spec.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BackendTlsPolicySpec {
    /// The Services whose ports the policy covers.
    pub target_refs: Vec<LocalReference>,
    /// The CA and the host name the backend's certificate is checked against.
    pub validation: BackendTlsValidation,
}

/// A reference to an object in the policy's namespace: `group` empty for the core
/// API, as the CRD requires it spelled out.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct LocalReference {
    /// The API group; empty for Services and ConfigMaps.
    pub group: String,
    /// `Service` or `ConfigMap`.
    pub kind: String,
    /// The object's name.
    pub name: String,
}

/// A BackendTLSPolicy's `validation`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BackendTlsValidation {
    /// ConfigMaps whose `ca.crt` holds the CA certificates.
    pub ca_certificate_refs: Vec<LocalReference>,
    /// The name the backend's certificate must carry, also sent as SNI.
    pub hostname: String,
}

impl k8s_openapi::Resource for BackendTlsPolicy {
    const API_VERSION: &'static str = "gateway.networking.k8s.io/v1";
    const GROUP: &'static str = "gateway.networking.k8s.io";
    const KIND: &'static str = "BackendTLSPolicy";
    const VERSION: &'static str = "v1";
    const URL_PATH_SEGMENT: &'static str = "backendtlspolicies";
    type Scope = k8s_openapi::NamespaceResourceScope;
}

impl k8s_openapi::Metadata for BackendTlsPolicy {
    type Ty = ObjectMeta;

    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// The policy `name` in `namespace`, with `labels`: a Gateway reaches the Service
/// `service` over TLS, and checks its certificate against the CA in the ConfigMap
/// `ca_config_map` (key `ca.crt`) and the name `hostname`.
pub fn backend_tls_policy(
    name: &str,
    namespace: &str,
    labels: BTreeMap<String, String>,
    service: &str,
    ca_config_map: &str,
    hostname: &str,
) -> BackendTlsPolicy {
    BackendTlsPolicy {
        metadata: crate::build::object_meta(name, namespace, labels),
        spec: BackendTlsPolicySpec {
            target_refs: vec![LocalReference {
                group: String::new(),
                kind: "Service".to_owned(),
                name: service.to_owned(),
            }],
            validation: BackendTlsValidation {
                ca_certificate_refs: vec![LocalReference {
                    group: String::new(),
                    kind: "ConfigMap".to_owned(),
                    name: ca_config_map.to_owned(),
                }],
                hostname: hostname.to_owned(),
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    #[test]
    fn the_policy_names_the_service_the_ca_config_map_and_the_host_name() {
        let policy = backend_tls_policy(
            "simple-trino",
            "data",
            BTreeMap::from([("app.kubernetes.io/name".to_owned(), "trino".to_owned())]),
            "simple-trino-coordinator",
            "simple-trino",
            "simple-trino-coordinator.data.svc.cluster.local",
        );
        assert_eq!(
            serde_json::to_value(&policy).ok(),
            Some(json!({
                "metadata": {
                    "name": "simple-trino",
                    "namespace": "data",
                    "labels": {"app.kubernetes.io/name": "trino"}
                },
                "spec": {
                    "targetRefs": [{"group": "", "kind": "Service", "name": "simple-trino-coordinator"}],
                    "validation": {
                        "caCertificateRefs": [{"group": "", "kind": "ConfigMap", "name": "simple-trino"}],
                        "hostname": "simple-trino-coordinator.data.svc.cluster.local"
                    }
                }
            }))
        );
    }
}
