//! An Ingress for a product's web UI (issue 26, item 3): `clusterConfig.ingress` of
//! the products that serve HTTP to people (Superset's web server, Trino's coordinator).
//!
//! The Ingress routes one host name (and a path, `/` by default) to the client
//! Service's HTTP port. Which controller serves it is the cluster's: `ingressClassName`
//! picks one, and its own settings (a backend speaking HTTPS, body size limits,
//! cert-manager's issuer) go in `annotations`, which the operator passes on untouched.
//! The URL clients use is published only once the controller has written an address to
//! the Ingress's status ([`ingress_url`]), as a load balancer's is.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::{
    HTTPIngressPath, HTTPIngressRuleValue, Ingress, IngressBackend, IngressRule,
    IngressServiceBackend, IngressSpec, IngressTLS, ServiceBackendPort,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::exposure::check_annotation_keys;

/// The condition reason of an Ingress the API server would refuse.
pub const INVALID_INGRESS: &str = "InvalidIngress";

/// `clusterConfig.ingress`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct IngressExposure {
    /// The host name clients use, such as `superset.example.com`.
    pub host: String,
    /// The path prefix routed to the product; defaults to `/`. The product is not told
    /// of it, so anything but `/` needs a controller that strips the prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The IngressClass of the controller that serves it; the cluster's default class
    /// when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_class_name: Option<String>,
    /// Annotations for the controller or cert-manager, passed on untouched (such as
    /// `nginx.ingress.kubernetes.io/backend-protocol: HTTPS` for a product serving
    /// HTTPS, or `cert-manager.io/cluster-issuer`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// A Secret with `tls.crt` and `tls.key` for `host`, with which the controller
    /// serves HTTPS; plain HTTP without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_secret: Option<String>,
}

impl IngressExposure {
    /// The path, `/` by default.
    pub fn path(&self) -> &str {
        self.path.as_deref().unwrap_or("/")
    }

    /// What the API server would refuse, with `field` naming this Ingress's place in
    /// the spec.
    pub fn check(&self, field: &str) -> Result<(), String> {
        let host = self.host.strip_prefix("*.").unwrap_or(&self.host);
        if !is_dns_subdomain(host) || host.parse::<std::net::IpAddr>().is_ok() {
            return Err(format!(
                "{field}.host: {:?} is not a host name such as superset.example.com (an IP \
                 address is not allowed)",
                self.host
            ));
        }
        let path = self.path();
        let lower = path.to_ascii_lowercase();
        if !path.starts_with('/')
            || ["//", "/./", "/../", "%2f", "%2e"]
                .iter()
                .any(|part| lower.contains(part))
            || path.ends_with("/.")
            || path.ends_with("/..")
        {
            return Err(format!(
                "{field}.path: {path:?} is not a path the API server takes: it starts with /, \
                 and has no //, /./, /../ or encoded / or ."
            ));
        }
        if let Some(class) = &self.ingress_class_name
            && !is_dns_subdomain(class)
        {
            return Err(format!(
                "{field}.ingressClassName: {class:?} is not an IngressClass name"
            ));
        }
        if let Some(secret) = &self.tls_secret
            && !is_dns_subdomain(secret)
        {
            return Err(format!(
                "{field}.tlsSecret: {secret:?} is not a Secret name"
            ));
        }
        check_annotation_keys(field, &self.annotations)
    }

    /// The Ingress `metadata` routing `host` and the path to `port_name` of the
    /// Service `service`.
    pub fn ingress(&self, mut metadata: ObjectMeta, service: &str, port_name: &str) -> Ingress {
        if !self.annotations.is_empty() {
            metadata
                .annotations
                .get_or_insert_default()
                .extend(self.annotations.clone());
        }
        let backend = IngressBackend {
            service: Some(IngressServiceBackend {
                name: service.to_owned(),
                port: Some(ServiceBackendPort {
                    name: Some(port_name.to_owned()),
                    number: None,
                }),
            }),
            resource: None,
        };
        Ingress {
            metadata,
            spec: Some(IngressSpec {
                ingress_class_name: self.ingress_class_name.clone(),
                rules: Some(vec![IngressRule {
                    host: Some(self.host.clone()),
                    http: Some(HTTPIngressRuleValue {
                        paths: vec![HTTPIngressPath {
                            path: Some(self.path().to_owned()),
                            path_type: "Prefix".to_owned(),
                            backend,
                        }],
                    }),
                }]),
                tls: self.tls_secret.as_ref().map(|secret| {
                    vec![IngressTLS {
                        hosts: Some(vec![self.host.clone()]),
                        secret_name: Some(secret.clone()),
                    }]
                }),
                ..IngressSpec::default()
            }),
            status: None,
        }
    }

    /// The URL clients outside the cluster use: `https://` with `tlsSecret`.
    pub fn url(&self) -> String {
        let scheme = if self.tls_secret.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}{}", self.host, self.path())
    }
}

/// The URL of `wanted` once the stored Ingress `observed` has an address from its
/// controller; `None` before, so discovery never names a host nothing serves yet, and
/// `None` for a wildcard host, which names no one host a client could dial.
pub fn ingress_url(wanted: Option<&IngressExposure>, observed: Option<&Ingress>) -> Option<String> {
    let wanted = wanted.filter(|wanted| !wanted.host.starts_with("*."))?;
    let has_address = observed
        .and_then(|ingress| ingress.status.as_ref())
        .and_then(|status| status.load_balancer.as_ref())
        .and_then(|balancer| balancer.ingress.as_ref())
        .is_some_and(|addresses| {
            addresses
                .iter()
                .any(|address| address.ip.is_some() || address.hostname.is_some())
        });
    has_address.then(|| wanted.url())
}

/// A lower-case RFC 1123 subdomain, as Kubernetes names most objects and hosts.
pub fn is_dns_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                && label.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                && label
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        })
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]
mod tests {
    use rstest::rstest;
    use serde_json::{Value, json};

    use super::*;

    fn exposure(value: Value) -> IngressExposure {
        serde_json::from_value(value).expect("an Ingress exposure")
    }

    #[rstest]
    #[case::a_host(json!({"host": "superset.example.com"}))]
    #[case::a_wildcard_host(json!({"host": "*.data.example.com"}))]
    #[case::everything(json!({"host": "trino.example.com", "path": "/trino", "ingressClassName": "nginx",
        "annotations": {"nginx.ingress.kubernetes.io/backend-protocol": "HTTPS"}, "tlsSecret": "trino-tls"}))]
    fn accepted(#[case] value: Value) {
        assert_eq!(exposure(value).check("clusterConfig.ingress"), Ok(()));
    }

    #[rstest]
    #[case::an_empty_host(json!({"host": ""}), "host")]
    #[case::a_host_in_capitals(json!({"host": "Superset.Example.com"}), "host")]
    #[case::an_ip_address(json!({"host": "192.0.2.7"}), "IP address")]
    #[case::a_relative_path(json!({"host": "a.example.com", "path": "ui"}), "path")]
    #[case::a_double_slash(json!({"host": "a.example.com", "path": "/a//b"}), "path")]
    #[case::a_parent_step(json!({"host": "a.example.com", "path": "/a/.."}), "path")]
    #[case::an_encoded_slash(json!({"host": "a.example.com", "path": "/a%2Fb"}), "path")]
    #[case::a_class_with_a_slash(json!({"host": "a.example.com", "ingressClassName": "a/b"}), "ingressClassName")]
    #[case::a_secret_name_with_capitals(json!({"host": "a.example.com", "tlsSecret": "TLS"}), "tlsSecret")]
    #[case::an_annotation_key_with_a_space(json!({"host": "a.example.com", "annotations": {"a b": "c"}}), "annotations")]
    fn refused(#[case] value: Value, #[case] expected: &str) {
        let refused = exposure(value)
            .check("clusterConfig.ingress")
            .expect_err("refused");
        assert!(refused.starts_with("clusterConfig.ingress."), "{refused}");
        assert!(refused.contains(expected), "{refused}");
    }

    #[test]
    fn the_ingress_routes_the_host_to_the_named_port_with_tls_and_annotations() {
        let ingress = exposure(
            json!({"host": "trino.example.com", "ingressClassName": "nginx",
            "annotations": {"cert-manager.io/cluster-issuer": "public"}, "tlsSecret": "trino-tls"}),
        )
        .ingress(
            ObjectMeta {
                name: Some("simple-trino".to_owned()),
                ..ObjectMeta::default()
            },
            "simple-trino",
            "https",
        );
        assert_eq!(
            serde_json::to_value(ingress).expect("serializes"),
            json!({
                "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                "metadata": {"name": "simple-trino", "annotations": {"cert-manager.io/cluster-issuer": "public"}},
                "spec": {
                    "ingressClassName": "nginx",
                    "rules": [{"host": "trino.example.com", "http": {"paths": [{
                        "path": "/", "pathType": "Prefix",
                        "backend": {"service": {"name": "simple-trino", "port": {"name": "https"}}}
                    }]}}],
                    "tls": [{"hosts": ["trino.example.com"], "secretName": "trino-tls"}]
                }
            })
        );
    }

    #[rstest]
    #[case::not_asked_for(None, Some(json!({"ip": "192.0.2.7"})), None)]
    #[case::not_stored_yet(Some(json!({"host": "a.example.com"})), None, None)]
    #[case::no_address_yet(Some(json!({"host": "a.example.com"})), Some(json!({})), None)]
    #[case::an_address(Some(json!({"host": "a.example.com"})), Some(json!({"ip": "192.0.2.7"})), Some("http://a.example.com/"))]
    #[case::a_wildcard_host(Some(json!({"host": "*.example.com"})), Some(json!({"ip": "192.0.2.7"})), None)]
    #[case::an_address_with_tls(Some(json!({"host": "a.example.com", "tlsSecret": "t", "path": "/ui"})), Some(json!({"hostname": "lb.example.net"})), Some("https://a.example.com/ui"))]
    fn the_url_is_published_once_the_controller_gives_an_address(
        #[case] wanted: Option<Value>,
        #[case] address: Option<Value>,
        #[case] expected: Option<&str>,
    ) {
        let wanted = wanted.map(exposure);
        let observed: Option<Ingress> = address.map(|address| {
            let ingress = if address == json!({}) {
                json!({"status": {"loadBalancer": {}}})
            } else {
                json!({"status": {"loadBalancer": {"ingress": [address]}}})
            };
            serde_json::from_value(ingress).expect("an Ingress")
        });
        assert_eq!(
            ingress_url(wanted.as_ref(), observed.as_ref()).as_deref(),
            expected
        );
    }
}
