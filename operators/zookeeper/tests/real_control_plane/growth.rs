//! An ensemble growing 1 → 3 through the real StatefulSet controller: the membership
//! planner's steps as the API server shows them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Event, PersistentVolumeClaim, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;
use strata_status::{ConditionStatus, ConditionType};
use strata_testing::control_plane::{ControlPlaneOptions, pod_is_ready, wait_until};
use zookeeper_operator::crd::ZookeeperCluster;

use crate::{Cluster, OPERATOR_USER, TIMEOUT, zookeeper_cluster};

const CLUSTER: &str = "growing-zk";
const STATEFUL_SET: &str = "growing-zk-server-default";

/// What a [`record`] saw, and whether its watch has listed the object yet.
struct Recording<T> {
    seen: Arc<Mutex<Vec<T>>>,
    listed: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl<T: Clone> Recording<T> {
    /// Waits until the watch has delivered its first list, so that nothing done
    /// afterwards is missed.
    async fn listed(&self) {
        wait_until("the watch's first list", TIMEOUT, async || {
            self.listed.load(Ordering::SeqCst).then_some(())
        })
        .await;
    }

    /// Stops watching; returns what was seen.
    fn stop(self) -> Vec<T> {
        self.task.abort();
        self.seen.lock().expect("not poisoned").clone()
    }
}

/// Every distinct value `read` gives of the object `name`, in the order the API
/// server's watch delivers them, recorded until [`Recording::stop`].
fn record<K, T>(
    api: Api<K>,
    name: &str,
    read: impl Fn(&K) -> Option<T> + Send + 'static,
) -> Recording<T>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    T: PartialEq + Send + 'static,
{
    let seen = Arc::new(Mutex::new(Vec::new()));
    let listed = Arc::new(AtomicBool::new(false));
    let (sink, done) = (Arc::clone(&seen), Arc::clone(&listed));
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let task = tokio::spawn(async move {
        let mut events = std::pin::pin!(watcher(api, config));
        while let Some(event) = events.next().await {
            let object = match event {
                Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) => object,
                Ok(watcher::Event::InitDone) => {
                    done.store(true, Ordering::SeqCst);
                    continue;
                }
                _ => continue,
            };
            let Some(value) = read(&object) else {
                continue;
            };
            let mut seen = sink.lock().expect("not poisoned");
            if seen.last() != Some(&value) {
                seen.push(value);
            }
        }
    });
    Recording { seen, listed, task }
}

/// The Progressing condition's reason and message while it is True.
fn progressing(cluster: &ZookeeperCluster) -> Option<(String, String)> {
    cluster
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|condition| condition.type_ == ConditionType::Progressing)
        .filter(|condition| condition.status == ConditionStatus::True)
        .map(|condition| (condition.reason.clone(), condition.message.clone()))
}

/// Whether the cluster is Available and no longer Progressing.
fn settled(cluster: &ZookeeperCluster) -> bool {
    let status_of = |type_: ConditionType| {
        cluster.status.as_ref().and_then(|status| {
            status
                .conditions
                .iter()
                .find(|condition| condition.type_ == type_)
                .map(|condition| condition.status)
        })
    };
    status_of(ConditionType::Available) == Some(ConditionStatus::True)
        && status_of(ConditionType::Progressing) == Some(ConditionStatus::False)
}

/// The cluster's pods that are Ready, by name, with their uids.
async fn ready_pods(client: &kube::Client) -> Vec<(String, String)> {
    let pods = Api::<Pod>::namespaced(client.clone(), "default")
        .list(&ListParams::default().labels(&format!("app.kubernetes.io/instance={CLUSTER}")))
        .await
        .map(|list| list.items)
        .unwrap_or_default();
    let mut ready: Vec<(String, String)> = pods
        .into_iter()
        .filter(pod_is_ready)
        .map(|pod| {
            (
                pod.metadata.name.unwrap_or_default(),
                pod.metadata.uid.unwrap_or_default(),
            )
        })
        .collect();
    ready.sort();
    ready
}

/// One server per step, through the real StatefulSet controller (`OnDelete`, claims
/// from the volume claim template), each running server restarted by the operator
/// deleting its pod, and every step shown in Progressing with the planner's reasons.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane (STRATA_CONTROL_PLANE_BIN); run by cargo xtask test"]
async fn growing_from_one_server_adds_one_server_and_restarts_one_pod_at_a_time() {
    let cluster = Cluster::start(ControlPlaneOptions::default()).await;
    let _operator = cluster.run_operator().await;
    let Cluster {
        control_plane,
        client,
    } = &cluster;
    let clusters: Api<ZookeeperCluster> = Api::namespaced(client.clone(), "default");
    clusters
        .create(&PostParams::default(), &zookeeper_cluster(CLUSTER, 1))
        .await
        .expect("the cluster is created");
    wait_until("one server Available", TIMEOUT, async || {
        let cluster = clusters.get(CLUSTER).await.ok()?;
        settled(&cluster).then_some(())
    })
    .await;
    let first = ready_pods(client).await;
    assert_eq!(first.len(), 1, "{first:?}");

    let reasons = record(clusters.clone(), CLUSTER, progressing);
    let stateful_sets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    let replicas = record(stateful_sets.clone(), STATEFUL_SET, |sts| sts.spec.replicas);
    reasons.listed().await;
    replicas.listed().await;
    clusters
        .patch(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"servers": {"roleGroups": {"default": {"replicas": 3}}}}}),
            ),
        )
        .await
        .expect("the cluster grows to three");
    let grown = wait_until(
        "three servers Ready, Available and not Progressing",
        2 * TIMEOUT,
        async || {
            let cluster = clusters.get(CLUSTER).await.ok()?;
            let pods = ready_pods(client).await;
            (settled(&cluster) && pods.len() == 3).then_some(pods)
        },
    )
    .await;
    let replicas = replicas.stop();
    assert_eq!(replicas, [1, 2, 3], "one server joins at a time");
    let reasons = reasons.stop();
    let adding: Vec<&str> = reasons
        .iter()
        .filter(|(reason, _)| reason == "AddingServer")
        .map(|(_, message)| message.as_str())
        .collect();
    assert!(
        adding.len() == 2
            && adding[0].starts_with("Adding server 2 ")
            && adding[1].starts_with("Adding server 3 "),
        "servers 2 and 3 join in turn: {reasons:#?}"
    );
    // Once the planner's last step is done, the StatefulSet's status can trail the
    // pods by a moment; the generic workload reasons (replicas changing, or the
    // rollout counted as in progress) may then close the list, never interrupt it.
    let planner_steps = reasons
        .iter()
        .rposition(|(reason, _)| {
            !["ReplicasChanging", "RolloutInProgress"].contains(&reason.as_str())
        })
        .map_or(&reasons[..0], |last| &reasons[..=last]);
    assert!(
        planner_steps
            .iter()
            .any(|(reason, _)| reason == "RestartingServer")
            && planner_steps.iter().all(|(reason, _)| {
                ["AddingServer", "RestartingServer", "WaitingForQuorum"].contains(&reason.as_str())
            }),
        "Progressing shows the planner's steps: {reasons:#?}"
    );

    // Server 2 joins: server 1 restarts. Server 3 joins: servers 2 and 1 restart. Each
    // restart is one pod deleted by the operator, once.
    let pod_deletions: Vec<_> = control_plane
        .audit_events()
        .expect("the audit log")
        .into_iter()
        .filter(|event| event.verb == "delete" && event.resource == "pods")
        .collect();
    let deletions: Vec<String> = pod_deletions
        .iter()
        .filter(|event| event.user == OPERATOR_USER)
        .map(|event| format!("{} {}", event.name, event.code))
        .collect();
    // KWOK (the admin here) removes each deleted pod as its kubelet would; the
    // StatefulSet controller, updating `OnDelete`, deletes none.
    let by_controllers: Vec<String> = pod_deletions
        .iter()
        .filter(|event| event.user.starts_with("system:") && event.user != OPERATOR_USER)
        .map(|event| event.describe())
        .collect();
    assert_eq!(by_controllers, Vec::<String>::new());
    assert_eq!(
        deletions.first().map(String::as_str),
        Some("growing-zk-server-default-0 200"),
        "server 1 restarts first, to take server 2: {deletions:?}"
    );
    let mut restarted = deletions.clone();
    restarted.sort();
    assert_eq!(
        restarted,
        [
            "growing-zk-server-default-0 200",
            "growing-zk-server-default-0 200",
            "growing-zk-server-default-1 200",
        ],
        "each running server restarts once per step: {deletions:?}"
    );
    assert_ne!(grown[0], first[0], "the first server's pod was replaced");
    let sts = stateful_sets
        .get(STATEFUL_SET)
        .await
        .expect("the StatefulSet");
    let strategy = sts.spec.update_strategy.and_then(|strategy| strategy.type_);
    assert_eq!(strategy.as_deref(), Some("OnDelete"));

    let claims = Api::<PersistentVolumeClaim>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .expect("the claims");
    let mut bound: Vec<(String, String)> = claims
        .items
        .into_iter()
        .map(|claim| {
            let phase = claim.status.and_then(|status| status.phase);
            (
                claim.metadata.name.unwrap_or_default(),
                phase.unwrap_or_default(),
            )
        })
        .collect();
    bound.sort();
    assert_eq!(
        bound,
        (0..3)
            .map(|ordinal| (format!("data-{STATEFUL_SET}-{ordinal}"), "Bound".to_owned()))
            .collect::<Vec<_>>(),
        "the StatefulSet controller created one claim per server, and each was bound"
    );

    let restart_events = Api::<Event>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .expect("the Events")
        .items
        .into_iter()
        .filter(|event| event.reason.as_deref() == Some("RestartingPod"))
        .count();
    assert!(restart_events > 0, "the restarts are announced as Events");
}
