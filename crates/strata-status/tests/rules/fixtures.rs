//! Small builders for workloads and pods. Every observation in the tests is
//! built from real k8s-openapi objects and goes through the `from_*`
//! constructors, so extraction is tested together with the rules.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::{
        apps::v1::{
            DaemonSet, DaemonSetStatus, Deployment, DeploymentCondition, DeploymentSpec,
            DeploymentStatus, RollingUpdateStatefulSetStrategy, StatefulSet, StatefulSetSpec,
            StatefulSetStatus, StatefulSetUpdateStrategy,
        },
        core::v1::{ContainerState, ContainerStateWaiting, ContainerStatus, Pod, PodStatus},
    },
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time},
    jiff::Timestamp,
};
use strata_status::{ConditionStatus, ConditionType, ConditionUpdate, Reason, WorkloadObservation};

/// The product version pods carry unless a test says otherwise.
pub const VERSION: &str = "3.9.3";

/// The three workload kinds, for `#[values]` over all of them.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    StatefulSet,
    Deployment,
    DaemonSet,
}

/// A workload's counts and generations; defaults describe a settled
/// workload (everything updated, latest generation observed).
#[derive(Clone, Debug)]
pub struct Workload {
    pub kind: Kind,
    pub name: &'static str,
    pub desired: i32,
    pub available: i32,
    pub updated: i32,
    pub generation: i64,
    pub observed_generation: Option<i64>,
    pub current_revision: &'static str,
    pub update_revision: &'static str,
    pub update_strategy: Option<&'static str>,
    /// `spec.updateStrategy.rollingUpdate.partition` of a StatefulSet.
    pub partition: Option<i32>,
    /// The Deployment's `Progressing` condition as (status, reason).
    pub deployment_progressing: Option<(&'static str, &'static str)>,
}

/// A settled workload with `desired` replicas of which `available` are available.
pub fn workload(kind: Kind, desired: i32, available: i32) -> Workload {
    Workload {
        kind,
        name: "simple-server-default",
        desired,
        available,
        updated: desired,
        generation: 2,
        observed_generation: Some(2),
        current_revision: "rev-1",
        update_revision: "rev-1",
        update_strategy: None,
        partition: None,
        deployment_progressing: None,
    }
}

impl Workload {
    pub fn named(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }

    pub fn updated(mut self, updated: i32) -> Self {
        self.updated = updated;
        self
    }

    pub fn observed_generation(mut self, observed: Option<i64>) -> Self {
        self.observed_generation = observed;
        self
    }

    pub fn revisions(mut self, current: &'static str, update: &'static str) -> Self {
        self.current_revision = current;
        self.update_revision = update;
        self
    }

    pub fn update_strategy(mut self, strategy: &'static str) -> Self {
        self.update_strategy = Some(strategy);
        self
    }

    pub fn partition(mut self, partition: i32) -> Self {
        self.partition = Some(partition);
        self
    }

    pub fn deployment_progressing(mut self, status: &'static str, reason: &'static str) -> Self {
        self.deployment_progressing = Some((status, reason));
        self
    }

    fn meta(&self) -> ObjectMeta {
        ObjectMeta {
            name: Some(self.name.to_owned()),
            namespace: Some("default".to_owned()),
            generation: Some(self.generation),
            ..ObjectMeta::default()
        }
    }

    pub fn stateful_set(&self) -> StatefulSet {
        StatefulSet {
            metadata: self.meta(),
            spec: StatefulSetSpec {
                replicas: Some(self.desired),
                update_strategy: (self.update_strategy.is_some() || self.partition.is_some()).then(
                    || StatefulSetUpdateStrategy {
                        type_: self.update_strategy.map(str::to_owned),
                        rolling_update: self.partition.map(|partition| {
                            RollingUpdateStatefulSetStrategy {
                                partition: Some(partition),
                                ..RollingUpdateStatefulSetStrategy::default()
                            }
                        }),
                    },
                ),
                ..StatefulSetSpec::default()
            },
            status: Some(StatefulSetStatus {
                replicas: self.desired,
                available_replicas: Some(self.available),
                ready_replicas: Some(self.available),
                updated_replicas: Some(self.updated),
                observed_generation: self.observed_generation,
                current_revision: Some(self.current_revision.to_owned()),
                update_revision: Some(self.update_revision.to_owned()),
                ..StatefulSetStatus::default()
            }),
        }
    }

    pub fn deployment(&self) -> Deployment {
        Deployment {
            metadata: self.meta(),
            spec: DeploymentSpec {
                replicas: Some(self.desired),
                ..DeploymentSpec::default()
            },
            status: Some(DeploymentStatus {
                replicas: Some(self.desired),
                available_replicas: Some(self.available),
                updated_replicas: Some(self.updated),
                observed_generation: self.observed_generation,
                conditions: self.deployment_progressing.map(|(status, reason)| {
                    vec![DeploymentCondition {
                        type_: Some("Progressing".to_owned()),
                        status: Some(status.to_owned()),
                        reason: Some(reason.to_owned()),
                        message: Some(deployment_progressing_message(self.name, reason)),
                        ..DeploymentCondition::default()
                    }]
                }),
                ..DeploymentStatus::default()
            }),
        }
    }

    pub fn daemon_set(&self) -> DaemonSet {
        DaemonSet {
            metadata: self.meta(),
            spec: Default::default(),
            status: Some(DaemonSetStatus {
                desired_number_scheduled: self.desired,
                current_number_scheduled: self.desired,
                number_available: Some(self.available),
                number_ready: self.available,
                updated_number_scheduled: Some(self.updated),
                observed_generation: self.observed_generation,
                ..DaemonSetStatus::default()
            }),
        }
    }

    /// Builds the real object of `kind` and observes it.
    pub fn observe(&self, pods: &[Pod]) -> WorkloadObservation {
        match self.kind {
            Kind::StatefulSet => WorkloadObservation::from_stateful_set(&self.stateful_set(), pods),
            Kind::Deployment => WorkloadObservation::from_deployment(&self.deployment(), pods),
            Kind::DaemonSet => WorkloadObservation::from_daemon_set(&self.daemon_set(), pods),
        }
    }
}

/// What the Deployment controller writes into its `Progressing` condition.
pub fn deployment_progressing_message(name: &str, reason: &str) -> String {
    if reason == "ProgressDeadlineExceeded" {
        format!("ReplicaSet \"{name}-abc\" has timed out progressing.")
    } else {
        format!("ReplicaSet \"{name}-abc\" is progressing ({reason}).")
    }
}

/// A pod in `phase` with one container `main`, labelled with [`VERSION`].
pub fn pod(name: &str, phase: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(BTreeMap::from([(
                "app.kubernetes.io/version".to_owned(),
                VERSION.to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        spec: None,
        status: Some(PodStatus {
            phase: Some(phase.to_owned()),
            container_statuses: Some(vec![container_status("main", None)]),
            ..PodStatus::default()
        }),
    }
}

/// `count` running pods named `pod-0`, `pod-1`, ...
pub fn running(count: usize) -> Vec<Pod> {
    (0..count)
        .map(|i| pod(&format!("pod-{i}"), "Running"))
        .collect()
}

/// `pods` followed by `extra`.
pub fn plus(mut pods: Vec<Pod>, extra: Pod) -> Vec<Pod> {
    pods.push(extra);
    pods
}

fn container_status(name: &str, waiting_reason: Option<&str>) -> ContainerStatus {
    ContainerStatus {
        name: name.to_owned(),
        image: "example/image:1".to_owned(),
        state: waiting_reason.map(|reason| ContainerState {
            waiting: Some(ContainerStateWaiting {
                reason: Some(reason.to_owned()),
                message: Some("back-off".to_owned()),
            }),
            ..ContainerState::default()
        }),
        ..ContainerStatus::default()
    }
}

/// A pod whose container `main` waits with `reason`.
pub fn waiting_pod(name: &str, phase: &str, reason: &str) -> Pod {
    let mut pod = pod(name, phase);
    if let Some(status) = pod.status.as_mut() {
        status.container_statuses = Some(vec![container_status("main", Some(reason))]);
    }
    pod
}

/// A pending pod whose init container `init` waits with `reason`.
pub fn waiting_init_pod(name: &str, reason: &str) -> Pod {
    let mut pod = pod(name, "Pending");
    if let Some(status) = pod.status.as_mut() {
        status.init_container_statuses = Some(vec![container_status("init", Some(reason))]);
        status.container_statuses = Some(vec![container_status("main", Some("PodInitializing"))]);
    }
    pod
}

/// `pod` with its version label set to `version` (or removed).
pub fn with_version(mut pod: Pod, version: Option<&str>) -> Pod {
    let labels = pod.metadata.labels.get_or_insert_with(BTreeMap::new);
    match version {
        Some(version) => labels.insert("app.kubernetes.io/version".to_owned(), version.to_owned()),
        None => labels.remove("app.kubernetes.io/version"),
    };
    pod
}

/// A whole-second timestamp.
pub fn at(second: i64) -> Time {
    Time(Timestamp::from_second(second).unwrap())
}

/// A condition update with a reason from the vocabulary.
pub fn update(type_: ConditionType, status: ConditionStatus, reason: Reason) -> ConditionUpdate {
    ConditionUpdate::new(type_, status, reason, format!("{type_} is {status}."))
}
