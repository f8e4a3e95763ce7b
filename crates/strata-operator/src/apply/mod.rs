//! Server-side apply of desired objects, and pruning of what is no longer desired.
//!
//! The apply step reads only from the watch caches ([`ChildCaches`]): an object
//! whose cached copy already matches is not sent at all, so a reconcile in which
//! nothing changed costs no write and no LIST. An object that drifted (someone
//! edited a field we set) fails the subset check and is applied again.
//!
//! Pruning deletes cached objects that this owner controls but no longer
//! desires. It never deletes PersistentVolumeClaims, whatever the caller
//! registers, nor create-once objects (`strata.dev/create-once`), whose
//! generated values a spec change must not destroy: data outlives every operator
//! decision.

mod compare;
mod desired;

use std::collections::BTreeSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions};
use kube::{Client, Resource, ResourceExt};

pub use self::compare::{DESIRED_HASH_ANNOTATION, content_hash, is_subset};
pub use self::desired::{
    ApplyMode, CREATE_ONCE_ANNOTATION, DesiredObject, DesiredObjectError, DesiredObjects, Fill,
    RETAINED_ANNOTATION,
};
use crate::cache::{ChildCaches, ChildKind};
use crate::error::{ErrorKind, ReconcileError, StepError, describe_kube_error, kube_error_kind};

/// Why the apply step failed; each variant's name is the Degraded reason.
#[derive(Debug, thiserror::Error, strum::IntoStaticStr)]
pub enum ApplyError {
    /// The owner was not stored yet, so children cannot point at its uid.
    #[error("the owner has no name or uid yet")]
    OwnerNotPersisted,
    /// A built object could not be turned into a request body: an operator bug.
    #[error("{0}")]
    BuildFailed(String),
    /// The API server refused or could not take an apply or create.
    #[error("{doing} failed: {}", describe_kube_error(source))]
    ApplyFailed {
        /// `applying Kind/name` or `creating Kind/name`.
        doing: String,
        /// The client error.
        source: kube::Error,
    },
    /// Fields Kubernetes cannot change on an existing object would change.
    #[error(
        "{}. Kubernetes cannot change these fields of an existing object. Revert the change, \
         or migrate by hand as docs/architecture.md (\"Changing storage\") describes; nothing \
         else was applied",
        changes.join("; ")
    )]
    ImmutableFieldChanged {
        /// `Kind/name: sentence` per refused change.
        changes: Vec<String>,
    },
    /// An object of a desired name exists and belongs to someone else: another
    /// owner, a user, another tool. Taking it over would overwrite it, and
    /// later garbage-collect it with this owner.
    #[error(
        "{}. This resource's objects would replace them; rename the resource, or delete or \
         rename the other objects. Nothing was applied",
        objects.join("; ")
    )]
    ObjectNotOwned {
        /// `Kind/name: whose it is` per object.
        objects: Vec<String>,
    },
    /// An object of a desired name belongs to another Strata product's cluster of the
    /// same name in this namespace: a ZookeeperCluster's and a TrinoCluster's
    /// discovery ConfigMaps, CA Secrets and monitoring objects are all `<name>...`.
    #[error(
        "{}. A cluster of another product with this name owns them; give one of the \
         two clusters another name. Nothing was applied",
        objects.join("; ")
    )]
    NameTakenByOtherProduct {
        /// `Kind/name: whose it is` per object.
        objects: Vec<String>,
    },
    /// An object no longer desired could not be deleted.
    #[error(
        "deleting {object}, which is no longer desired, failed: {}",
        describe_kube_error(source)
    )]
    PruneFailed {
        /// `Kind/name`.
        object: String,
        /// The client error.
        source: kube::Error,
    },
}

impl StepError for ApplyError {
    fn reason(&self) -> &'static str {
        self.into()
    }

    fn kind(&self) -> ErrorKind {
        match self {
            Self::OwnerNotPersisted => ErrorKind::Transient,
            Self::BuildFailed(_) => ErrorKind::OperatorBug,
            Self::ImmutableFieldChanged { .. }
            | Self::ObjectNotOwned { .. }
            | Self::NameTakenByOtherProduct { .. } => ErrorKind::NeedsUser,
            Self::ApplyFailed { source, .. } | Self::PruneFailed { source, .. } => {
                kube_error_kind(source)
            }
        }
    }
}

/// Refuses, before anything is written, changes the API server would reject because
/// the field is immutable (a StatefulSet's volume claim templates): the user must act,
/// and applying half of the cluster first would help nobody. Only objects that differ
/// from their cached copy are checked, so a steady-state reconcile parses nothing.
fn refuse_immutable_changes(
    changed: &[(DesiredObject, Option<std::sync::Arc<DynamicObject>>)],
) -> Result<(), ApplyError> {
    let problems: Vec<String> = changed
        .iter()
        .filter_map(|(object, cached)| Some((object, cached.as_ref()?)))
        .flat_map(|(object, existing)| {
            object
                .kind()
                .immutable_changes(object.value(), existing)
                .into_iter()
                .map(|change| format!("{}: {change}", object.display_name()))
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ApplyError::ImmutableFieldChanged { changes: problems })
    }
}

/// Who controls an existing object with these owner references, in words,
/// when it is not `owner_ref`.
fn foreign_control(references: &[OwnerReference], owner_ref: &OwnerReference) -> Option<String> {
    if is_controlled_by(references, owner_ref) {
        return None;
    }
    Some(
        match references
            .iter()
            .find(|reference| reference.controller == Some(true))
        {
            Some(controller) => format!("controlled by {}/{}", controller.kind, controller.name),
            None => "not controlled by any owner".to_owned(),
        },
    )
}

/// Whether the controller of an object with these references is a cluster of another
/// Strata product: another kind in a `strata.dev` API group.
fn controlled_by_other_product(references: &[OwnerReference], owner_ref: &OwnerReference) -> bool {
    let strata_group = |api_version: &str| {
        api_version
            .split_once('/')
            .is_some_and(|(group, _)| group.ends_with(".strata.dev"))
    };
    references.iter().any(|reference| {
        reference.controller == Some(true)
            && strata_group(&reference.api_version)
            && reference.kind != owner_ref.kind
    })
}

/// What the apply step knows of an object that exists already.
struct Existing {
    references: Vec<OwnerReference>,
    resource_version: Option<String>,
}

/// The references of a retained object without those to `owner_ref`'s object, or
/// `None` when none points at it. An earlier incarnation of the owner (same kind and
/// name and API group, another uid or version) counts too: its garbage collection
/// would take the object.
fn without_owner(
    references: &[OwnerReference],
    owner_ref: &OwnerReference,
) -> Option<Vec<OwnerReference>> {
    let group = |api_version: &str| {
        api_version
            .rsplit_once('/')
            .map(|(group, _)| group.to_owned())
    };
    let names_owner = |reference: &OwnerReference| {
        reference.uid == owner_ref.uid
            || (reference.kind == owner_ref.kind
                && reference.name == owner_ref.name
                && group(&reference.api_version) == group(&owner_ref.api_version))
    };
    references.iter().any(names_owner).then(|| {
        references
            .iter()
            .filter(|reference| !names_owner(reference))
            .cloned()
            .collect()
    })
}

/// `bytes` random bytes from the operating system, hex-encoded: the value of a
/// generated secret (Superset's `SECRET_KEY`, Trino's shared secret). Meant for
/// the `fill` of a create-once object, so it runs only when the object is created.
pub fn random_token(bytes: usize) -> Result<String, getrandom::Error> {
    let mut buffer = vec![0_u8; bytes];
    getrandom::fill(&mut buffer)?;
    Ok(hex::encode(buffer))
}

/// What one apply step did, for logs, Events, the status step and tests.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ApplyReport {
    /// Objects that were sent because they were missing or differed, as `Kind/name`.
    pub applied: Vec<String>,
    /// Objects whose cached copy already matched.
    pub unchanged: usize,
    /// Objects deleted because they are no longer desired, as `Kind/name`.
    pub pruned: Vec<String>,
    /// The applied objects as the API server returned them. The watch caches
    /// see them a moment later; the status step observes these instead, so a
    /// workload created in this reconcile is not reported as missing.
    pub responses: Vec<(ChildKind, DynamicObject)>,
}

impl ApplyReport {
    /// Whether the step sent any write to the API server.
    pub fn wrote_anything(&self) -> bool {
        !self.applied.is_empty() || !self.pruned.is_empty()
    }
}

/// Applies desired objects for one owner with one field manager.
pub struct Applier<'a> {
    client: &'a Client,
    caches: &'a ChildCaches,
    field_manager: &'a str,
}

impl std::fmt::Debug for Applier<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Applier")
            .field("field_manager", &self.field_manager)
            .finish_non_exhaustive()
    }
}

impl<'a> Applier<'a> {
    /// The field manager names the operator in `managedFields`, so one operator
    /// never fights another (or a user) over fields it does not set.
    pub fn new(client: &'a Client, caches: &'a ChildCaches, field_manager: &'a str) -> Self {
        Self {
            client,
            caches,
            field_manager,
        }
    }

    /// Applies every desired object that differs from its cached copy, then
    /// prunes owned objects that are no longer desired.
    ///
    /// Every object gets a controller owner reference to `owner`, so Kubernetes
    /// garbage-collects it with the owner and the controller is triggered when
    /// it changes; except retained objects ([`ApplyMode::is_retained`]), which
    /// outlive the owner on purpose and are adopted when they exist.
    pub async fn apply<K>(
        &self,
        owner: &K,
        desired: DesiredObjects,
        stopped: bool,
    ) -> Result<ApplyReport, ReconcileError>
    where
        K: Resource<DynamicType = ()>,
    {
        let owner_ref = owner
            .controller_owner_ref(&())
            .ok_or(ApplyError::OwnerNotPersisted)?;
        let namespace = owner.namespace().unwrap_or_default();
        let mut report = ApplyReport::default();
        let mut desired_keys = BTreeSet::new();

        let objects = desired
            .into_objects(stopped)
            .map_err(|error| ApplyError::BuildFailed(error.to_string()))?;
        let mut changed = Vec::new();
        let mut releases = Vec::new();
        let mut foreign = Vec::new();
        let mut other_product = false;
        for object in objects {
            let object = object.owned_by(&owner_ref);
            desired_keys.insert(object.key());
            let cached = self
                .caches
                .get(object.resource(), &namespace, object.name());
            let existing = match &cached {
                Some(cached) => Some(Existing {
                    references: cached.owner_references().to_vec(),
                    resource_version: cached.resource_version(),
                }),
                None => self.read_existing(&namespace, &object).await?,
            };
            let references = existing
                .as_ref()
                .map(|existing| existing.references.clone());
            if matches!(
                object.mode(),
                ApplyMode::CreateOnceRetained | ApplyMode::AdoptRetained
            ) {
                match existing {
                    None if object.mode() == ApplyMode::AdoptRetained => report.unchanged += 1,
                    None => changed.push((object, cached)),
                    Some(existing) => match without_owner(&existing.references, &owner_ref) {
                        Some(remaining) => {
                            releases.push((object, remaining, existing.resource_version));
                        }
                        None => report.unchanged += 1,
                    },
                }
                continue;
            }
            if object.mode() == ApplyMode::ApplyRetained {
                if let Some(existing) = existing
                    && let Some(remaining) = without_owner(&existing.references, &owner_ref)
                {
                    releases.push((object.clone(), remaining, existing.resource_version));
                }
                match cached {
                    Some(cached) if object.matches(&cached) => report.unchanged += 1,
                    cached => changed.push((object, cached)),
                }
                continue;
            }
            let whose = references
                .as_deref()
                .and_then(|references| foreign_control(references, &owner_ref));
            if let Some(whose) = whose {
                other_product |= references
                    .as_deref()
                    .is_some_and(|references| controlled_by_other_product(references, &owner_ref));
                foreign.push(format!("{} exists and is {whose}", object.display_name()));
                continue;
            }
            match cached {
                Some(cached) if object.matches(&cached) => report.unchanged += 1,
                _ if references.is_some() && object.mode().is_create_once() => {
                    report.unchanged += 1;
                }
                cached => changed.push((object, cached)),
            }
        }
        if other_product {
            return Err(ApplyError::NameTakenByOtherProduct { objects: foreign }.into());
        }
        if !foreign.is_empty() {
            return Err(ApplyError::ObjectNotOwned { objects: foreign }.into());
        }
        refuse_immutable_changes(&changed)?;
        for (object, remaining, resource_version) in releases {
            self.release(&namespace, &object, &remaining, resource_version)
                .await?;
            report.applied.push(format!(
                "{} (released from its owner)",
                object.display_name()
            ));
        }
        for (object, _) in changed {
            let response = match object.mode() {
                ApplyMode::Apply | ApplyMode::ApplyRetained => {
                    self.server_side_apply(&namespace, &object).await?
                }
                ApplyMode::CreateOnce
                | ApplyMode::CreateOnceRetained
                | ApplyMode::AdoptRetained => match self.create(&namespace, &object).await? {
                    Some(created) => created,
                    None => {
                        report.unchanged += 1;
                        continue;
                    }
                },
            };
            report.applied.push(object.display_name());
            report.responses.push((object.kind().clone(), response));
        }

        for stale in self.caches.controlled_by(&owner_ref, &namespace) {
            let (kind, object) = stale;
            let key = desired::object_key(&kind.resource, object.name_any().as_str());
            // A create-once object holds a generated value (a key, a shared secret)
            // that a spec change must never destroy: an owned one goes with its owner
            // through the garbage collector, a retained one stays.
            let created_once = object
                .annotations()
                .contains_key(desired::CREATE_ONCE_ANNOTATION);
            if desired_keys.contains(&key) || !kind.prunable() || created_once {
                continue;
            }
            self.delete(&kind, &namespace, &object).await?;
            report
                .pruned
                .push(format!("{}/{}", kind.resource.kind, object.name_any()));
        }
        report.pruned.sort();
        Ok(report)
    }

    /// The owner references and version of an object the caches do not hold, `None`
    /// when it does not exist (the usual case, before it is first applied). It may
    /// also be ours but not cached yet, or belong to someone else, which only a read
    /// can tell, since the caches hold only objects labelled as this operator's. Only
    /// metadata is read, so a Secret's data never is.
    async fn read_existing(
        &self,
        namespace: &str,
        object: &DesiredObject,
    ) -> Result<Option<Existing>, ApplyError> {
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, object.resource());
        let found = api
            .get_metadata_opt(object.name())
            .await
            .map_err(|source| ApplyError::ApplyFailed {
                doing: format!("reading {}", object.display_name()),
                source,
            })?;
        Ok(found.map(|found| Existing {
            references: found.metadata.owner_references.unwrap_or_default(),
            resource_version: found.metadata.resource_version,
        }))
    }

    async fn server_side_apply(
        &self,
        namespace: &str,
        object: &DesiredObject,
    ) -> Result<DynamicObject, ApplyError> {
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, object.resource());
        let params = PatchParams::apply(self.field_manager).force();
        let mut response = api
            .patch(
                object.name(),
                &params,
                &Patch::Apply(object.creation_value()),
            )
            .await
            .map_err(|source| ApplyError::ApplyFailed {
                doing: format!("applying {}", object.display_name()),
                source,
            })?;
        // The response's `types` may be absent; the status step needs the kind.
        response.types = Some(kube::api::TypeMeta {
            api_version: object.resource().api_version.clone(),
            kind: object.resource().kind.clone(),
        });
        // Kept as text until the status step observes it, like a cached copy.
        crate::cache::compact(&mut response);
        Ok(response)
    }

    /// Removes the owner's references from a retained object, which releases
    /// before this one created owned, so the garbage collector no longer takes it
    /// with the owner. Only `metadata.ownerReferences` is written; the content stays.
    ///
    /// The patch carries the version the references were read at, so a concurrent
    /// change of them fails with a conflict and is retried with a fresh read, rather
    /// than overwritten.
    async fn release(
        &self,
        namespace: &str,
        object: &DesiredObject,
        remaining: &[OwnerReference],
        resource_version: Option<String>,
    ) -> Result<(), ApplyError> {
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, object.resource());
        let params = PatchParams {
            field_manager: Some(self.field_manager.to_owned()),
            ..PatchParams::default()
        };
        let patch = serde_json::json!({"metadata": {
            "ownerReferences": remaining,
            "resourceVersion": resource_version,
        }});
        api.patch(object.name(), &params, &Patch::Merge(&patch))
            .await
            .map_err(|source| ApplyError::ApplyFailed {
                doing: format!("releasing {} from its owner", object.display_name()),
                source,
            })?;
        Ok(())
    }

    /// Creates a create-once object; `None` when it exists already (the cache
    /// had not seen it yet), which is fine: it is never patched anyway.
    async fn create(
        &self,
        namespace: &str,
        object: &DesiredObject,
    ) -> Result<Option<DynamicObject>, ApplyError> {
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, object.resource());
        let body: DynamicObject =
            serde_json::from_value(object.creation_value().clone()).map_err(|source| {
                ApplyError::BuildFailed(format!(
                    "{} is not a valid object: {source}",
                    object.display_name()
                ))
            })?;
        let params = PostParams {
            dry_run: false,
            field_manager: Some(self.field_manager.to_owned()),
        };
        match api.create(&params, &body).await {
            Ok(mut created) => {
                created.types = body.types;
                Ok(Some(created))
            }
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(None),
            Err(source) => Err(ApplyError::ApplyFailed {
                doing: format!("creating {}", object.display_name()),
                source,
            }),
        }
    }

    async fn delete(
        &self,
        kind: &ChildKind,
        namespace: &str,
        object: &DynamicObject,
    ) -> Result<(), ApplyError> {
        if !kind.prunable() {
            return Ok(());
        }
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, &kind.resource);
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: object.uid(),
                resource_version: None,
            }),
            ..DeleteParams::background()
        };
        let name = object.name_any();
        match api.delete(&name, &params).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(source) => Err(ApplyError::PruneFailed {
                object: format!("{}/{name}", kind.resource.kind),
                source,
            }),
        }
    }
}

/// Whether `owner_ref` is the controller reference of an object with these references.
pub(crate) fn is_controlled_by(references: &[OwnerReference], owner_ref: &OwnerReference) -> bool {
    references
        .iter()
        .any(|reference| reference.uid == owner_ref.uid && reference.controller == Some(true))
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn reference(kind: &str, name: &str, uid: &str, controller: bool) -> OwnerReference {
        OwnerReference {
            api_version: "superset.strata.dev/v1alpha1".to_owned(),
            kind: kind.to_owned(),
            name: name.to_owned(),
            uid: uid.to_owned(),
            controller: Some(controller),
            block_owner_deletion: Some(true),
        }
    }

    fn owner() -> OwnerReference {
        reference("SupersetCluster", "simple", "uid-now", true)
    }

    #[rstest]
    #[case::no_references(vec![], None)]
    #[case::the_owner_controls_it(vec![owner()], Some(vec![]))]
    #[case::an_earlier_incarnation_of_the_owner(
        vec![reference("SupersetCluster", "simple", "uid-before", true)],
        Some(vec![])
    )]
    #[case::the_owner_among_others(
        vec![reference("ConfigMap", "other", "uid-other", false), owner()],
        Some(vec![reference("ConfigMap", "other", "uid-other", false)])
    )]
    #[case::only_someone_else(
        vec![reference("SupersetCluster", "another", "uid-another", true)],
        None
    )]
    fn a_retained_object_is_released_only_from_its_owner(
        #[case] references: Vec<OwnerReference>,
        #[case] released: Option<Vec<OwnerReference>>,
    ) {
        assert_eq!(without_owner(&references, &owner()), released);
    }

    fn controller(api_version: &str, kind: &str) -> OwnerReference {
        OwnerReference {
            api_version: api_version.to_owned(),
            ..reference(kind, "simple", "uid-other", true)
        }
    }

    #[rstest]
    #[case::a_trino_cluster_of_the_same_name(
        controller("trino.strata.dev/v1alpha1", "TrinoCluster"),
        true
    )]
    #[case::another_superset_cluster(
        controller("superset.strata.dev/v1alpha1", "SupersetCluster"),
        false
    )]
    #[case::a_deployment(controller("apps/v1", "Deployment"), false)]
    #[case::an_owner_that_is_no_controller(
        OwnerReference { controller: Some(false), ..controller("trino.strata.dev/v1alpha1", "TrinoCluster") },
        false
    )]
    fn an_object_of_another_products_cluster_is_told_apart(
        #[case] reference: OwnerReference,
        #[case] other_product: bool,
    ) {
        assert_eq!(
            controlled_by_other_product(&[reference], &owner()),
            other_product
        );
    }
}
