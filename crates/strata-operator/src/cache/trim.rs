//! What the watch caches keep of each object: only what reconciles read.

use std::collections::BTreeMap;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, TypeMeta};
use kube::core::PartialObjectMeta;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::ChildKind;
use crate::roll::stateless::RESTART_TOGETHER_ANNOTATION;

/// The watch events of one child kind, trimmed; for metadata-only kinds
/// (Secrets) the API sends metadata alone, so the operator never receives
/// a Secret value, even of the Secrets it generated.
pub(super) fn kind_events(
    client: &Client,
    kind: &ChildKind,
    namespace: Option<&str>,
    config: watcher::Config,
) -> futures::stream::BoxStream<'static, Result<watcher::Event<DynamicObject>, watcher::Error>> {
    if kind.metadata_only() {
        let api: Api<PartialObjectMeta<DynamicObject>> = match namespace {
            Some(namespace) => Api::namespaced_with(client.clone(), namespace, &kind.resource),
            None => Api::all_with(client.clone(), &kind.resource),
        };
        let types = TypeMeta {
            api_version: kind.resource.api_version.clone(),
            kind: kind.resource.kind.clone(),
        };
        let as_object = move |partial: PartialObjectMeta<DynamicObject>| {
            let mut object = DynamicObject {
                types: Some(types.clone()),
                metadata: partial.metadata,
                data: serde_json::Value::Object(serde_json::Map::new()),
            };
            trim_metadata(&mut object);
            object
        };
        watcher(api, config)
            .default_backoff()
            .map(move |event| {
                event.map(|event| match event {
                    watcher::Event::Apply(partial) => watcher::Event::Apply(as_object(partial)),
                    watcher::Event::Delete(partial) => watcher::Event::Delete(as_object(partial)),
                    watcher::Event::InitApply(partial) => {
                        watcher::Event::InitApply(as_object(partial))
                    }
                    watcher::Event::Init => watcher::Event::Init,
                    watcher::Event::InitDone => watcher::Event::InitDone,
                })
            })
            .boxed()
    } else {
        let api: Api<DynamicObject> = match namespace {
            Some(namespace) => Api::namespaced_with(client.clone(), namespace, &kind.resource),
            None => Api::all_with(client.clone(), &kind.resource),
        };
        watcher(api, config)
            .default_backoff()
            .map(|event| {
                event.map(|event| {
                    event.modify(|object| {
                        trim_metadata(object);
                        compact(object);
                    })
                })
            })
            .boxed()
    }
}

/// Keeps a cached child's content (everything but its metadata) as JSON text.
///
/// A `serde_json::Value` tree costs several times its text: every map is a
/// B-tree node with room for eleven entries, so a StatefulSet of 4 KB of JSON
/// takes about 40 KB as a tree. Reconciles read a child's content only to
/// compare it with the desired object or to observe a workload, and
/// [`full_value`] and [`parse`] turn the text back when they do. The metadata
/// stays typed, for lookups by owner and name.
pub(crate) fn compact(object: &mut DynamicObject) {
    if object.data.is_object() {
        let text = object.data.to_string();
        object.data = Value::String(text);
    }
}

/// The whole object as JSON, whether it was compacted by a cache or not (an
/// apply response).
pub fn full_value(object: &DynamicObject) -> Result<Value, serde_json::Error> {
    let mut value = match &object.data {
        Value::String(text) => serde_json::from_str::<Value>(text)?,
        data => data.clone(),
    };
    if let Value::Object(map) = &mut value {
        map.insert(
            "metadata".to_owned(),
            serde_json::to_value(&object.metadata)?,
        );
        if let Some(types) = &object.types {
            map.insert("apiVersion".to_owned(), types.api_version.clone().into());
            map.insert("kind".to_owned(), types.kind.clone().into());
        }
    }
    Ok(value)
}

/// The object as its type, whether it was compacted by a cache or not.
pub fn parse<K: DeserializeOwned>(object: &DynamicObject) -> Result<K, serde_json::Error> {
    serde_json::from_value(full_value(object)?)
}

/// Annotation `kubectl apply` (client-side) stores the whole object in.
const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Drops what no reconcile reads from a cached object: `managedFields` and
/// the client-side last-applied annotation, which together are often larger
/// than the object itself. The apply step's subset check never looks at
/// them, because no builder sets them.
pub(crate) fn trim_metadata<K: Resource>(object: &mut K) {
    let meta = object.meta_mut();
    meta.managed_fields = None;
    if let Some(annotations) = meta.annotations.as_mut() {
        annotations.remove(LAST_APPLIED_ANNOTATION);
    }
}

/// Of a container's last state, only its termination message: what a container
/// that stopped on purpose said about why (`strata_status::ReportedStop`).
fn last_termination(
    state: k8s_openapi::api::core::v1::ContainerState,
) -> Option<k8s_openapi::api::core::v1::ContainerState> {
    let message = state.terminated?.message?;
    Some(k8s_openapi::api::core::v1::ContainerState {
        terminated: Some(k8s_openapi::api::core::v1::ContainerStateTerminated {
            message: Some(message),
            ..Default::default()
        }),
        ..Default::default()
    })
}

/// Keeps of a pod only what the status step and the rolls read: its name,
/// namespace, labels, owners and restart-together annotation
/// ([`crate::roll::stateless`]), its phase, the state of its containers and the
/// message of their last termination.
/// The spec (containers, volumes, env) is most of a pod's size and is never
/// read.
/// The pod annotations a controller reads: the restart-together mark, and a CA
/// rotation's, which say what each pod trusts and presents.
const KEPT_POD_ANNOTATIONS: [&str; 3] = [
    RESTART_TOGETHER_ANNOTATION,
    crate::certificates::rotation::TRUST_ANNOTATION,
    crate::certificates::rotation::SIGNER_ANNOTATION,
];

pub(crate) fn trim_pod(pod: &mut Pod) {
    trim_metadata(pod);
    if let Some(annotations) = pod.metadata.annotations.as_mut() {
        annotations.retain(|key, _| KEPT_POD_ANNOTATIONS.contains(&key.as_str()));
    }
    if pod
        .metadata
        .annotations
        .as_ref()
        .is_some_and(BTreeMap::is_empty)
    {
        pod.metadata.annotations = None;
    }
    pod.spec = None;
    if let Some(status) = pod.status.as_mut() {
        let phase = status.phase.take();
        let trim = |statuses: &mut Option<Vec<k8s_openapi::api::core::v1::ContainerStatus>>| {
            if let Some(statuses) = statuses.as_mut() {
                for container in statuses.iter_mut() {
                    *container = k8s_openapi::api::core::v1::ContainerStatus {
                        name: std::mem::take(&mut container.name),
                        state: container.state.take(),
                        last_state: container.last_state.take().and_then(last_termination),
                        ready: container.ready,
                        ..Default::default()
                    };
                }
            }
        };
        let mut containers = status.container_statuses.take();
        let mut init_containers = status.init_container_statuses.take();
        trim(&mut containers);
        trim(&mut init_containers);
        *status = k8s_openapi::api::core::v1::PodStatus {
            phase,
            container_statuses: containers,
            init_container_statuses: init_containers,
            ..Default::default()
        };
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetSpec, StatefulSetStatus};
    use kube::api::ObjectMeta;

    use super::*;

    fn stateful_set() -> StatefulSet {
        StatefulSet {
            metadata: ObjectMeta {
                name: Some("zk-server-default".to_owned()),
                namespace: Some("default".to_owned()),
                ..ObjectMeta::default()
            },
            spec: StatefulSetSpec {
                replicas: Some(3),
                ..StatefulSetSpec::default()
            },
            status: Some(StatefulSetStatus {
                ready_replicas: Some(2),
                ..StatefulSetStatus::default()
            }),
        }
    }

    fn dynamic(object: &StatefulSet) -> DynamicObject {
        serde_json::from_value(serde_json::to_value(object).unwrap()).unwrap()
    }

    #[test]
    fn a_compacted_object_reads_back_whole_and_typed() {
        let original = stateful_set();
        let mut cached = dynamic(&original);
        let before = full_value(&cached).unwrap();
        compact(&mut cached);
        assert!(cached.data.is_string(), "the content is kept as text");
        assert_eq!(full_value(&cached).unwrap(), before);
        assert_eq!(parse::<StatefulSet>(&cached).unwrap(), original);
        assert_eq!(cached.metadata.name.as_deref(), Some("zk-server-default"));
    }

    #[test]
    fn compacting_twice_changes_nothing_and_uncompacted_objects_read_the_same() {
        let original = stateful_set();
        let plain = dynamic(&original);
        let mut twice = plain.clone();
        compact(&mut twice);
        compact(&mut twice);
        assert_eq!(full_value(&twice).unwrap(), full_value(&plain).unwrap());
        assert_eq!(parse::<StatefulSet>(&plain).unwrap(), original);
    }

    #[test]
    fn a_pod_keeps_the_termination_message_its_status_may_name() {
        use k8s_openapi::api::core::v1::{
            ContainerState, ContainerStateTerminated, ContainerStatus, Pod, PodStatus,
        };
        let terminated = |message: &str| ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code: 1,
                message: Some(message.to_owned()),
                reason: Some("Error".to_owned()),
                ..ContainerStateTerminated::default()
            }),
            ..ContainerState::default()
        };
        let mut pod = Pod {
            status: Some(PodStatus {
                init_container_statuses: Some(vec![ContainerStatus {
                    name: "format-namenode".to_owned(),
                    last_state: Some(terminated("PartialFormat\nmove it aside")),
                    image: "apache/hadoop:3.4.2".to_owned(),
                    ..ContainerStatus::default()
                }]),
                ..PodStatus::default()
            }),
            ..Pod::default()
        };
        trim_pod(&mut pod);
        let init = pod
            .status
            .and_then(|status| status.init_container_statuses)
            .unwrap_or_default();
        let kept = init[0]
            .last_state
            .as_ref()
            .and_then(|state| state.terminated.as_ref());
        assert_eq!(
            kept.map(|terminated| (terminated.message.as_deref(), terminated.reason.as_deref())),
            Some((Some("PartialFormat\nmove it aside"), None))
        );
        assert_eq!(init[0].image, "");
    }

    #[test]
    fn a_pod_keeps_only_the_annotations_a_controller_reads() {
        let mut pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "trino-worker-default-0", "annotations": {
                RESTART_TOGETHER_ANNOTATION: "c1",
                "strata.dev/ca-bundle-sha256": "b1",
                "strata.dev/signing-ca-sha256": "s1",
                "strata.dev/config-hash": "h1",
                "kubectl.kubernetes.io/restartedAt": "2026-11-27T00:00:00Z"
            }}
        }))
        .expect("a pod");
        trim_pod(&mut pod);
        assert_eq!(
            pod.metadata.annotations,
            Some(BTreeMap::from([
                (RESTART_TOGETHER_ANNOTATION.to_owned(), "c1".to_owned()),
                ("strata.dev/ca-bundle-sha256".to_owned(), "b1".to_owned()),
                ("strata.dev/signing-ca-sha256".to_owned(), "s1".to_owned()),
            ]))
        );
        let mut plain: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "zk-0", "annotations": {"strata.dev/config-hash": "h1"}}
        }))
        .expect("a pod");
        trim_pod(&mut plain);
        assert_eq!(plain.metadata.annotations, None);
    }
}
