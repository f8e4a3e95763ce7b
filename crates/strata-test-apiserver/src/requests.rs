//! The request log: every resource request as the (verb, group, resource, subresource,
//! namespace) tuple that Kubernetes RBAC authorizes.
//!
//! Tests compare this log against Helm chart rules, so verbs are exactly the RBAC verbs
//! (server-side apply is a `patch`, a GET without a name is a `list` or `watch`).

use std::fmt;

/// An RBAC verb.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    strum::Display,
    strum::EnumString,
    strum::AsRefStr,
)]
#[strum(serialize_all = "lowercase")]
pub enum Verb {
    /// GET of one object.
    Get,
    /// GET of a collection.
    List,
    /// GET of a collection with `watch=true`.
    Watch,
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH, including server-side apply.
    Patch,
    /// DELETE of one object.
    Delete,
    /// DELETE of a collection.
    #[strum(serialize = "deletecollection")]
    DeleteCollection,
}

impl Verb {
    /// Whether the verb only reads (get, list, watch).
    pub fn is_read(self) -> bool {
        matches!(self, Self::Get | Self::List | Self::Watch)
    }

    /// Whether the verb changes state (create, update, patch, delete, deletecollection).
    pub fn is_write(self) -> bool {
        matches!(
            self,
            Self::Create | Self::Update | Self::Patch | Self::Delete | Self::DeleteCollection
        )
    }
}

/// One request as RBAC sees it, plus the details tests like to assert on.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestRecord {
    /// RBAC verb.
    pub verb: Verb,
    /// API group, "" for core.
    pub group: String,
    /// Plural resource name.
    pub resource: String,
    /// `status` for `/status` requests.
    pub subresource: Option<String>,
    /// Namespace from the URL; `None` for cluster-scoped and all-namespaces requests.
    pub namespace: Option<String>,
    /// Object name for single-object requests.
    pub name: Option<String>,
    /// `fieldManager` query parameter, if sent.
    pub field_manager: Option<String>,
    /// Whether this PATCH was a server-side apply.
    pub apply: bool,
    /// Whether the client asked for `PartialObjectMetadata` (metadata-only reads).
    pub metadata_only: bool,
    /// Who sent it: the name given to [`crate::TestApiServer::client_as`], `None`
    /// for [`crate::TestApiServer::client`].
    pub user: Option<String>,
}

impl RequestRecord {
    /// Whether the record addresses `resource`, given as `plural`, `plural.group`, optionally
    /// followed by `/subresource`.
    ///
    /// Like an RBAC rule, `statefulsets` does not cover `statefulsets/status`. A plain plural
    /// matches any group; `plural.group` pins the group (`events` vs `events.events.k8s.io`).
    pub fn is_for(&self, resource: &str) -> bool {
        let (name, subresource) = match resource.split_once('/') {
            Some((name, sub)) => (name, Some(sub)),
            None => (resource, None),
        };
        self.subresource.as_deref() == subresource && self.names_resource(name)
    }

    /// Like [`RequestRecord::is_for`] but ignoring the subresource.
    pub fn is_for_any_subresource(&self, resource: &str) -> bool {
        self.names_resource(resource.split('/').next().unwrap_or_default())
    }

    fn names_resource(&self, name: &str) -> bool {
        match name.split_once('.') {
            Some((plural, group)) => self.resource == plural && self.group == group,
            None => self.resource == name,
        }
    }

    /// `plural.group[/subresource]`, the spelling RBAC rules and `is_for` use.
    pub fn qualified_resource(&self) -> String {
        let mut out = self.resource.clone();
        if !self.group.is_empty() {
            out = format!("{out}.{}", self.group);
        }
        if let Some(sub) = &self.subresource {
            out = format!("{out}/{sub}");
        }
        out
    }
}

impl fmt::Display for RequestRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.verb, self.qualified_resource())?;
        if let Some(ns) = &self.namespace {
            write!(f, " -n {ns}")?;
        }
        if let Some(name) = &self.name {
            write!(f, " {name}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn record(group: &str, resource: &str, sub: Option<&str>) -> RequestRecord {
        RequestRecord {
            verb: Verb::Patch,
            group: group.into(),
            resource: resource.into(),
            subresource: sub.map(Into::into),
            namespace: Some("ns".into()),
            name: Some("web".into()),
            field_manager: None,
            apply: true,
            metadata_only: false,
            user: None,
        }
    }

    #[rstest]
    #[case::plain_plural(record("apps", "statefulsets", None), "statefulsets", true)]
    #[case::qualified(record("apps", "statefulsets", None), "statefulsets.apps", true)]
    #[case::wrong_group(record("apps", "statefulsets", None), "statefulsets.batch", false)]
    #[case::main_does_not_cover_status(
        record("apps", "statefulsets", Some("status")),
        "statefulsets",
        false
    )]
    #[case::status_subresource(
        record("apps", "statefulsets", Some("status")),
        "statefulsets/status",
        true
    )]
    #[case::core_events_vs_events_group(
        record("events.k8s.io", "events", None),
        "events.events.k8s.io",
        true
    )]
    fn is_for_follows_rbac_resource_names(
        #[case] r: RequestRecord,
        #[case] resource: &str,
        #[case] expected: bool,
    ) {
        assert_eq!(r.is_for(resource), expected);
    }

    #[test]
    fn display_reads_like_kubectl() {
        assert_eq!(
            record("apps", "statefulsets", Some("status")).to_string(),
            "patch statefulsets.apps/status -n ns web"
        );
        assert_eq!(Verb::DeleteCollection.to_string(), "deletecollection");
        assert!(Verb::Patch.is_write() && !Verb::Watch.is_write());
    }
}
