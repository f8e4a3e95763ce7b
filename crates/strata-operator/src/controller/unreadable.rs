//! Reporting a primary object the operator cannot read (see [`crate::guard`]).

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Resource;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::runtime::events::{Event, EventType};
use strata_status::{
    ClusterCondition, ConditionStatus, ConditionType, ConditionUpdate, Reason, apply_updates,
};

use super::Context;
use crate::guard::Unreadable;

/// Tells the user that their object cannot be read, naming the field and the
/// problem: Degraded True (`InvalidSpec`) in its status, an Event on the object and a
/// log line.
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
        note: Some(note.clone()),
        action: "Reconcile".to_owned(),
        secondary: None,
    };
    if let Err(error) = context.recorder.publish(&event, &reference).await {
        tracing::warn!(%error, "could not publish an Event");
    }
    let conditions = degraded_conditions(invalid, &note, Time(jiff::Timestamp::now()));
    if conditions != invalid.conditions
        && let Err(error) = write_conditions::<P, X>(invalid, &conditions, context).await
    {
        tracing::warn!(object = %format!("{namespace}/{name}"), %error, "could not write the status");
    }
}

/// The stored conditions with Degraded True (`InvalidSpec`) saying `note`; the others
/// stay as stored, since nothing was reconciled.
fn degraded_conditions(invalid: &Unreadable, note: &str, now: Time) -> Vec<ClusterCondition> {
    let degraded = ConditionUpdate::new(
        ConditionType::Degraded,
        ConditionStatus::True,
        Reason::INVALID_SPEC,
        note,
    );
    apply_updates(
        &invalid.conditions,
        [degraded],
        now,
        invalid.metadata.generation,
    )
}

/// A JSON merge patch of `status.conditions` alone, through a dynamic API: the object
/// cannot be read back as `P`, and the other status fields keep their values.
async fn write_conditions<P, X>(
    invalid: &Unreadable,
    conditions: &[ClusterCondition],
    context: &Context<X>,
) -> Result<(), kube::Error>
where
    P: Resource<DynamicType = ()>,
{
    let resource = ApiResource::erase::<P>(&());
    let api: Api<DynamicObject> = Api::namespaced_with(
        context.client.clone(),
        invalid.metadata.namespace.as_deref().unwrap_or_default(),
        &resource,
    );
    let patch = serde_json::json!({"status": {"conditions": conditions}});
    api.patch_status(
        invalid.metadata.name.as_deref().unwrap_or_default(),
        &PatchParams {
            field_manager: Some(context.field_manager.clone()),
            ..PatchParams::default()
        },
        &Patch::Merge(&patch),
    )
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn at(seconds: i64) -> Time {
        Time(jiff::Timestamp::from_second(seconds).unwrap_or_default())
    }

    #[test]
    fn only_degraded_changes_and_the_other_conditions_stay_as_stored() {
        let stored = apply_updates(
            &[],
            [
                ConditionUpdate::new(
                    ConditionType::Available,
                    ConditionStatus::True,
                    Reason::AS_EXPECTED,
                    "3 of 3 available.",
                ),
                ConditionUpdate::new(
                    ConditionType::Degraded,
                    ConditionStatus::False,
                    Reason::AS_EXPECTED,
                    "No failing pods.",
                ),
            ],
            at(100),
            Some(1),
        );
        let invalid = Unreadable {
            metadata: ObjectMeta {
                generation: Some(2),
                ..ObjectMeta::default()
            },
            error: "spec.servers.replicas: invalid type".to_owned(),
            conditions: stored.clone(),
        };
        let next = degraded_conditions(&invalid, "cannot be read", at(200));
        let find = |conditions: &[ClusterCondition], wanted: ConditionType| {
            conditions
                .iter()
                .find(|condition| condition.type_.known() == Some(wanted))
                .cloned()
        };
        assert_eq!(
            find(&next, ConditionType::Available),
            find(&stored, ConditionType::Available)
        );
        let degraded = find(&next, ConditionType::Degraded).unwrap_or_else(|| panic!("Degraded"));
        assert_eq!(degraded.status, ConditionStatus::True);
        assert_eq!(degraded.reason, "InvalidSpec");
        assert_eq!(degraded.message, "cannot be read");
        assert_eq!(degraded.observed_generation, Some(2));
        assert_eq!(degraded.last_transition_time, Some(at(200)));
    }
}
