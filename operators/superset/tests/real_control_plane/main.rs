//! The Superset operator on the real control plane (`strata_testing::control_plane`):
//! the real StatefulSet controller rolls its pods, and KWOK plays the kubelets.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Pod, Secret, Service};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use strata_operator::cli::Operator;
use strata_testing::control_plane::{
    ControlPlane, ControlPlaneOptions, RunningOperator, SIMULATED_FAILURE_ANNOTATION, pod_is_ready,
    wait_until,
};
use superset_operator::build::secret_key::SECRET_KEY_KEY;
use superset_operator::controller::cluster::ClusterContext;
use superset_operator::controller::run_with;
use superset_operator::crd::SupersetCluster;
use superset_operator::{OPERATOR_NAME, SupersetOperator};

mod exposure;

const CLUSTER: &str = "simple-superset";
const STATEFUL_SET: &str = "simple-superset-node-default";

async fn secret(client: &kube::Client, name: &str, data: serde_json::Value) {
    let secret: Secret =
        serde_json::from_value(json!({"metadata": {"name": name}, "stringData": data}))
            .expect("a Secret");
    Api::<Secret>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &secret)
        .await
        .expect("the Secret is created");
}

/// Every pod of the StatefulSet runs its update revision and is Ready.
async fn rolled_out(client: &kube::Client) -> Option<()> {
    let set = Api::<StatefulSet>::namespaced(client.clone(), "default")
        .get_opt(STATEFUL_SET)
        .await
        .ok()??;
    let status = set.status?;
    let update = status.update_revision?;
    let pods = Api::<Pod>::namespaced(client.clone(), "default")
        .list(&ListParams::default().labels(&format!("app.kubernetes.io/instance={CLUSTER}")))
        .await
        .ok()?;
    let current_and_ready = pods.items.iter().filter(|pod| {
        pod_is_ready(pod)
            && pod
                .metadata
                .labels
                .as_ref()
                .and_then(|labels| labels.get("controller-revision-hash"))
                == Some(&update)
    });
    (current_and_ready.count() == 2 && pods.items.len() == 2).then_some(())
}

async fn patch_pod_overrides(client: &kube::Client, overrides: serde_json::Value) {
    Api::<SupersetCluster>::namespaced(client.clone(), "default")
        .patch(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"nodes": {"podOverrides": overrides}}})),
        )
        .await
        .expect("the spec is patched");
}

/// How long each step may take.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(90);

/// A control plane with the CRD, the two Secrets the cluster names, the operator, and
/// the cluster, created.
async fn started() -> (ControlPlane, kube::Client, RunningOperator) {
    started_with(&[]).await
}

/// [`started`] with the CRDs `others` (another project's, such as the Gateway API's)
/// installed before the operator starts, which looks for them only then.
async fn started_with(
    others: &[k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition],
) -> (ControlPlane, kube::Client, RunningOperator) {
    let control_plane = ControlPlane::start(ControlPlaneOptions::default())
        .await
        .unwrap_or_else(|error| panic!("the control plane starts: {error}"));
    control_plane
        .install_crds(&SupersetOperator::crds())
        .await
        .expect("the CRD is established");
    if !others.is_empty() {
        control_plane
            .install_crds(others)
            .await
            .expect("the other CRDs are established");
    }
    let client = control_plane.client().await.expect("a client");
    secret(
        &client,
        "superset-db",
        json!({"username": "superset", "password": "p"}),
    )
    .await;
    secret(
        &client,
        "superset-admin",
        json!({"username": "admin", "firstname": "A", "lastname": "B",
               "email": "a@example.com", "password": "p"}),
    )
    .await;
    let operator = RunningOperator::start(client.clone(), OPERATOR_NAME, |runtime| {
        run_with(
            runtime,
            ClusterContext {
                cluster_domain: "cluster.local".to_owned(),
            },
        )
    });
    create_cluster(&client).await;
    (control_plane, client, operator)
}

async fn create_cluster(client: &kube::Client) {
    let cluster: SupersetCluster = serde_json::from_value(json!({
        "apiVersion": "superset.strata.dev/v1alpha1", "kind": "SupersetCluster",
        "metadata": {"name": CLUSTER},
        "spec": {
            "clusterConfig": {
                "metadataDatabase": {"postgresql": {
                    "host": "postgresql.default.svc", "database": "superset",
                    "credentialsSecret": "superset-db"}},
                "adminUser": {"secretName": "superset-admin"}
            },
            "nodes": {"roleGroups": {"default": {"replicas": 2}}}
        }
    }))
    .expect("a SupersetCluster");
    Api::<SupersetCluster>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &cluster)
        .await
        .expect("the cluster is created");
}

#[tokio::test]
#[ignore = "needs the control plane (STRATA_CONTROL_PLANE_BIN); run by cargo xtask test"]
async fn a_pod_broken_by_a_bad_revision_is_replaced_once_the_spec_is_fixed() {
    let (_control_plane, client, _operator) = started().await;
    wait_until("both web servers Ready", TIMEOUT, async || {
        rolled_out(&client).await
    })
    .await;

    // A bad revision: the real StatefulSet controller replaces the highest pod, which
    // crash-loops; OrderedReady then stops the roll there.
    patch_pod_overrides(
        &client,
        json!({"metadata": {"annotations": {SIMULATED_FAILURE_ANNOTATION: "CrashLoopBackOff"}}}),
    )
    .await;
    wait_until(
        "a pod of the bad revision crash-looping",
        TIMEOUT,
        async || {
            let pod = Api::<Pod>::namespaced(client.clone(), "default")
                .get_opt(&format!("{STATEFUL_SET}-1"))
                .await
                .ok()??;
            let waiting = pod
                .status?
                .container_statuses?
                .first()?
                .state
                .clone()?
                .waiting?
                .reason?;
            (waiting == "CrashLoopBackOff").then_some(())
        },
    )
    .await;

    // The user fixes the spec: the operator replaces the stuck pod, and the roll ends.
    patch_pod_overrides(&client, serde_json::Value::Null).await;
    wait_until(
        "every pod on the fixed revision and Ready",
        TIMEOUT,
        async || rolled_out(&client).await,
    )
    .await;
    let events = Api::<k8s_openapi::api::events::v1::Event>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .expect("Events");
    assert!(
        events
            .items
            .iter()
            .any(|event| event.reason.as_deref() == Some("ReplacingStuckPod")),
        "the replacement is told in an Event"
    );
}

/// The generated `SECRET_KEY`, read from its Secret.
async fn secret_key(client: &kube::Client) -> Option<Secret> {
    Api::<Secret>::namespaced(client.clone(), "default")
        .get_opt(&format!("{CLUSTER}-secret-key"))
        .await
        .expect("a read of the Secret")
}

fn key_of(secret: &Secret) -> Vec<u8> {
    secret
        .data
        .as_ref()
        .and_then(|data| data.get(SECRET_KEY_KEY))
        .map(|value| value.0.clone())
        .expect("the Secret holds SECRET_KEY")
}

/// Superset encrypts connection passwords and tokens in the user's metadata database
/// with `SECRET_KEY`. Deleting the cluster (`kubectl delete` and apply again, a GitOps
/// replace) lets the real garbage collector remove every child, but not the generated
/// key: the cluster created again under the same name runs with the same key.
#[tokio::test]
#[ignore = "needs the control plane (STRATA_CONTROL_PLANE_BIN); run by cargo xtask test"]
async fn the_generated_secret_key_outlives_its_cluster_and_serves_the_next_one() {
    let (_control_plane, client, _operator) = started().await;
    wait_until("both web servers Ready", TIMEOUT, async || {
        rolled_out(&client).await
    })
    .await;
    let first = secret_key(&client).await.expect("the generated key");
    let key = key_of(&first);
    assert!(
        first
            .metadata
            .owner_references
            .as_ref()
            .is_none_or(|owners| owners.iter().all(|owner| owner.controller != Some(true))),
        "no owner the garbage collector follows: {:?}",
        first.metadata.owner_references
    );

    Api::<SupersetCluster>::namespaced(client.clone(), "default")
        .delete(CLUSTER, &DeleteParams::foreground())
        .await
        .expect("the cluster is deleted");
    wait_until(
        "the garbage collector removing the cluster's StatefulSet",
        TIMEOUT,
        async || {
            let sets = Api::<StatefulSet>::namespaced(client.clone(), "default");
            let clusters = Api::<SupersetCluster>::namespaced(client.clone(), "default");
            let gone = sets.get_opt(STATEFUL_SET).await.ok()?.is_none()
                && clusters.get_opt(CLUSTER).await.ok()?.is_none();
            gone.then_some(())
        },
    )
    .await;
    let kept = secret_key(&client)
        .await
        .expect("the key outlives the cluster");
    assert_eq!(key_of(&kept), key);

    create_cluster(&client).await;
    wait_until("both web servers Ready again", TIMEOUT, async || {
        rolled_out(&client).await
    })
    .await;
    let reused = secret_key(&client).await.expect("the key");
    assert_eq!(
        key_of(&reused),
        key,
        "the new cluster runs with the same key"
    );
    assert_eq!(
        reused.metadata.uid, kept.metadata.uid,
        "adopted, not replaced"
    );
}

/// The cluster's condition `kind`, as `(status, reason)`.
pub(crate) async fn condition(client: &kube::Client, kind: &str) -> Option<(String, String)> {
    let cluster = Api::<SupersetCluster>::namespaced(client.clone(), "default")
        .get_status(CLUSTER)
        .await
        .ok()?;
    let conditions = serde_json::to_value(cluster.status?).ok()?["conditions"].clone();
    let found = conditions
        .as_array()?
        .iter()
        .find(|condition| condition["type"] == kind)?
        .clone();
    Some((
        found["status"].as_str()?.to_owned(),
        found["reason"].as_str()?.to_owned(),
    ))
}

/// The ready replicas of the StatefulSet `name`.
async fn ready_replicas(client: &kube::Client, name: &str) -> Option<i32> {
    Api::<StatefulSet>::namespaced(client.clone(), "default")
        .get_opt(name)
        .await
        .ok()??
        .status?
        .ready_replicas
}

#[tokio::test]
#[ignore = "needs the control plane (STRATA_CONTROL_PLANE_BIN); run by cargo xtask test"]
async fn celery_workers_and_beat_run_beside_the_web_servers_and_a_second_beat_is_refused() {
    let (_control_plane, client, _operator) = started().await;
    wait_until("both web servers Ready", TIMEOUT, async || {
        rolled_out(&client).await
    })
    .await;
    secret(&client, "redis", json!({"password": "p"})).await;
    let clusters = Api::<SupersetCluster>::namespaced(client.clone(), "default");
    clusters
        .patch(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {
                "clusterConfig": {"redis": {"host": "redis.default.svc.cluster.local", "passwordSecret": "redis"}},
                "workers": {"roleGroups": {"default": {"replicas": 2}}},
                "beat": {"roleGroups": {"default": {}}}
            }})),
        )
        .await
        .expect("the cluster is patched");

    // The real API server takes the objects (the Celery groups' headless Services have
    // no port), the StatefulSet controller runs the pods, and the cluster is Available.
    wait_until("two workers and beat Ready", TIMEOUT, async || {
        let workers = ready_replicas(&client, "simple-superset-worker-default").await?;
        let beat = ready_replicas(&client, "simple-superset-beat-default").await?;
        (workers == 2 && beat == 1).then_some(())
    })
    .await;
    wait_until("the cluster Available", TIMEOUT, async || {
        (condition(&client, "Available").await?.0 == "True").then_some(())
    })
    .await;
    let budgets = Api::<k8s_openapi::api::policy::v1::PodDisruptionBudget>::namespaced(
        client.clone(),
        "default",
    );
    for (name, max_unavailable) in [("simple-superset-worker", 1), ("simple-superset-beat", 1)] {
        let budget = budgets.get(name).await.expect("the role's budget");
        assert_eq!(
            budget.spec.and_then(|spec| spec.max_unavailable),
            Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(max_unavailable)),
            "{name}"
        );
    }
    let headless = Api::<Service>::namespaced(client.clone(), "default")
        .get("simple-superset-beat-default")
        .await
        .expect("beat's headless Service");
    assert_eq!(
        headless.spec.and_then(|spec| spec.cluster_ip).as_deref(),
        Some("None")
    );

    // Two beats would send every report twice: refused, and the running beat stays.
    clusters
        .patch(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"beat": {"roleGroups": {"default": {"replicas": 2}}}}})),
        )
        .await
        .expect("the cluster is patched");
    wait_until("Degraded with BeatNotSingle", TIMEOUT, async || {
        let (status, reason) = condition(&client, "Degraded").await?;
        (status == "True" && reason == "BeatNotSingle").then_some(())
    })
    .await;
    let beat = Api::<StatefulSet>::namespaced(client.clone(), "default")
        .get("simple-superset-beat-default")
        .await
        .expect("beat's StatefulSet");
    assert_eq!(beat.spec.replicas, Some(1));
}
