//! Rolls of stateless pods that the operator drives (StatefulSet `OnDelete`), for
//! products whose pods hold work but no data (Trino workers).
//!
//! The StatefulSet controller's own roll restarts one pod at a time, each once the
//! previous one is Ready, through the pod's `preStop` drain. That is right for most
//! changes, and this roll does the same. But some changes lose every pod's work
//! anyway: a Trino catalog change restarts the coordinator, and every running query
//! with it. Draining the workers one by one after that only keeps old and new catalogs
//! side by side for the whole roll (tens of minutes with ten workers), for queries
//! that are gone. So a pod template names such settings in
//! [`RESTART_TOGETHER_ANNOTATION`], and every pod that runs another value restarts at
//! once, without its drain.

use kube::ResourceExt;

use super::{PodRollState, StatefulSetPods};

/// Pod template annotation: the hash of the settings whose change restarts every pod
/// at once, without a drain (their work is lost anyway).
pub const RESTART_TOGETHER_ANNOTATION: &str = "strata.dev/restart-together";

/// A pod to delete, by name and uid (so a replacement of the same name is never
/// deleted by mistake when the cache lags).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodRef {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid`.
    pub uid: Option<String>,
}

impl PodRef {
    /// A pod known by name only (a planner that reads no uid).
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            uid: None,
        }
    }
}

/// What the next step of a stateless roll restarts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatelessRestarts {
    /// Pods to delete at once without a drain: those that run another
    /// [`RESTART_TOGETHER_ANNOTATION`] value, and those of an older revision that
    /// are not Ready (they serve nothing, and the roll would wait for them forever).
    pub together: Vec<PodRef>,
    /// The next pod to restart through its drain: the highest ordinal of an older
    /// revision, once every pod is Ready and none is terminating.
    pub drained: Option<PodRef>,
    /// Every pod exists, is Ready and is not terminating: a roll over several
    /// StatefulSets drains a pod only while every one of them is settled.
    pub settled: bool,
}

impl StatelessRestarts {
    /// Whether this step restarts nothing.
    pub fn is_empty(&self) -> bool {
        self.together.is_empty() && self.drained.is_none()
    }
}

/// The next step of the roll of `set`: nothing while the StatefulSet controller has
/// not seen the latest template (its `updateRevision` would be stale), nor while any
/// pod is missing, terminating or not Ready, unless [`StatelessRestarts::together`]
/// names pods.
pub fn stateless_restarts(set: &StatefulSetPods) -> StatelessRestarts {
    let update_revision = set
        .stateful_set
        .status
        .as_ref()
        .and_then(|status| status.update_revision.as_deref());
    let (Some(update_revision), true) = (update_revision, set.template_observed()) else {
        return StatelessRestarts::default();
    };
    let wanted_together = template_annotation(set, RESTART_TOGETHER_ANNOTATION);
    let pods = set.pods_by_ordinal();
    let mut together = Vec::new();
    for pod in &set.pods {
        let state = PodRollState::of(pod, Some(update_revision));
        if state.terminating || state.current {
            continue;
        }
        // A pod without the annotation (an older operator's) is rolled as any other
        // change: what it runs is unknown.
        let runs_other_setting = pod
            .annotations()
            .get(RESTART_TOGETHER_ANNOTATION)
            .is_some_and(|running| Some(running) != wanted_together);
        if runs_other_setting || !state.ready {
            together.push(pod_ref(pod));
        }
    }
    if !together.is_empty() {
        together.sort_by(|a, b| a.name.cmp(&b.name));
        return StatelessRestarts {
            together,
            drained: None,
            settled: false,
        };
    }
    let replicas = set.stateful_set.spec.replicas.unwrap_or(1);
    let settled = pods.len() == usize::try_from(replicas).unwrap_or(0)
        && pods.values().all(|pod| pod.ready && !pod.terminating);
    let drained = settled
        .then(|| pods.values().rev().find(|pod| !pod.current))
        .flatten()
        .and_then(|state| set.pods.iter().find(|pod| pod.name_any() == state.name))
        .map(pod_ref);
    StatelessRestarts {
        together: Vec::new(),
        drained,
        settled,
    }
}

fn template_annotation<'a>(set: &'a StatefulSetPods, key: &str) -> Option<&'a String> {
    set.stateful_set
        .spec
        .template
        .metadata
        .as_ref()?
        .annotations
        .as_ref()?
        .get(key)
}

fn pod_ref(pod: &k8s_openapi::api::core::v1::Pod) -> PodRef {
    PodRef {
        name: pod.name_any(),
        uid: pod.metadata.uid.clone(),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::StatefulSet;
    use k8s_openapi::api::core::v1::Pod;
    use rstest::rstest;
    use serde_json::json;

    use super::*;

    /// A worker pod of ordinal `ordinal` on `revision`, run with the catalogs hash
    /// `catalogs`.
    fn pod(ordinal: u32, revision: &str, catalogs: &str, ready: bool) -> Pod {
        serde_json::from_value(json!({
            "metadata": {
                "name": format!("trino-worker-default-{ordinal}"),
                "uid": format!("uid-{ordinal}-{revision}"),
                "labels": {"controller-revision-hash": revision},
                "annotations": {RESTART_TOGETHER_ANNOTATION: catalogs}
            },
            "status": {
                "phase": "Running",
                "containerStatuses": [{
                    "name": "trino", "image": "trino", "imageID": "", "restartCount": 0,
                    "ready": ready, "state": {"running": {}}
                }]
            }
        }))
        .expect("a pod")
    }

    fn unannotated(mut pod: Pod) -> Pod {
        pod.metadata.annotations = None;
        pod
    }

    fn terminating(mut pod: Pod) -> Pod {
        pod.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH),
        );
        pod
    }

    /// Three workers wanted, template `r2` with the catalogs hash `c2`, seen by the
    /// StatefulSet controller when `observed`.
    fn workers(observed: bool, pods: Vec<Pod>) -> StatefulSetPods {
        let stateful_set: StatefulSet = serde_json::from_value(json!({
            "metadata": {"name": "trino-worker-default", "generation": 2},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "trino"}},
                "serviceName": "trino-worker-default",
                "template": {"metadata": {"annotations": {RESTART_TOGETHER_ANNOTATION: "c2"}}},
                "updateStrategy": {"type": "OnDelete"}
            },
            "status": {"replicas": 3, "observedGeneration": if observed { 2 } else { 1 }, "updateRevision": "r2"}
        }))
        .expect("a StatefulSet");
        StatefulSetPods { stateful_set, pods }
    }

    fn names(pods: &[PodRef]) -> Vec<&str> {
        pods.iter().map(|pod| pod.name.as_str()).collect()
    }

    #[rstest]
    #[case::rolled_out(
        workers(true, vec![pod(0, "r2", "c2", true), pod(1, "r2", "c2", true), pod(2, "r2", "c2", true)]),
        &[], None
    )]
    #[case::a_catalog_change_restarts_every_worker_at_once(
        workers(true, vec![pod(0, "r1", "c1", true), pod(1, "r1", "c1", true), pod(2, "r1", "c1", true)]),
        &["trino-worker-default-0", "trino-worker-default-1", "trino-worker-default-2"], None
    )]
    #[case::other_changes_drain_the_highest_ordinal_first(
        workers(true, vec![pod(0, "r1", "c2", true), pod(1, "r1", "c2", true), pod(2, "r1", "c2", true)]),
        &[], Some("trino-worker-default-2")
    )]
    #[case::then_the_next_once_it_is_ready(
        workers(true, vec![pod(0, "r1", "c2", true), pod(1, "r1", "c2", true), pod(2, "r2", "c2", true)]),
        &[], Some("trino-worker-default-1")
    )]
    #[case::nothing_while_a_restarted_pod_is_not_ready(
        workers(true, vec![pod(0, "r1", "c2", true), pod(1, "r1", "c2", true), pod(2, "r2", "c2", false)]),
        &[], None
    )]
    #[case::nothing_while_a_pod_terminates(
        workers(true, vec![pod(0, "r1", "c2", true), pod(1, "r1", "c2", true), terminating(pod(2, "r1", "c2", true))]),
        &[], None
    )]
    #[case::nothing_while_a_pod_is_missing(
        workers(true, vec![pod(0, "r1", "c2", true), pod(1, "r1", "c2", true)]),
        &[], None
    )]
    #[case::a_broken_pod_of_an_older_revision_goes_at_once(
        workers(true, vec![pod(0, "r1", "c2", true), pod(1, "r1", "c2", false), pod(2, "r1", "c2", true)]),
        &["trino-worker-default-1"], None
    )]
    #[case::a_terminating_pod_of_the_old_catalogs_is_left_alone(
        workers(true, vec![pod(0, "r1", "c1", true), terminating(pod(1, "r1", "c1", true)), pod(2, "r2", "c2", false)]),
        &["trino-worker-default-0"], None
    )]
    #[case::a_pod_of_an_older_operator_without_the_annotation_is_drained(
        workers(true, vec![pod(0, "r1", "c2", true), pod(1, "r1", "c2", true), unannotated(pod(2, "r1", "c1", true))]),
        &[], Some("trino-worker-default-2")
    )]
    #[case::nothing_before_the_latest_template_is_seen(
        workers(false, vec![pod(0, "r1", "c1", true), pod(1, "r1", "c1", true), pod(2, "r1", "c1", true)]),
        &[], None
    )]
    fn the_next_step_of_a_stateless_roll(
        #[case] set: StatefulSetPods,
        #[case] together: &[&str],
        #[case] drained: Option<&str>,
    ) {
        let restarts = stateless_restarts(&set);
        assert_eq!(names(&restarts.together), together);
        assert_eq!(
            restarts.drained.as_ref().map(|pod| pod.name.as_str()),
            drained
        );
    }

    #[test]
    fn restarts_name_the_pods_uid() {
        let set = workers(true, vec![pod(0, "r1", "c1", true)]);
        let restarts = stateless_restarts(&set);
        assert_eq!(restarts.together[0].uid.as_deref(), Some("uid-0-r1"));
    }
}
