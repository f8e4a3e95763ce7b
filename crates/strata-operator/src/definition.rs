//! One controller, declared once.
//!
//! A [`ControllerDef`] says everything about a controller that is not its reconcile
//! function: its name, the kinds it owns, whether it caches pods, the kinds it reads
//! and does not own ([`crate::reference`]), and its finalizer. `run` starts the
//! controller from this value ([`crate::controller::run_controller`]), and the Helm
//! chart's RBAC rules are derived from [`ControllerDef::registration`] of the same
//! value, so what the operator does and what it is allowed to do cannot drift apart.

use std::fmt::Debug;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Secret;
use kube::Resource;
use kube::api::ApiResource;
use serde::de::DeserializeOwned;

use crate::controller::ControllerSpec;
use crate::rbac::ControllerRegistration;
use crate::reference::{Content, Declared, Readable, ReferenceWatch, Target};

/// A controller of primary kind `P`: children, pods, references and finalizer.
pub struct ControllerDef<P>
where
    P: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    pub(crate) spec: ControllerSpec,
    pub(crate) references: Vec<Arc<dyn ReferenceWatch<P>>>,
    pub(crate) finalizer: Option<&'static str>,
}

impl<P> Clone for ControllerDef<P>
where
    P: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    fn clone(&self) -> Self {
        Self {
            spec: self.spec.clone(),
            references: self.references.clone(),
            finalizer: self.finalizer,
        }
    }
}

impl<P> Debug for ControllerDef<P>
where
    P: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerDef")
            .field("spec", &self.spec)
            .field("references", &self.references.len())
            .field("finalizer", &self.finalizer)
            .finish()
    }
}

impl<P> ControllerDef<P>
where
    P: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    /// A controller with the name, children and pod watching of `spec`, reading nothing
    /// else and using no finalizer.
    pub fn new(spec: ControllerSpec) -> Self {
        Self {
            spec,
            references: Vec::new(),
            finalizer: None,
        }
    }

    /// The controller reads objects of kind `R` that its primaries name
    /// (`targets` returns [`Target::Named`]) or select by label
    /// ([`Target::Selected`]); a change to one requeues the primaries that refer to it.
    #[must_use]
    pub fn reading<R>(self, targets: fn(&P) -> Vec<Target>) -> Self
    where
        R: Readable,
    {
        self.declare::<R>(Content::Full, targets, None)
    }

    /// Like [`reading`](Self::reading), but only a change to what `significance`
    /// hashes (or to the labels, or a deletion) requeues the primaries: for objects
    /// whose status changes often in ways the primaries do not read.
    #[must_use]
    pub fn reading_changes_of<R>(
        self,
        targets: fn(&P) -> Vec<Target>,
        significance: fn(&R) -> u64,
    ) -> Self
    where
        R: Readable,
    {
        self.declare::<R>(Content::Full, targets, Some(significance))
    }

    /// Like [`reading`](Self::reading), but only the objects' metadata is cached: for
    /// Secrets, whose values the operator passes to pods by reference and never holds.
    #[must_use]
    pub fn reading_metadata_of<R>(self, targets: fn(&P) -> Vec<Target>) -> Self
    where
        R: Readable,
    {
        self.declare::<R>(Content::MetadataOnly, targets, None)
    }

    /// The controller reads the key names of the Secrets its primaries name, so it
    /// can refuse a spec whose pods would fail on a missing key; every value is
    /// emptied as it arrives and never cached.
    #[must_use]
    pub fn reading_secret_keys(self, targets: fn(&P) -> Vec<Target>) -> Self {
        self.declare::<Secret>(Content::KeysOnly, targets, None)
    }

    fn declare<R>(
        mut self,
        content: Content,
        targets: fn(&P) -> Vec<Target>,
        significance: Option<fn(&R) -> u64>,
    ) -> Self
    where
        R: Readable,
    {
        self.references.push(Arc::new(Declared::<P, R> {
            content,
            targets,
            significance,
            kind: std::marker::PhantomData,
        }));
        self
    }

    /// The controller keeps the finalizer `name` on its primaries until its cleanup
    /// succeeds.
    #[must_use]
    pub fn with_finalizer(mut self, name: &'static str) -> Self {
        self.finalizer = Some(name);
        self
    }

    /// The controller's name.
    pub fn name(&self) -> &'static str {
        self.spec.name
    }

    /// The registered finalizer, if any.
    pub fn finalizer(&self) -> Option<&'static str> {
        self.finalizer
    }

    /// The controller as its RBAC rules see it.
    pub fn registration(&self) -> ControllerRegistration {
        let mut registration = ControllerRegistration::of::<P>(self.spec.clone());
        registration.references = self
            .references
            .iter()
            .map(|reference| reference.kind())
            .collect();
        registration.uses_finalizer = self.finalizer.is_some();
        registration
    }

    /// The kinds this controller reads without owning them.
    pub fn referenced_kinds(&self) -> Vec<ApiResource> {
        self.references
            .iter()
            .map(|reference| reference.kind().resource)
            .collect()
    }
}
