//! Finalizers, the same for every controller that registers one.

use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;

use kube::Resource;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::finalizer;
use serde::de::DeserializeOwned;

use super::Context;
use crate::error::{ErrorKind, ReconcileError, StepError, describe_kube_error, kube_error_kind};

/// Why keeping a finalizer failed; each variant's name is the Degraded reason.
#[derive(Debug, thiserror::Error, strum::IntoStaticStr)]
pub enum FinalizerError {
    /// The controller's code uses a finalizer its definition does not declare.
    #[error("the {controller} controller uses a finalizer it did not register")]
    FinalizerNotRegistered {
        /// The controller.
        controller: String,
    },
    /// Adding or removing the finalizer was refused or failed.
    #[error(
        "updating the finalizer {name} failed: {}",
        describe_kube_error(source)
    )]
    FinalizerUpdateFailed {
        /// The finalizer.
        name: &'static str,
        /// The client error.
        source: kube::Error,
    },
    /// kube's finalizer helper refused the object (no name, invalid finalizer).
    #[error("{0}")]
    FinalizerFailed(String),
}

impl StepError for FinalizerError {
    fn reason(&self) -> &'static str {
        self.into()
    }

    fn kind(&self) -> ErrorKind {
        match self {
            Self::FinalizerUpdateFailed { source, .. } => kube_error_kind(source),
            Self::FinalizerNotRegistered { .. } | Self::FinalizerFailed(_) => {
                ErrorKind::OperatorBug
            }
        }
    }
}

impl<X> Context<X> {
    /// Runs `handle` under the controller's registered finalizer: `Apply` for a
    /// live object (the finalizer is added first), `Cleanup` once it is being
    /// deleted (the finalizer is removed when cleanup succeeds). Failures to
    /// update the finalizer are API errors; a controller without a registered
    /// finalizer calling this is an operator bug, not the user's.
    pub async fn finalized<K, Fut>(
        &self,
        object: Arc<K>,
        handle: impl FnOnce(finalizer::Event<K>) -> Fut,
    ) -> Result<Action, ReconcileError>
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + serde::Serialize
            + Debug,
        Fut: Future<Output = Result<Action, ReconcileError>>,
    {
        let Some(name) = self.finalizer else {
            return Err(FinalizerError::FinalizerNotRegistered {
                controller: self.controller_name.clone(),
            }
            .into());
        };
        let api: Api<K> = Api::namespaced(
            self.client.clone(),
            object.meta().namespace.as_deref().unwrap_or_default(),
        );
        finalizer::finalizer(&api, name, object, handle)
            .await
            .map_err(|error| match error {
                finalizer::Error::ApplyFailed(error) | finalizer::Error::CleanupFailed(error) => {
                    error
                }
                finalizer::Error::AddFinalizer(source)
                | finalizer::Error::RemoveFinalizer(source) => {
                    FinalizerError::FinalizerUpdateFailed { name, source }.into()
                }
                other => FinalizerError::FinalizerFailed(other.to_string()).into(),
            })
    }
}
