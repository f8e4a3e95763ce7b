//! The registry of served resources: which URL paths exist and how each kind behaves.
//!
//! A real API server learns its resources from compiled-in types and CRDs. Here a test
//! registers them, either from a typed [`kube::Resource`] or with an explicit [`ResourceInfo`].

use std::{collections::BTreeMap, fmt};

use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use kube::Resource;

/// Compile-time knowledge of whether a resource type lives in a namespace.
///
/// kube types carry their scope as an associated type; this trait turns it into a value
/// so that [`ResourceInfo::of`] can derive the scope instead of a test repeating it.
pub trait ScopeKind {
    /// `true` for namespaced resources, `false` for cluster-scoped ones.
    const NAMESPACED: bool;
}

impl ScopeKind for NamespaceResourceScope {
    const NAMESPACED: bool = true;
}

impl ScopeKind for ClusterResourceScope {
    const NAMESPACED: bool = false;
}

/// Identity of a stored resource: API group plus plural name (`statefulsets` in `apps`).
///
/// Versions are not part of the identity: one version per group and resource is served,
/// which is all our operators need.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceKey {
    /// API group, empty for the core group.
    pub group: String,
    /// Plural resource name as it appears in URLs.
    pub plural: String,
}

impl ResourceKey {
    /// Builds a key from a group and plural name.
    pub fn new(group: impl Into<String>, plural: impl Into<String>) -> Self {
        Self {
            group: group.into(),
            plural: plural.into(),
        }
    }

    /// Parses the kubectl notation `plural` or `plural.group` (`statefulsets.apps`, `pods`).
    ///
    /// This keeps test assertions short: `server.object("statefulsets.apps", "ns", "web")`.
    pub fn parse(resource: &str) -> Self {
        match resource.split_once('.') {
            Some((plural, group)) => Self::new(group, plural),
            None => Self::new("", resource),
        }
    }

    /// The key of a typed kube resource.
    pub fn of<K: Resource<DynamicType = ()>>() -> Self {
        Self::new(K::group(&()), K::plural(&()))
    }
}

impl fmt::Display for ResourceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            write!(f, "{}", self.plural)
        } else {
            write!(f, "{}.{}", self.plural, self.group)
        }
    }
}

/// Everything the server needs to know to serve one resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group, empty for the core group.
    pub group: String,
    /// Served version (`v1`).
    pub version: String,
    /// Kind written into `kind` of stored objects.
    pub kind: String,
    /// Plural name used in URLs.
    pub plural: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Whether `.status` is only writable through the `/status` subresource.
    pub status_subresource: bool,
    /// Whether PUT without `metadata.resourceVersion` is accepted. True for most built-ins,
    /// false for custom resources, as in the real server.
    pub allow_unconditional_update: bool,
}

impl ResourceInfo {
    /// A namespaced resource without a status subresource; refine with the builder methods.
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        kind: impl Into<String>,
        plural: impl Into<String>,
    ) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced: true,
            status_subresource: false,
            allow_unconditional_update: true,
        }
    }

    /// Derives group, version, kind, plural and scope from a typed kube resource.
    ///
    /// The status subresource is off; call [`ResourceInfo::with_status`] to turn it on.
    pub fn of<K>() -> Self
    where
        K: Resource<DynamicType = ()>,
        K::Scope: ScopeKind,
    {
        Self {
            group: K::group(&()).into_owned(),
            version: K::version(&()).into_owned(),
            kind: K::kind(&()).into_owned(),
            plural: K::plural(&()).into_owned(),
            namespaced: <K::Scope as ScopeKind>::NAMESPACED,
            status_subresource: false,
            allow_unconditional_update: true,
        }
    }

    /// Marks the resource as cluster-scoped.
    #[must_use]
    pub fn cluster_scoped(mut self) -> Self {
        self.namespaced = false;
        self
    }

    /// Turns on the status subresource.
    #[must_use]
    pub fn with_status(mut self) -> Self {
        self.status_subresource = true;
        self
    }

    /// Requires `metadata.resourceVersion` on PUT, like custom resources do.
    #[must_use]
    pub fn requiring_resource_version_on_update(mut self) -> Self {
        self.allow_unconditional_update = false;
        self
    }

    /// `v1` for the core group, `group/version` otherwise, as written into `apiVersion`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The storage key of this resource.
    pub fn key(&self) -> ResourceKey {
        ResourceKey::new(self.group.clone(), self.plural.clone())
    }
}

/// Lookup table from URL coordinates to resource definitions.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    by_key: BTreeMap<ResourceKey, ResourceInfo>,
}

impl Registry {
    /// Adds or replaces a resource definition.
    pub(crate) fn insert(&mut self, info: ResourceInfo) {
        self.by_key.insert(info.key(), info);
    }

    /// Finds the resource served at `/{group}/{version}/{plural}`.
    pub(crate) fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceInfo> {
        self.by_key
            .get(&ResourceKey::new(group, plural))
            .filter(|info| info.version == version)
    }

    /// The resources served under `group`/`version`, for discovery.
    pub(crate) fn in_group_version<'a>(
        &'a self,
        group: &'a str,
        version: &'a str,
    ) -> impl Iterator<Item = &'a ResourceInfo> {
        self.by_key
            .values()
            .filter(move |info| info.group == group && info.version == version)
    }

    /// Finds a resource by its storage key.
    pub(crate) fn get(&self, key: &ResourceKey) -> Option<&ResourceInfo> {
        self.by_key.get(key)
    }
}

/// The built-in kinds every server starts with: what our operators create or read.
pub(crate) fn builtins() -> Vec<ResourceInfo> {
    use k8s_openapi::api::{
        apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet},
        batch::v1::Job,
        coordination::v1::Lease,
        core::v1::{
            ConfigMap, Endpoints, Event, Namespace, Node, PersistentVolumeClaim, Pod, Secret,
            Service, ServiceAccount,
        },
        events::v1::Event as EventsV1Event,
        networking::v1::Ingress,
        policy::v1::PodDisruptionBudget,
        rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding},
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

    vec![
        ResourceInfo::of::<Pod>().with_status(),
        ResourceInfo::of::<Service>().with_status(),
        ResourceInfo::of::<ConfigMap>(),
        ResourceInfo::of::<Secret>(),
        ResourceInfo::of::<ServiceAccount>(),
        ResourceInfo::of::<PersistentVolumeClaim>().with_status(),
        ResourceInfo::of::<Endpoints>(),
        ResourceInfo::of::<Event>(),
        ResourceInfo::of::<Namespace>().with_status(),
        ResourceInfo::of::<Node>().with_status(),
        ResourceInfo::of::<EventsV1Event>(),
        ResourceInfo::of::<StatefulSet>().with_status(),
        ResourceInfo::of::<Deployment>().with_status(),
        ResourceInfo::of::<DaemonSet>().with_status(),
        ResourceInfo::of::<ReplicaSet>().with_status(),
        ResourceInfo::of::<Job>().with_status(),
        ResourceInfo::of::<PodDisruptionBudget>().with_status(),
        ResourceInfo::of::<Ingress>().with_status(),
        ResourceInfo::of::<Lease>(),
        ResourceInfo::of::<Role>(),
        ResourceInfo::of::<RoleBinding>(),
        ResourceInfo::of::<ClusterRole>(),
        ResourceInfo::of::<ClusterRoleBinding>(),
        ResourceInfo::of::<CustomResourceDefinition>().with_status(),
    ]
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::core_resource("pods", "", "pods")]
    #[case::grouped_resource("statefulsets.apps", "apps", "statefulsets")]
    #[case::dotted_group("leases.coordination.k8s.io", "coordination.k8s.io", "leases")]
    fn parses_kubectl_resource_notation(
        #[case] input: &str,
        #[case] group: &str,
        #[case] plural: &str,
    ) {
        assert_eq!(ResourceKey::parse(input), ResourceKey::new(group, plural));
        assert_eq!(ResourceKey::parse(input).to_string(), input);
    }

    #[test]
    fn builtins_know_their_scope_and_status() {
        let mut registry = Registry::default();
        for info in builtins() {
            registry.insert(info);
        }
        let sts = registry.lookup("apps", "v1", "statefulsets");
        assert_eq!(
            sts.map(|i| (i.namespaced, i.status_subresource)),
            Some((true, true))
        );
        let ns = registry.lookup("", "v1", "namespaces");
        assert_eq!(ns.map(|i| i.namespaced), Some(false));
        assert!(registry.lookup("apps", "v2", "statefulsets").is_none());
    }
}
