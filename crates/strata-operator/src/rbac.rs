//! Least-privilege RBAC rules, derived from the same registration the
//! controllers run with.
//!
//! An operator describes its controllers once, as an [`OperatorRegistration`].
//! Its `run` starts the controllers from that value, and the Helm chart's
//! ClusterRole (or Role) is [`rules`] of that same value, so the permissions
//! cannot drift from what the code does. The rules grant exactly the requests
//! the shared machinery makes:
//!
//! | kind | verbs | why |
//! | --- | --- | --- |
//! | primary | list, watch | the controller's watch |
//! | primary | patch | adding and removing a finalizer, when used |
//! | primary `/status` | patch | server-side apply of the status |
//! | child | list, watch | the watch caches of owned objects |
//! | child | get | reading an object the caches do not hold before it is first applied, so one that belongs to someone else is never taken over |
//! | child | create, patch | server-side apply; an apply that creates needs `create` too |
//! | child | delete | pruning, never for PersistentVolumeClaims |
//! | pods | list, watch | the pod cache of controllers with `watch_pods` |
//! | pods | delete | restarting pods one at a time (`restarts_pods`), and replacing pods stuck on an older revision, for controllers that watch the pods of their StatefulSets ([`ControllerSpec::deletes_pods`](crate::controller::ControllerSpec::deletes_pods)) |
//! | referenced kind | list, watch | e.g. the clusters a ZNode controller reads, Secrets named by a cluster (metadata only) |
//! | `events.k8s.io` events | create, patch | `EventPublisher` creates, then patches a series |
//!
//! There are no wildcards. `get` is granted only on child kinds: every other
//! read goes through a watch cache, which needs only list and watch.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Resource;
use kube::api::ApiResource;

use crate::controller::ControllerSpec;
use crate::reference::{Content, ReferencedKind};

/// One controller of an operator, with everything its permissions depend on.
#[derive(Clone, Debug)]
pub struct ControllerRegistration {
    /// The reconciled kind.
    pub primary: ApiResource,
    /// Name, child kinds and pod watching, as `run_controller` takes them.
    pub spec: ControllerSpec,
    /// Kinds read without owning them, e.g. the clusters a ZNode controller
    /// follows or the Secrets a cluster names ([`crate::reference`]).
    pub references: Vec<ReferencedKind>,
    /// Whether the controller adds and removes a finalizer on its primary
    /// objects (a patch of the primary itself).
    pub uses_finalizer: bool,
}

impl ControllerRegistration {
    /// A controller for the typed kind `K`, watching nothing extra and using
    /// no finalizer.
    pub fn of<K: Resource<DynamicType = ()>>(spec: ControllerSpec) -> Self {
        Self {
            primary: ApiResource::erase::<K>(&()),
            spec,
            references: Vec::new(),
            uses_finalizer: false,
        }
    }

    /// Adds `W` to the kinds read by name, as a hand-written registration
    /// (tests, fixtures) states it; operators derive theirs from a
    /// [`ControllerDef`](crate::definition::ControllerDef).
    #[must_use]
    pub fn watching<W: Resource<DynamicType = ()>>(mut self) -> Self {
        self.references.push(ReferencedKind {
            resource: ApiResource::erase::<W>(&()),
            content: Content::Full,
        });
        self
    }

    /// Marks the controller as one that keeps a finalizer on its primaries.
    #[must_use]
    pub fn with_finalizer(mut self) -> Self {
        self.uses_finalizer = true;
        self
    }
}

/// Every controller one operator process runs; the single source of its
/// watches and of its Helm chart's RBAC rules.
#[derive(Clone, Debug, Default)]
pub struct OperatorRegistration {
    /// The controllers, in the order the operator starts them.
    pub controllers: Vec<ControllerRegistration>,
}

/// An RBAC verb the rules may grant, in the order `kubectl` lists them.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, strum::Display, strum::EnumString,
)]
#[strum(serialize_all = "lowercase")]
pub enum Verb {
    /// Read one object.
    Get,
    /// Read a collection.
    List,
    /// Follow a collection.
    Watch,
    /// Create an object (also needed by an apply that creates).
    Create,
    /// Replace an object.
    Update,
    /// Patch an object, including server-side apply.
    Patch,
    /// Delete one object.
    Delete,
}

/// An API group and resource, with the subresource joined as RBAC spells it
/// (`zookeeperclusters/status`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupResource {
    /// API group, `""` for the core group.
    pub group: String,
    /// Plural resource name, optionally followed by `/subresource`.
    pub resource: String,
}

impl GroupResource {
    /// A resource in `group`.
    pub fn new(group: impl Into<String>, resource: impl Into<String>) -> Self {
        Self {
            group: group.into(),
            resource: resource.into(),
        }
    }

    fn of(resource: &ApiResource) -> Self {
        Self::new(resource.group.clone(), resource.plural.clone())
    }

    fn status_of(resource: &ApiResource) -> Self {
        Self::new(
            resource.group.clone(),
            format!("{}/status", resource.plural),
        )
    }
}

/// Every permission an operator needs, as resource to verbs; the expanded form
/// of [`rules`], convenient for comparisons in tests.
pub fn permissions(registration: &OperatorRegistration) -> BTreeMap<GroupResource, BTreeSet<Verb>> {
    let mut granted: BTreeMap<GroupResource, BTreeSet<Verb>> = BTreeMap::new();
    let mut grant = |resource: GroupResource, verbs: &[Verb]| {
        granted.entry(resource).or_default().extend(verbs);
    };
    for controller in &registration.controllers {
        grant(
            GroupResource::of(&controller.primary),
            &[Verb::List, Verb::Watch],
        );
        if controller.uses_finalizer {
            grant(GroupResource::of(&controller.primary), &[Verb::Patch]);
        }
        grant(
            GroupResource::status_of(&controller.primary),
            &[Verb::Patch],
        );
        for child in &controller.spec.child_kinds {
            let resource = GroupResource::of(&child.resource);
            grant(
                resource.clone(),
                &[
                    Verb::Get,
                    Verb::List,
                    Verb::Watch,
                    Verb::Create,
                    Verb::Patch,
                ],
            );
            if child.prunable() {
                grant(resource, &[Verb::Delete]);
            }
        }
        if controller.spec.watch_pods {
            grant(
                GroupResource::of(&ApiResource::erase::<Pod>(&())),
                &[Verb::List, Verb::Watch],
            );
        }
        if controller.spec.deletes_pods() {
            grant(
                GroupResource::of(&ApiResource::erase::<Pod>(&())),
                &[Verb::Delete],
            );
        }
        for reference in &controller.references {
            grant(
                GroupResource::of(&reference.resource),
                &[Verb::List, Verb::Watch],
            );
        }
        grant(
            GroupResource::of(&ApiResource::erase::<Event>(&())),
            &[Verb::Create, Verb::Patch],
        );
    }
    granted
}

/// The RBAC rules of an operator: one rule per API group and set of verbs,
/// listing the resources that need exactly those verbs.
///
/// Pure and deterministic (sorted by group, then resources), so the generated
/// chart diffs cleanly.
pub fn rules(registration: &OperatorRegistration) -> Vec<PolicyRule> {
    let mut merged: BTreeMap<(String, Vec<Verb>), BTreeSet<String>> = BTreeMap::new();
    for (resource, verbs) in permissions(registration) {
        merged
            .entry((resource.group, verbs.into_iter().collect()))
            .or_default()
            .insert(resource.resource);
    }
    let mut rules: Vec<PolicyRule> = merged
        .into_iter()
        .map(|((group, verbs), resources)| PolicyRule {
            api_groups: Some(vec![group]),
            resources: Some(resources.into_iter().collect()),
            verbs: verbs.iter().map(ToString::to_string).collect(),
            ..PolicyRule::default()
        })
        .collect();
    rules.sort_by(|a, b| (&a.api_groups, &a.resources).cmp(&(&b.api_groups, &b.resources)));
    rules
}

/// The rules of the leader-election Role in the operator's own namespace: the
/// requests [`crate::leader`] makes on its Lease, and nothing else. They are
/// not part of [`rules`], because the Lease lives where the operator runs, not
/// in the namespaces it watches.
pub fn lease_rules() -> Vec<PolicyRule> {
    let lease = ApiResource::erase::<Lease>(&());
    vec![PolicyRule {
        api_groups: Some(vec![lease.group]),
        resources: Some(vec![lease.plural]),
        verbs: crate::leader::LEASE_VERBS
            .iter()
            .map(ToString::to_string)
            .collect(),
        ..PolicyRule::default()
    }]
}

/// The rules of the chart's CRD ClusterRole: read and server-side apply the
/// operator's own CustomResourceDefinitions, by name and nothing else
/// ([`crate::crds`]). `create` is not granted: it cannot be limited to names,
/// and Helm installs the CRDs before the operator first starts.
pub fn crd_rules(crds: &[CustomResourceDefinition]) -> Vec<PolicyRule> {
    let resource = ApiResource::erase::<CustomResourceDefinition>(&());
    let mut names: Vec<String> = crds
        .iter()
        .filter_map(|crd| crd.metadata.name.clone())
        .collect();
    names.sort();
    vec![PolicyRule {
        api_groups: Some(vec![resource.group]),
        resources: Some(vec![resource.plural]),
        resource_names: Some(names),
        verbs: crate::crds::CRD_VERBS
            .iter()
            .map(ToString::to_string)
            .collect(),
        ..PolicyRule::default()
    }]
}

/// Whether `rules` allow `verb` on `resource` (with `/subresource`) in `group`,
/// by the RBAC matching rules: exact names, `*` matches anything.
///
/// Tests use it to check every request an operator made against a chart.
pub fn allows(rules: &[PolicyRule], group: &str, resource: &str, verb: &str) -> bool {
    let matches = |values: Option<&Vec<String>>, wanted: &str| {
        values.is_some_and(|values| values.iter().any(|value| value == wanted || value == "*"))
    };
    rules.iter().any(|rule| {
        matches(rule.api_groups.as_ref(), group)
            && matches(rule.resources.as_ref(), resource)
            && matches(Some(&rule.verbs), verb)
            && rule.resource_names.as_ref().is_none_or(Vec::is_empty)
    })
}

#[cfg(test)]
mod tests;
