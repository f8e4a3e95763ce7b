//! Parsing of request URLs into resource coordinates and query parameters.
//!
//! Kept free of server state so the URL grammar can be tested on its own.

use std::collections::BTreeMap;

/// The coordinates a resource URL names, before the registry is consulted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ResourcePath {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) namespace: Option<String>,
    pub(crate) plural: String,
    pub(crate) name: Option<String>,
    pub(crate) subresource: Option<String>,
}

/// Splits `/api/v1/...` and `/apis/{group}/{version}/...` into [`ResourcePath`].
///
/// Returns `None` for paths that do not name a resource (discovery, `/version`, garbage).
pub(crate) fn parse_path(path: &str) -> Option<ResourcePath> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segments.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        // `/api/v1/namespaces/{ns}[/status]` is the Namespace object itself.
        ["namespaces", _, "status" | "finalize"] => (None, rest),
        ["namespaces", ns, tail @ ..] if !tail.is_empty() => (Some((*ns).to_owned()), tail),
        _ => (None, rest),
    };
    let (plural, name, subresource) = match rest {
        [plural] => (*plural, None, None),
        [plural, name] => (*plural, Some(*name), None),
        [plural, name, sub] => (*plural, Some(*name), Some(*sub)),
        _ => return None,
    };
    if plural.is_empty() || name.is_some_and(str::is_empty) {
        return None;
    }
    Some(ResourcePath {
        group: group.to_owned(),
        version: version.to_owned(),
        namespace,
        plural: plural.to_owned(),
        name: name.map(decode),
        subresource: subresource.map(str::to_owned),
    })
}

/// Percent-decodes one path segment (names rarely need it, but `:` in RBAC names does).
fn decode(segment: &str) -> String {
    form_urlencoded::parse(format!("x={segment}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| segment.to_owned())
}

/// Query parameters of a request, decoded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Query {
    params: BTreeMap<String, String>,
}

impl Query {
    /// Decodes a raw query string (without the leading `?`).
    pub(crate) fn parse(raw: Option<&str>) -> Self {
        let params = raw
            .map(|q| {
                form_urlencoded::parse(q.as_bytes())
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect()
            })
            .unwrap_or_default();
        Self { params }
    }

    /// A parameter's value, treating an empty value as absent.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.params
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// A boolean parameter (`true`/`1`).
    pub(crate) fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true" | "1"))
    }

    /// A numeric parameter; unparsable values count as absent.
    pub(crate) fn number(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(|v| v.parse().ok())
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn rp(
        group: &str,
        namespace: Option<&str>,
        plural: &str,
        name: Option<&str>,
        subresource: Option<&str>,
    ) -> ResourcePath {
        ResourcePath {
            group: group.into(),
            version: "v1".into(),
            namespace: namespace.map(Into::into),
            plural: plural.into(),
            name: name.map(Into::into),
            subresource: subresource.map(Into::into),
        }
    }

    #[rstest]
    #[case::core_namespaced_list(
        "/api/v1/namespaces/ns/pods",
        rp("", Some("ns"), "pods", None, None)
    )]
    #[case::core_get(
        "/api/v1/namespaces/ns/pods/p",
        rp("", Some("ns"), "pods", Some("p"), None)
    )]
    #[case::status(
        "/apis/apps/v1/namespaces/ns/statefulsets/s/status",
        rp("apps", Some("ns"), "statefulsets", Some("s"), Some("status"))
    )]
    #[case::all_namespaces(
        "/apis/apps/v1/statefulsets",
        rp("apps", None, "statefulsets", None, None)
    )]
    #[case::namespace_object("/api/v1/namespaces/ns", rp("", None, "namespaces", Some("ns"), None))]
    #[case::namespace_status(
        "/api/v1/namespaces/ns/status",
        rp("", None, "namespaces", Some("ns"), Some("status"))
    )]
    #[case::namespace_list("/api/v1/namespaces", rp("", None, "namespaces", None, None))]
    #[case::cluster_scoped_get(
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/a%3Ab",
        rp("rbac.authorization.k8s.io", None, "clusterroles", Some("a:b"), None)
    )]
    fn parses_resource_paths(#[case] path: &str, #[case] expected: ResourcePath) {
        assert_eq!(parse_path(path), Some(expected));
    }

    #[rstest]
    #[case::version("/version")]
    #[case::discovery_root("/apis")]
    #[case::group_discovery("/apis/apps/v1")]
    #[case::too_deep("/api/v1/namespaces/ns/pods/p/status/extra")]
    fn rejects_non_resource_paths(#[case] path: &str) {
        assert_eq!(parse_path(path), None);
    }

    #[test]
    fn query_decodes_and_ignores_empty_values() {
        let q = Query::parse(Some(
            "labelSelector=a%3Db%2Cc&watch=true&limit=&timeoutSeconds=5",
        ));
        assert_eq!(q.get("labelSelector"), Some("a=b,c"));
        assert!(q.flag("watch"));
        assert_eq!(q.get("limit"), None);
        assert_eq!(q.number("timeoutSeconds"), Some(5));
    }
}
