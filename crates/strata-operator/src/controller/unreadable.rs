//! Reporting a primary object the operator cannot read (see [`crate::guard`]).

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;
use kube::runtime::events::{Event, EventType};

use super::Context;
use crate::guard::Unreadable;

/// Tells the user that their object cannot be read, naming the field and the
/// problem, in an Event on the object and a log line.
pub(super) async fn report<P, X>(invalid: &Unreadable, context: &Context<X>)
where
    P: Resource<DynamicType = ()>,
{
    let namespace = invalid.metadata.namespace.clone().unwrap_or_default();
    let name = invalid.metadata.name.clone().unwrap_or_default();
    let note = format!(
        "{} {namespace}/{name} cannot be read by the operator: {}. Fix the field; the \
         operator reconciles the object again when it changes.",
        P::kind(&()),
        invalid.error
    );
    tracing::warn!(object = %format!("{namespace}/{name}"), reason = "InvalidObject", "{note}");
    context
        .metrics
        .observe_failure(&context.controller_name, "InvalidObject", "NeedsUser");
    let reference = ObjectReference {
        api_version: Some(P::api_version(&()).into_owned()),
        kind: Some(P::kind(&()).into_owned()),
        name: invalid.metadata.name.clone(),
        namespace: invalid.metadata.namespace.clone(),
        uid: invalid.metadata.uid.clone(),
        resource_version: invalid.metadata.resource_version.clone(),
        field_path: None,
    };
    let event = Event {
        type_: EventType::Warning,
        reason: "InvalidObject".to_owned(),
        note: Some(note),
        action: "Reconcile".to_owned(),
        secondary: None,
    };
    if let Err(error) = context.recorder.publish(&event, &reference).await {
        tracing::warn!(%error, "could not publish an Event");
    }
}
