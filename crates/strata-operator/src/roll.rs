//! Operator-driven rolls: what a StatefulSet's pods look like to an operator
//! that restarts them itself, one at a time, in an order the product needs.
//!
//! Quorum products (ZooKeeper, HDFS journalnodes and namenodes) cannot leave
//! rolls to the StatefulSet controller: it restarts the next pod as soon as
//! the previous one is Ready, in ordinal order, and it never restarts a pod
//! while another one is not Ready (so a change that needs two pods restarted
//! together never finishes). Their StatefulSets use the `OnDelete` strategy
//! and the operator deletes the next pod when the product is healthy. This
//! module reads the facts such a decision needs from the watch caches.
//!
//! Products the StatefulSet controller rolls by itself (`RollingUpdate`: Superset,
//! Trino) have the opposite problem: with `OrderedReady` the controller makes no
//! progress while any pod is not Running and Ready, so a pod that crash-loops on a
//! bad revision stays after the spec is fixed, and the cluster never recovers
//! without a `kubectl delete pod` (kubernetes/kubernetes#67250).
//! [`stuck_on_old_revision`] names those pods, and the apply step of every operator
//! deletes them ([`crate::pipeline`]), so the controller recreates them from the
//! latest template.

pub mod stateless;

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;

use strata_status::PodObservation;

use crate::cache::{ChildCaches, parse};

/// The label the StatefulSet controller puts on each pod: the revision of the
/// template the pod was created from.
pub const REVISION_LABEL: &str = "controller-revision-hash";

/// A StatefulSet the operator controls, with the pods its selector picks.
#[derive(Clone, Debug)]
pub struct StatefulSetPods {
    /// The cached StatefulSet.
    pub stateful_set: StatefulSet,
    /// Its pods, as cached (phase, container states, labels).
    pub pods: Vec<Pod>,
}

impl StatefulSetPods {
    /// `metadata.name`.
    pub fn name(&self) -> String {
        self.stateful_set.name_any()
    }

    /// An annotation of the StatefulSet.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.stateful_set
            .metadata
            .annotations
            .as_ref()
            .and_then(|annotations| annotations.get(key))
            .map(String::as_str)
    }

    /// Whether the StatefulSet controller has seen the latest spec, so that
    /// `status.updateRevision` names the latest template.
    pub fn template_observed(&self) -> bool {
        let generation = self.stateful_set.metadata.generation;
        let observed = self
            .stateful_set
            .status
            .as_ref()
            .and_then(|status| status.observed_generation);
        match (generation, observed) {
            (Some(generation), Some(observed)) => observed >= generation,
            (None, _) => true,
            (Some(_), None) => false,
        }
    }

    /// The pods by ordinal, each read for a roll decision. Pods whose name
    /// does not end in `-<ordinal>` of this StatefulSet are left out.
    pub fn pods_by_ordinal(&self) -> BTreeMap<u32, PodRollState> {
        let prefix = format!("{}-", self.name());
        let update_revision = self
            .stateful_set
            .status
            .as_ref()
            .and_then(|status| status.update_revision.as_deref());
        self.pods
            .iter()
            .filter_map(|pod| {
                let name = pod.name_any();
                let ordinal = name.strip_prefix(&prefix)?.parse().ok()?;
                Some((ordinal, PodRollState::of(pod, update_revision)))
            })
            .collect()
    }
}

/// Pods that the StatefulSet controller will not replace by itself: failing (a
/// container waits in `CrashLoopBackOff`, `ImagePullBackOff`, `ErrImagePull`,
/// `CreateContainerConfigError` and the like, [`PodObservation::is_failing`]), not
/// Ready, not terminating, and created from another revision than
/// `status.updateRevision`, in a StatefulSet the controller rolls itself
/// (`RollingUpdate`) and whose latest spec it has seen. Such a pod serves nothing and
/// will not recover on its own; the roll would replace it anyway if it could move. A
/// pod that is only briefly not Ready (a failed readiness probe, a slow start) is
/// left to the roll. Sorted by name.
pub fn stuck_on_old_revision(sets: &[StatefulSetPods]) -> Vec<String> {
    let mut stuck: Vec<String> = sets
        .iter()
        .filter(|set| rolls_by_itself(&set.stateful_set) && set.template_observed())
        .filter_map(|set| {
            let update_revision = set.stateful_set.status.as_ref()?.update_revision.clone()?;
            Some((set, update_revision))
        })
        .flat_map(|(set, update_revision)| {
            set.pods.iter().filter_map(move |pod| {
                let state = PodRollState::of(pod, Some(&update_revision));
                let stuck = !state.ready
                    && !state.current
                    && !state.terminating
                    && PodObservation::from_pod(pod).is_failing();
                stuck.then_some(state.name)
            })
        })
        .collect();
    stuck.sort();
    stuck
}

/// Whether the StatefulSet controller rolls the pods by itself (`RollingUpdate`, the
/// default) rather than leaving it to the operator (`OnDelete`).
pub fn rolls_by_itself(stateful_set: &StatefulSet) -> bool {
    stateful_set
        .spec
        .update_strategy
        .as_ref()
        .and_then(|strategy| strategy.type_.as_deref())
        .is_none_or(|strategy| strategy == "RollingUpdate")
}

/// One pod, as far as restarting it or the next one is concerned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodRollState {
    /// `metadata.name`.
    pub name: String,
    /// Phase Running and every container running.
    pub running: bool,
    /// Every container passes its readiness probe.
    pub ready: bool,
    /// Created from the StatefulSet's latest template (its revision label is
    /// `status.updateRevision`).
    pub current: bool,
    /// Deletion has started.
    pub terminating: bool,
}

impl PodRollState {
    /// Reads `pod`; `update_revision` is the StatefulSet's latest revision,
    /// unknown (and so not current) while the controller has reported none.
    pub fn of(pod: &Pod, update_revision: Option<&str>) -> Self {
        let status = pod.status.as_ref();
        let containers = status
            .and_then(|status| status.container_statuses.as_deref())
            .unwrap_or_default();
        let phase_running = status.and_then(|status| status.phase.as_deref()) == Some("Running");
        let revision = pod.labels().get(REVISION_LABEL).map(String::as_str);
        Self {
            name: pod.name_any(),
            running: phase_running
                && !containers.is_empty()
                && containers.iter().all(|container| {
                    container
                        .state
                        .as_ref()
                        .is_some_and(|state| state.running.is_some())
                }),
            ready: !containers.is_empty() && containers.iter().all(|container| container.ready),
            current: revision.is_some() && revision == update_revision,
            terminating: pod.metadata.deletion_timestamp.is_some(),
        }
    }
}

/// The StatefulSets `owner` controls in `namespace`, with their pods, from the
/// watch caches; StatefulSets that do not parse are left out.
pub fn stateful_sets_with_pods(
    caches: &ChildCaches,
    owner: &OwnerReference,
    namespace: &str,
) -> Vec<StatefulSetPods> {
    caches
        .controlled_by_of_kinds(owner, namespace, |kind| kind.resource.kind == "StatefulSet")
        .into_iter()
        .filter_map(|(_, object)| parse::<StatefulSet>(&object).ok())
        .map(|stateful_set| {
            let pods = stateful_set
                .spec
                .selector
                .match_labels
                .as_ref()
                .filter(|labels| !labels.is_empty())
                .map(|labels| caches.pods_matching(namespace, labels))
                .unwrap_or_default();
            StatefulSetPods { stateful_set, pods }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateRunning, ContainerStateWaiting, ContainerStatus, PodStatus,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kube::api::ObjectMeta;
    use rstest::rstest;

    use super::*;

    fn pod(phase: &str, running: bool, ready: bool, revision: &str, deleting: bool) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("zk-server-default-0".to_owned()),
                labels: Some(BTreeMap::from([(
                    REVISION_LABEL.to_owned(),
                    revision.to_owned(),
                )])),
                deletion_timestamp: deleting.then_some(Time(jiff::Timestamp::UNIX_EPOCH)),
                ..ObjectMeta::default()
            },
            spec: None,
            status: Some(PodStatus {
                phase: Some(phase.to_owned()),
                container_statuses: Some(vec![ContainerStatus {
                    name: "zookeeper".to_owned(),
                    ready,
                    state: Some(if running {
                        ContainerState {
                            running: Some(ContainerStateRunning::default()),
                            ..ContainerState::default()
                        }
                    } else {
                        ContainerState {
                            waiting: Some(ContainerStateWaiting::default()),
                            ..ContainerState::default()
                        }
                    }),
                    ..ContainerStatus::default()
                }]),
                ..PodStatus::default()
            }),
        }
    }

    #[rstest]
    #[case::ready_and_current(pod("Running", true, true, "r2", false), true, true, true, false)]
    #[case::running_not_ready(pod("Running", true, false, "r2", false), true, false, true, false)]
    #[case::older_template(pod("Running", true, true, "r1", false), true, true, false, false)]
    #[case::container_waiting(pod("Running", false, false, "r2", false), false, false, true, false)]
    #[case::pending(pod("Pending", false, false, "r2", false), false, false, true, false)]
    #[case::being_deleted(pod("Running", true, true, "r2", true), true, true, true, true)]
    fn pods_are_read_for_roll_decisions(
        #[case] pod: Pod,
        #[case] running: bool,
        #[case] ready: bool,
        #[case] current: bool,
        #[case] terminating: bool,
    ) {
        let state = PodRollState::of(&pod, Some("r2"));
        assert_eq!(
            (state.running, state.ready, state.current, state.terminating),
            (running, ready, current, terminating)
        );
    }

    #[test]
    fn without_an_update_revision_no_pod_is_current() {
        let state = PodRollState::of(&pod("Running", true, true, "r2", false), None);
        assert!(!state.current);
    }

    /// A StatefulSet of two pods (ordinals 0 and 1) whose latest revision is `r2`.
    fn set_of(strategy: &str, observed: i64, pods: Vec<Pod>) -> StatefulSetPods {
        let stateful_set: StatefulSet = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "superset-node-default", "generation": 2},
            "spec": {
                "selector": {"matchLabels": {"app": "superset"}},
                "serviceName": "superset-node-default",
                "template": {},
                "updateStrategy": {"type": strategy}
            },
            "status": {"replicas": 2, "observedGeneration": observed, "updateRevision": "r2"}
        }))
        .expect("a StatefulSet");
        let pods = pods
            .into_iter()
            .enumerate()
            .map(|(ordinal, mut pod)| {
                pod.metadata.name = Some(format!("superset-node-default-{ordinal}"));
                pod
            })
            .collect();
        StatefulSetPods { stateful_set, pods }
    }

    fn healthy(revision: &str) -> Pod {
        pod("Running", true, true, revision, false)
    }

    fn crash_looping(revision: &str) -> Pod {
        waiting(
            pod("Running", false, false, revision, false),
            "CrashLoopBackOff",
        )
    }

    /// `pod` with every container waiting for `reason`.
    fn waiting(mut pod: Pod, reason: &str) -> Pod {
        for container in pod
            .status
            .iter_mut()
            .flat_map(|status| status.container_statuses.iter_mut().flatten())
        {
            container.state = Some(ContainerState {
                waiting: Some(ContainerStateWaiting {
                    reason: Some(reason.to_owned()),
                    ..ContainerStateWaiting::default()
                }),
                ..ContainerState::default()
            });
        }
        pod
    }

    #[rstest]
    #[case::every_pod_healthy_and_current(set_of("RollingUpdate", 2, vec![healthy("r2"), healthy("r2")]), vec![])]
    #[case::a_healthy_pod_of_the_old_revision_is_the_rolls_business(
        set_of("RollingUpdate", 2, vec![healthy("r1"), healthy("r2")]), vec![]
    )]
    #[case::a_crash_looping_pod_of_the_old_revision(
        set_of("RollingUpdate", 2, vec![healthy("r2"), crash_looping("r1")]),
        vec!["superset-node-default-1"]
    )]
    #[case::every_pod_broken_by_the_old_revision(
        set_of("RollingUpdate", 2, vec![crash_looping("r1"), crash_looping("r1")]),
        vec!["superset-node-default-0", "superset-node-default-1"]
    )]
    #[case::a_crash_looping_pod_of_the_latest_revision_is_the_specs_problem(
        set_of("RollingUpdate", 2, vec![healthy("r2"), crash_looping("r2")]), vec![]
    )]
    #[case::an_old_image_that_cannot_be_pulled(
        set_of("RollingUpdate", 2, vec![healthy("r2"), waiting(pod("Pending", false, false, "r1", false), "ImagePullBackOff")]),
        vec!["superset-node-default-1"]
    )]
    #[case::briefly_not_ready_on_the_old_revision_is_left_to_the_roll(
        set_of("RollingUpdate", 2, vec![healthy("r2"), pod("Running", true, false, "r1", false)]),
        vec![]
    )]
    #[case::starting_on_the_old_revision_is_left_to_the_roll(
        set_of("RollingUpdate", 2, vec![healthy("r2"), pod("Pending", false, false, "r1", false)]),
        vec![]
    )]
    #[case::already_terminating(
        set_of("RollingUpdate", 2, vec![healthy("r2"), waiting(pod("Running", false, false, "r1", true), "CrashLoopBackOff")]),
        vec![]
    )]
    #[case::the_latest_spec_not_yet_seen(
        set_of("RollingUpdate", 1, vec![healthy("r2"), crash_looping("r1")]), vec![]
    )]
    #[case::rolled_by_the_operator(
        set_of("OnDelete", 2, vec![healthy("r2"), crash_looping("r1")]), vec![]
    )]
    fn pods_stuck_on_an_old_revision_are_named(
        #[case] set: StatefulSetPods,
        #[case] stuck: Vec<&str>,
    ) {
        assert_eq!(stuck_on_old_revision(&[set]), stuck);
    }
}
