//! A Gateway API `HTTPRoute` for a product's web UI (issue 26, item 3):
//! `clusterConfig.httpRoute` of the products that serve HTTP to people (Superset's web
//! server, Trino's coordinator), the alternative to their Ingress ([`crate::ingress`]).
//!
//! The route attaches to Gateways the cluster already has (`parentRefs`) and sends the
//! hostnames and path it matches to the client Service's HTTP port. Which Gateway
//! implementation serves it is the cluster's, as is everything a Gateway owns: its
//! listeners, their hostnames and TLS certificates, and which namespaces may attach
//! routes. So the operator never learns the scheme clients use (TLS terminates at a
//! listener, or does not), nor whether a route without hostnames is reachable under
//! any name.
//!
//! `HTTPRoute` comes from the Gateway API CRDs, which many clusters do not have: like
//! the Prometheus Operator's kinds ([`crate::monitoring`]) it is an optional child
//! kind, applied only where the cluster serves it
//! (`strata_operator::child::ChildObject::OPTIONAL`).
//!
//! What the cluster learns back comes from the Gateways' controllers, which write one
//! entry per Gateway to the route's status: [`route_problem`] turns a refusal there into
//! a message, and [`route_host_and_path`] says what discovery may publish once a
//! Gateway accepted the route.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::exposure::check_annotation_keys;
use crate::ingress::is_dns_subdomain;

/// The condition reason of an HTTPRoute the API server would refuse.
pub const INVALID_HTTP_ROUTE: &str = "InvalidHttpRoute";
/// The Warning reason while a Gateway refuses the route ([`route_warning`]).
pub const HTTP_ROUTE_REFUSED: strata_status::Reason = strata_status::reason!("HttpRouteRefused");
/// What a product appends to its prefix for the discovery key holding
/// [`route_host_and_path`], such as `TRINO_EXTERNAL_ROUTE`.
pub const DISCOVERY_KEY_SUFFIX: &str = "_EXTERNAL_ROUTE";
/// The most `parentRefs` the Gateway API CRD allows.
pub const MAX_PARENT_REFS: usize = 32;
/// The most `hostnames` the Gateway API CRD allows.
pub const MAX_HOSTNAMES: usize = 16;
/// The longest path value the Gateway API CRD allows.
const MAX_PATH_LENGTH: usize = 1024;
/// The match type of the route's one rule: every path under [`HttpRouteExposure::path()`].
pub const PATH_PREFIX: &str = "PathPrefix";

/// `clusterConfig.httpRoute`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct HttpRouteExposure {
    /// The Gateways the route attaches to, at least one. A Gateway in another namespace
    /// takes the route only where its listener's `allowedRoutes` admits this namespace.
    pub parent_refs: Vec<ParentReference>,
    /// The host names the route matches, such as `superset.example.com` or
    /// `*.example.com`; when empty, every host name of the Gateway's listener. A
    /// listener with host names of its own takes the route only if one matches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hostnames: Vec<String>,
    /// The path prefix routed to the product; defaults to `/`. The product is not told
    /// of it, so anything but `/` needs a Gateway that rewrites the path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Annotations on the HTTPRoute, for the Gateway implementation or tools that
    /// read routes (external-dns), passed on untouched.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// A Gateway a route attaches to, and optionally one of its listeners. The same in
/// the cluster's spec and in the HTTPRoute (`group` and `kind` left out mean a Gateway).
#[derive(
    Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq, PartialOrd, Ord,
)]
#[serde(rename_all = "camelCase")]
pub struct ParentReference {
    /// The Gateway's name.
    pub name: String,
    /// The Gateway's namespace; the cluster's own when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The name of the listener to attach to, such as the one serving HTTPS on 443;
    /// every listener that admits the route when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section_name: Option<String>,
}

impl ParentReference {
    /// How messages name the Gateway: `namespace/name`, or `name` in the route's own
    /// namespace.
    fn gateway(&self) -> String {
        match &self.namespace {
            Some(namespace) => format!("Gateway {namespace}/{}", self.name),
            None => format!("Gateway {}", self.name),
        }
    }

    /// The Gateway, with the listener where one is named.
    fn describe(&self) -> String {
        match &self.section_name {
            Some(listener) => format!("{} (listener {listener})", self.gateway()),
            None => self.gateway(),
        }
    }

    /// Whether the two name the same Gateway, as the CRD's rules compare them.
    fn same_gateway(&self, other: &Self) -> bool {
        self.name == other.name && self.namespace == other.namespace
    }

    /// What the API server would refuse in this reference at `field`.
    fn check(&self, field: &str) -> Result<(), String> {
        if !is_dns_subdomain(&self.name) {
            return Err(format!(
                "{field}.name: {:?} is not a Gateway name",
                self.name
            ));
        }
        if let Some(namespace) = &self.namespace
            && !is_dns_label(namespace)
        {
            return Err(format!(
                "{field}.namespace: {namespace:?} is not a namespace name"
            ));
        }
        if let Some(section) = &self.section_name
            && !is_dns_subdomain(section)
        {
            return Err(format!(
                "{field}.sectionName: {section:?} is not a listener name (lower-case letters, \
                 digits, '-' and '.')"
            ));
        }
        Ok(())
    }
}

impl HttpRouteExposure {
    /// The path, `/` by default.
    pub fn path(&self) -> &str {
        self.path.as_deref().unwrap_or("/")
    }

    /// What the API server would refuse under the Gateway API CRD's schema and rules,
    /// with `field` naming this route's place in the spec.
    pub fn check(&self, field: &str) -> Result<(), String> {
        if self.parent_refs.is_empty() {
            return Err(format!(
                "{field}.parentRefs: name at least one Gateway for the route to attach to"
            ));
        }
        if self.parent_refs.len() > MAX_PARENT_REFS {
            return Err(format!(
                "{field}.parentRefs: {} Gateways, at most {MAX_PARENT_REFS} are allowed",
                self.parent_refs.len()
            ));
        }
        for (index, parent) in self.parent_refs.iter().enumerate() {
            parent.check(&format!("{field}.parentRefs[{index}]"))?;
        }
        check_distinct_parents(field, &self.parent_refs)?;
        if self.hostnames.len() > MAX_HOSTNAMES {
            return Err(format!(
                "{field}.hostnames: {} host names, at most {MAX_HOSTNAMES} are allowed",
                self.hostnames.len()
            ));
        }
        if let Some(hostname) = self
            .hostnames
            .iter()
            .find(|hostname| !is_route_hostname(hostname))
        {
            return Err(format!(
                "{field}.hostnames: {hostname:?} is not a host name such as superset.example.com \
                 or *.example.com (an IP address is not allowed)"
            ));
        }
        check_path(field, self.path())?;
        check_annotation_keys(field, &self.annotations)
    }
}

/// The CRD's two rules on `parentRefs` together: the references to one Gateway either
/// are one, or each names a listener of its own.
fn check_distinct_parents(field: &str, parents: &[ParentReference]) -> Result<(), String> {
    for (index, parent) in parents.iter().enumerate() {
        let clash = parents.iter().skip(index + 1).any(|other| {
            parent.same_gateway(other)
                && (parent.section_name.is_none()
                    || other.section_name.is_none()
                    || parent.section_name == other.section_name)
        });
        if clash {
            return Err(format!(
                "{field}.parentRefs: {} is named more than once; name it once, or give each \
                 reference a sectionName of its own",
                parent.gateway()
            ));
        }
    }
    Ok(())
}

/// What the CRD's rules on a `PathPrefix` value refuse.
fn check_path(field: &str, path: &str) -> Result<(), String> {
    let refused = !path.starts_with('/')
        || path.len() > MAX_PATH_LENGTH
        || ["//", "/./", "/../", "%2f", "%2F", "#"]
            .iter()
            .any(|part| path.contains(part))
        || path.ends_with("/.")
        || path.ends_with("/..")
        || !has_only_path_characters(path);
    if refused {
        return Err(format!(
            "{field}.path: {path:?} is not a path the Gateway API takes: it starts with /, has \
             no //, /./, /../, # or encoded /, and only the characters of a URL path"
        ));
    }
    Ok(())
}

/// Whether `path` is made of the characters of a URL path and well-formed `%xx`
/// escapes, as the CRD's pattern `^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$`.
fn has_only_path_characters(path: &str) -> bool {
    let mut bytes = path.bytes();
    while let Some(byte) = bytes.next() {
        let allowed = if byte == b'%' {
            bytes.next().is_some_and(|digit| digit.is_ascii_hexdigit())
                && bytes.next().is_some_and(|digit| digit.is_ascii_hexdigit())
        } else {
            byte.is_ascii_alphanumeric() || b"-/._~!$&'()*+,;=:@".contains(&byte)
        };
        if !allowed {
            return false;
        }
    }
    !path.is_empty()
}

/// A route hostname: a lower-case DNS subdomain, optionally after a `*.` wildcard
/// label, and not an IP address.
fn is_route_hostname(hostname: &str) -> bool {
    let name = hostname.strip_prefix("*.").unwrap_or(hostname);
    hostname.len() <= 253 && is_dns_subdomain(name) && name.parse::<std::net::IpAddr>().is_err()
}

/// A lower-case RFC 1123 label, as Kubernetes names namespaces.
fn is_dns_label(name: &str) -> bool {
    !name.contains('.') && is_dns_subdomain(name)
}

/// `gateway.networking.k8s.io/v1` `HTTPRoute`, as far as the operators set and read it.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct HttpRoute {
    /// The object's metadata.
    pub metadata: ObjectMeta,
    /// Where the route attaches, what it matches and where it sends it.
    #[serde(default)]
    pub spec: HttpRouteSpec,
    /// What the Gateways' controllers wrote; never set by the operators.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<HttpRouteStatus>,
}

/// An HTTPRoute's spec.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HttpRouteSpec {
    /// The Gateways (and listeners) the route attaches to.
    #[serde(default)]
    pub parent_refs: Vec<ParentReference>,
    /// The host names matched; the listeners' own when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hostnames: Vec<String>,
    /// The route's one rule.
    #[serde(default)]
    pub rules: Vec<HttpRouteRule>,
}

/// An HTTPRoute rule: requests that match go to the backends.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct HttpRouteRule {
    /// The path the rule matches.
    #[serde(default)]
    pub matches: Vec<HttpRouteMatch>,
    /// The Service port requests go to.
    #[serde(default)]
    pub backend_refs: Vec<BackendRef>,
}

/// One match of a rule: a path.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct HttpRouteMatch {
    /// How the request path is matched.
    pub path: PathMatch,
}

/// A path match.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct PathMatch {
    /// [`PATH_PREFIX`] in every route the operators build.
    #[serde(rename = "type")]
    pub type_: String,
    /// The path.
    pub value: String,
}

/// A Service a rule sends requests to (`group` and `kind` left out mean a Service).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct BackendRef {
    /// The Service's name, in the route's namespace.
    pub name: String,
    /// The Service port's number: the Gateway API takes no port name.
    pub port: u16,
}

/// An HTTPRoute's status: one entry per Gateway whose controller saw the route.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct HttpRouteStatus {
    /// The entries, by Gateway.
    #[serde(default)]
    pub parents: Vec<RouteParentStatus>,
}

/// What one Gateway's controller says of the route.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RouteParentStatus {
    /// The Gateway, as the spec named it.
    pub parent_ref: ParentReference,
    /// The controller that wrote the entry, such as `gateway.envoyproxy.io/gatewayclass-controller`.
    #[serde(default)]
    pub controller_name: String,
    /// `Accepted`, `ResolvedRefs` and what else the controller reports.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

impl k8s_openapi::Resource for HttpRoute {
    const API_VERSION: &'static str = "gateway.networking.k8s.io/v1";
    const GROUP: &'static str = "gateway.networking.k8s.io";
    const KIND: &'static str = "HTTPRoute";
    const VERSION: &'static str = "v1";
    const URL_PATH_SEGMENT: &'static str = "httproutes";
    type Scope = k8s_openapi::NamespaceResourceScope;
}

impl k8s_openapi::Metadata for HttpRoute {
    type Ty = ObjectMeta;

    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// The HTTPRoute `name` in `namespace`, with `labels` and the exposure's annotations,
/// that attaches to the exposure's Gateways and sends its hostnames and path to `port`
/// of the Service `service_name`.
pub fn http_route(
    exposure: &HttpRouteExposure,
    name: &str,
    namespace: &str,
    labels: BTreeMap<String, String>,
    service_name: &str,
    port: u16,
) -> HttpRoute {
    let mut metadata = crate::build::object_meta(name, namespace, labels);
    if !exposure.annotations.is_empty() {
        metadata.annotations = Some(exposure.annotations.clone());
    }
    HttpRoute {
        metadata,
        spec: HttpRouteSpec {
            parent_refs: exposure.parent_refs.clone(),
            hostnames: exposure.hostnames.clone(),
            rules: vec![HttpRouteRule {
                matches: vec![HttpRouteMatch {
                    path: PathMatch {
                        type_: PATH_PREFIX.to_owned(),
                        value: exposure.path().to_owned(),
                    },
                }],
                backend_refs: vec![BackendRef {
                    name: service_name.to_owned(),
                    port,
                }],
            }],
        },
        status: None,
    }
}

/// Each Gateway's entry in `route`'s status.
fn parents(route: &HttpRoute) -> impl Iterator<Item = &RouteParentStatus> {
    route.status.iter().flat_map(|status| &status.parents)
}

/// The condition `type_` of a Gateway's entry `parent` in `route`'s status, if it speaks
/// of the route as it is now: one written for an older generation says nothing of the
/// current spec (a controller that sets no `observedGeneration` counts as current).
fn current_condition<'a>(
    route: &HttpRoute,
    parent: &'a RouteParentStatus,
    type_: &str,
) -> Option<&'a Condition> {
    parent
        .conditions
        .iter()
        .find(|condition| condition.type_ == type_)
        .filter(
            |condition| match (condition.observed_generation, route.metadata.generation) {
                (Some(observed), Some(current)) => observed >= current,
                _ => true,
            },
        )
}

/// What is wrong with the stored route, as its Gateways' controllers report it: each
/// Gateway with `Accepted` False (no listener admits the route: its namespace, kind or
/// hostnames) or `ResolvedRefs` False (the backend Service or port cannot be used),
/// with the reason and message. `None` when no Gateway refuses it, including before any
/// controller wrote status: a route whose Gateway does not exist, or whose Gateway no
/// installed controller serves, gets no status from anyone, so its absence cannot be
/// told from a controller that has not got round to it yet.
pub fn route_problem(desired: &HttpRoute, stored: Option<&HttpRoute>) -> Option<String> {
    let stored = current(desired, stored)?;
    let mut problems: Vec<String> = parents(stored)
        .flat_map(move |parent| {
            [
                ("Accepted", "did not accept the route"),
                ("ResolvedRefs", "could not resolve the route's backend"),
            ]
            .into_iter()
            .filter_map(move |(type_, what)| {
                let condition = current_condition(stored, parent, type_)
                    .filter(|condition| condition.status == "False")?;
                Some(format!(
                    "{} {what}: {}: {}",
                    parent.parent_ref.describe(),
                    condition.reason,
                    condition.message
                ))
            })
        })
        .collect();
    problems.sort();
    problems.dedup();
    (!problems.is_empty()).then(|| problems.join("; "))
}

/// The Warning while a Gateway refuses the stored route ([`route_problem`]): the
/// product itself serves, so the cluster stays Available, but the route carries no
/// traffic until the Gateway's or the spec's owner acts.
pub fn route_warning(
    desired: &HttpRoute,
    stored: Option<&HttpRoute>,
) -> Option<strata_status::SpecWarning> {
    route_problem(desired, stored).map(|problem| strata_status::SpecWarning {
        reason: HTTP_ROUTE_REFUSED,
        message: format!("The HTTPRoute carries no traffic: {problem}"),
    })
}

/// What discovery publishes (under `<PRODUCT>`[`DISCOVERY_KEY_SUFFIX`]) once a Gateway
/// took the stored route: `<host><path>`, such as `superset.example.com/`, with the
/// first hostname of the `desired` route that is not a wildcard. A Gateway accepts a
/// route when any of its hostnames matches a listener, so that first one must be one
/// the listener serves (documented with the field).
///
/// No scheme: whether clients speak HTTP or HTTPS is the Gateway listener's to say,
/// and the operator does not read Gateways. `None` while no Gateway has `Accepted`
/// True without `ResolvedRefs` False for the current spec, so discovery never names a
/// host nothing serves yet; and `None` when every hostname is a wildcard or there are
/// none, since the host clients dial is then the listener's, which the operator does
/// not know.
pub fn route_host_and_path(desired: &HttpRoute, stored: Option<&HttpRoute>) -> Option<String> {
    let stored = current(desired, stored)?;
    let host = desired
        .spec
        .hostnames
        .iter()
        .find(|hostname| !hostname.starts_with("*."))?;
    let path = desired
        .spec
        .rules
        .first()
        .and_then(|rule| rule.matches.first())
        .map_or("/", |matched| matched.path.value.as_str());
    let has = |parent: &RouteParentStatus, type_: &str, status: &str| {
        current_condition(stored, parent, type_).is_some_and(|condition| condition.status == status)
    };
    let served = parents(stored)
        .any(|parent| has(parent, "Accepted", "True") && !has(parent, "ResolvedRefs", "False"));
    served.then(|| format!("{host}{path}"))
}

/// The stored route, if it is the route as wanted now. Until the apply step writes a
/// changed spec, the cache holds the previous one, and its Gateways' status speaks of
/// that one: of hosts or paths no longer asked for.
fn current<'a>(desired: &HttpRoute, stored: Option<&'a HttpRoute>) -> Option<&'a HttpRoute> {
    stored.filter(|stored| stored.spec == desired.spec)
}

mod backend_tls;

pub use self::backend_tls::{
    BackendTlsPolicy, BackendTlsPolicySpec, BackendTlsValidation, LocalReference,
    backend_tls_policy,
};

#[cfg(test)]
mod tests;
