//! The Trino operator itself on the real control plane, with the pod runner as the
//! node that runs real Trino 483: the real StatefulSet controller rolls the pods.
//!
//! - **No catalog:** a cluster that selects none starts without a `catalog/` folder,
//!   and serves only `system`.
//! - **Catalog change** (issue 20, item 9): a new TrinoCatalog restarts the
//!   coordinator and both workers together (the workers without a drain, since the
//!   coordinator's restart ends every query anyway), each pod exactly once, and its
//!   catalog answers. A probe in the client pod measures what a user sees meanwhile:
//!   when the catalog first answers, and how long the cluster refuses queries.
//! - **A broken revision** (issue 20, item 2): a JVM option the JVM refuses makes the
//!   coordinator's new pod crash, the cluster Degraded; once the option is taken
//!   back, the fixed revision rolls out and the cluster heals. (On 1.37.2 the
//!   StatefulSet controller replaced the crash-looping pod even with the operator's
//!   replacement disabled: `docs/trino.md`, Tests.)
//! - **Behind a Gateway** (issue 26, item 3): with the Gateway API's CRDs installed,
//!   the cluster's HTTPRoute and BackendTLSPolicy pass the real CRDs' validation, and
//!   real Trino takes a forwarded request and hands back URIs on the public host.

use std::time::{Duration, Instant};

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use strata_operator::cli::Operator;
use strata_pod_runner::agent::NodeAgent;
use strata_pod_runner::manifest::apply_all;
use strata_testing::control_plane::{
    ControlPlane, ControlPlaneOptions, RunningOperator, wait_until,
};
use trino_operator::crd::{TrinoCatalog, TrinoCluster};
use trino_operator::{OPERATOR_NAME, TrinoOperator};

use crate::support::{CLIENT_POD, NAMESPACE, client_answer, client_plan, client_pod, runner};

/// The node the runner serves.
const NODE: &str = "strata-runner-0";
/// The cluster under test; its name gives the Services the client reaches.
const CLUSTER: &str = "simple-trino";
/// The StatefulSets of its two role groups.
const STATEFUL_SETS: [&str; 2] = [
    "simple-trino-coordinator-default",
    "simple-trino-worker-default",
];
/// A JVM option no JVM knows.
const BAD_JVM_OPTION: &str = "-XX:+StrataNoSuchOption";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root, the control plane and the Trino image directory; run by cargo xtask test"]
async fn the_operator_rolls_a_catalog_change_and_heals_a_broken_coordinator_on_real_trino() {
    let operated = Operated::start().await;
    let (client, agent) = (operated.client.clone(), &operated.agent);
    let clusters: Api<TrinoCluster> = Api::namespaced(client.clone(), NAMESPACE);
    let catalogs: Api<TrinoCatalog> = Api::namespaced(client.clone(), NAMESPACE);

    // No catalog selected: the pods start without a catalog/ folder.
    let cluster: TrinoCluster = serde_json::from_value(json!({
        "apiVersion": "trino.strata.dev/v1alpha1",
        "kind": "TrinoCluster",
        "metadata": {"name": CLUSTER, "namespace": NAMESPACE},
        "spec": {
            "clusterConfig": {
                "catalogLabelSelector": {"matchLabels": {"trino": CLUSTER}},
                "httpRoute": {
                    "parentRefs": [{"name": "public", "namespace": "gateways"}],
                    "hostnames": [PUBLIC_HOST]
                }
            },
            "coordinators": {
                "config": {"resources": {"memory": {"limit": "1280Mi"}}},
                "roleGroups": {"default": {"replicas": 1}}
            },
            "workers": {
                "config": {"resources": {"memory": {"limit": "1280Mi"}}, "shutdownGracePeriod": "5s"},
                "roleGroups": {"default": {"replicas": 2}}
            }
        }
    }))
    .expect("a TrinoCluster");
    clusters
        .create(&PostParams::default(), &cluster)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let started = Instant::now();
    wait_rolled_out(&client, Duration::from_secs(300)).await;
    wait_condition(&clusters, "Available", "True", Duration::from_secs(60)).await;
    eprintln!(
        "the cluster was Available {:?} after its creation",
        started.elapsed()
    );
    let runner = agent.runner();
    apply_all(&mut *runner.lock().await, &[client_pod(&[])])
        .unwrap_or_else(|error| panic!("{error}"));
    runner
        .lock()
        .await
        .wait_ready(NAMESPACE, &[CLIENT_POD], Duration::from_secs(60))
        .await
        .unwrap_or_else(|report| panic!("{report}"));
    assert_eq!(query(agent, "SHOW CATALOGS").await, json!([["system"]]));
    behind_a_gateway(&client, agent).await;

    // A catalog appears: every pod rolls, and the catalog answers.
    let tpch: TrinoCatalog = serde_json::from_value(json!({
        "apiVersion": "trino.strata.dev/v1alpha1",
        "kind": "TrinoCatalog",
        "metadata": {"name": "tpch", "namespace": NAMESPACE, "labels": {"trino": CLUSTER}},
        "spec": {"connector": {"tpch": {}}}
    }))
    .expect("a TrinoCatalog");
    let revisions = update_revisions(&client).await;
    let before = pod_uids(&client).await;
    let probe = client_plan(
        &*runner.lock().await,
        &["probe", "3", "SELECT count(*) FROM tpch.tiny.nation", "400"],
    );
    let probe = tokio::spawn(client_answer(probe, "the probe"));
    catalogs
        .create(&PostParams::default(), &tpch)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let rolled = Instant::now();
    wait_until(
        "both StatefulSets on a new revision",
        Duration::from_secs(60),
        async || {
            let now = update_revisions(&client).await;
            now.iter()
                .zip(&revisions)
                .all(|(now, before)| now != before)
                .then_some(())
        },
    )
    .await;
    wait_rolled_out(&client, Duration::from_secs(300)).await;
    eprintln!("the catalog's roll took {:?}", rolled.elapsed());
    let seen = probe.await.expect("the probe");
    eprintln!("while the catalog rolled out, the client saw: {seen}");
    assert_eq!(seen["settled"], true, "{seen}");
    assert_eq!(
        query(agent, "SELECT count(*) FROM tpch.tiny.nation").await,
        json!([[25]])
    );
    // Each pod restarted exactly once, the workers within seconds of each other.
    let after = pod_uids(&client).await;
    for (pod, (uid, _)) in &after {
        assert_ne!(
            Some(uid),
            before.get(pod).map(|(uid, _)| uid),
            "{pod} restarted"
        );
    }
    let worker_starts: Vec<i64> = after
        .iter()
        .filter(|(pod, _)| pod.contains("-worker-"))
        .map(|(_, (_, created))| *created)
        .collect();
    let spread =
        worker_starts.iter().max().unwrap_or(&0) - worker_starts.iter().min().unwrap_or(&0);
    eprintln!("the workers were recreated {spread} s apart");
    assert!(
        spread <= 5,
        "the workers restart together, not one after the other: {after:?}"
    );

    // A broken revision, then the fix: the crash-looping pod is replaced.
    patch_jvm_option(&clusters, json!({BAD_JVM_OPTION: ""})).await;
    let degraded = wait_condition(&clusters, "Degraded", "True", Duration::from_secs(180)).await;
    assert!(
        degraded
            .to_string()
            .contains("simple-trino-coordinator-default-0"),
        "{degraded}"
    );
    patch_jvm_option(&clusters, json!({BAD_JVM_OPTION: null})).await;
    let fixed = Instant::now();
    wait_rolled_out(&client, Duration::from_secs(300)).await;
    wait_condition(&clusters, "Degraded", "False", Duration::from_secs(60)).await;
    eprintln!(
        "the fixed revision was rolled out {:?} after the fix",
        fixed.elapsed()
    );
    assert_eq!(
        query(agent, "SELECT count(*) FROM tpch.tiny.region").await,
        json!([[5]])
    );

    operated.stop().await;
}

/// The host name users reach the cluster by, through the Gateway.
const PUBLIC_HOST: &str = "trino.example.com";

/// The HTTPRoute and the BackendTLSPolicy the real API server took (their CRDs' CEL
/// rules included), and real Trino behind them: a request a Gateway forwards is
/// served, and the URI Trino hands back for the next request is on the public host
/// over HTTPS, not the coordinator's own address. Without `process-forwarded` Trino
/// would refuse it.
async fn behind_a_gateway(client: &kube::Client, agent: &NodeAgent) {
    use strata_model::http_route::{BackendTlsPolicy, HttpRoute};

    let route = Api::<HttpRoute>::namespaced(client.clone(), NAMESPACE)
        .get(CLUSTER)
        .await
        .unwrap_or_else(|error| panic!("the HTTPRoute: {error}"));
    assert_eq!(route.spec.hostnames, [PUBLIC_HOST]);
    assert_eq!(route.spec.rules[0].backend_refs[0].port, 8443);
    let policy = Api::<BackendTlsPolicy>::namespaced(client.clone(), NAMESPACE)
        .get(CLUSTER)
        .await
        .unwrap_or_else(|error| panic!("the BackendTLSPolicy: {error}"));
    assert_eq!(
        policy.spec.validation.hostname,
        format!("simple-trino-coordinator.{NAMESPACE}.svc.cluster.local")
    );
    let plan = client_plan(&*agent.runner().lock().await, &["forwarded", PUBLIC_HOST]);
    let answer = client_answer(plan, "a forwarded request").await;
    assert_eq!(answer["status"], 200, "{answer}");
    assert!(
        answer["nextUri"]
            .as_str()
            .is_some_and(|uri| uri.starts_with(&format!("https://{PUBLIC_HOST}/"))),
        "{answer}"
    );
}

/// The control plane, the pod runner as its one node, and the Trino operator.
pub struct Operated {
    /// An administrator's client.
    pub client: kube::Client,
    /// The node.
    pub agent: NodeAgent,
    operator: RunningOperator,
    control_plane: ControlPlane,
}

impl Operated {
    /// Starts them all, with the CRDs installed.
    pub async fn start() -> Self {
        let control_plane = ControlPlane::start(ControlPlaneOptions {
            nodes: 0,
            ..ControlPlaneOptions::default()
        })
        .await
        .unwrap_or_else(|error| panic!("the control plane starts: {error}"));
        control_plane
            .install_crds(&TrinoOperator::crds())
            .await
            .expect("the CRDs are established");
        control_plane
            .install_crds(&strata_testing::gateway_api::crds())
            .await
            .expect("the Gateway API's CRDs are established");
        let client = control_plane.client().await.expect("a client");
        let agent = NodeAgent::start(client.clone(), NODE, runner())
            .await
            .unwrap_or_else(|error| panic!("{error}"));
        let operator_client = control_plane
            .cluster_admin_client(NAMESPACE, OPERATOR_NAME)
            .await
            .expect("the operator's identity");
        let operator = RunningOperator::start(
            operator_client,
            OPERATOR_NAME,
            trino_operator::controller::run,
        );
        Self {
            client,
            agent,
            operator,
            control_plane,
        }
    }

    /// Stops the operator, every pod by its PID, and the control plane.
    pub async fn stop(self) {
        drop(self.operator);
        self.agent.shutdown().await;
        drop(self.control_plane);
    }
}

/// The rows of `sql`, from the client pod on the agent's runner.
pub async fn query(agent: &NodeAgent, sql: &str) -> Value {
    let plan = client_plan(&*agent.runner().lock().await, &["query", "test", sql]);
    client_answer(plan, sql).await["rows"].clone()
}

/// Each pod of the cluster by name: its uid and when it was created (seconds).
pub async fn pod_uids(client: &kube::Client) -> BTreeMap<String, (String, i64)> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let listed = pods
        .list(&ListParams::default().labels(&format!("app.kubernetes.io/instance={CLUSTER}")))
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    listed
        .items
        .into_iter()
        .map(|pod| {
            let created = pod
                .metadata
                .creation_timestamp
                .as_ref()
                .map_or(0, |time| time.0.as_second());
            (
                pod.name_any(),
                (pod.metadata.uid.clone().unwrap_or_default(), created),
            )
        })
        .collect()
}

/// Sets (or, with `null`, removes) the coordinators' `jvm.config` overrides.
async fn patch_jvm_option(clusters: &Api<TrinoCluster>, options: Value) {
    let patch = json!({"spec": {"coordinators": {"configOverrides": {"jvm.config": options}}}});
    clusters
        .patch(CLUSTER, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|error| panic!("{error}"));
}

/// The update revisions of both StatefulSets.
pub async fn update_revisions(client: &kube::Client) -> Vec<Option<String>> {
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), NAMESPACE);
    let mut revisions = Vec::new();
    for name in STATEFUL_SETS {
        let set = sets.get_opt(name).await.ok().flatten();
        revisions.push(set.and_then(|set| set.status?.update_revision));
    }
    revisions
}

/// Waits until both StatefulSets have every pod Ready on their update revision.
pub async fn wait_rolled_out(client: &kube::Client, timeout: Duration) {
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), NAMESPACE);
    wait_until(
        "every pod Ready on its update revision",
        timeout,
        async || {
            for name in STATEFUL_SETS {
                let set = sets.get_opt(name).await.ok().flatten()?;
                let wanted = set.spec.replicas?;
                let status = set.status?;
                let done = status.observed_generation == set.metadata.generation
                    && status.update_revision.is_some()
                    && status.current_revision == status.update_revision
                    && status.updated_replicas == Some(wanted)
                    && status.ready_replicas == Some(wanted)
                    && status.replicas == wanted;
                if !done {
                    return None;
                }
            }
            Some(())
        },
    )
    .await;
}

/// Waits until the cluster's condition `kind` has `status`; returns the condition.
pub async fn wait_condition(
    clusters: &Api<TrinoCluster>,
    kind: &str,
    status: &str,
    timeout: Duration,
) -> Value {
    let what = format!("{kind} {status}");
    wait_until(&what, timeout, async || {
        let cluster = clusters.get_status(CLUSTER).await.ok()?;
        let conditions = serde_json::to_value(cluster.status?).ok()?["conditions"].clone();
        conditions
            .as_array()?
            .iter()
            .find(|condition| condition["type"] == kind && condition["status"] == status)
            .cloned()
    })
    .await
}
