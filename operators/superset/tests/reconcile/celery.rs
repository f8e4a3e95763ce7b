//! Celery on the in-memory API: workers or beat without a broker, a missing Redis
//! Secret, a worker that cannot reach Redis, and every role running once Redis is named.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde_json::json;
use strata_testing::wait::{eventually, stored_names, wait_for_degraded, wait_for_event};
use strata_testing::workloads::{run_until_settled, step_stateful_sets};

use crate::{CLUSTER, create_cluster, create_secret, create_user_secrets, patch_spec, spec, start};
use superset_operator::crd::SupersetCluster;

const REDIS: &str = "redis.default.svc.cluster.local";

fn workers_and_beat() -> serde_json::Value {
    json!({
        "workers": {"roleGroups": {"default": {"replicas": 2}}},
        "beat": {"roleGroups": {"default": {}}}
    })
}

#[tokio::test]
async fn workers_without_a_broker_are_refused_until_redis_is_named_and_its_secret_exists() {
    let harness = start();
    create_user_secrets(&harness).await;
    create_cluster(&harness, spec(workers_and_beat())).await;
    let degraded =
        wait_for_degraded::<SupersetCluster>(&harness, CLUSTER, "CeleryWithoutBroker").await;
    assert!(
        degraded.message.contains("clusterConfig.redis"),
        "{degraded:?}"
    );
    wait_for_event(&harness, CLUSTER, "Warning", "CeleryWithoutBroker").await;
    harness.settle().await;
    assert!(
        stored_names::<StatefulSet>(&harness).is_empty(),
        "nothing is applied, the web servers included"
    );

    // Redis named, its password Secret not there yet: named, still nothing applied.
    let mut cluster_config = spec(json!({}))["clusterConfig"].clone();
    cluster_config["redis"] = json!({"host": REDIS, "passwordSecret": "redis"});
    patch_spec(&harness, json!({"clusterConfig": cluster_config})).await;
    let degraded = wait_for_degraded::<SupersetCluster>(&harness, CLUSTER, "SecretMissing").await;
    assert!(degraded.message.contains("redis"), "{degraded:?}");
    assert!(stored_names::<StatefulSet>(&harness).is_empty());

    create_secret(&harness, "redis", &[("password", "p")]).await;
    let expected: std::collections::BTreeSet<String> = [
        "simple-superset-beat-default",
        "simple-superset-node-default",
        "simple-superset-worker-default",
    ]
    .map(str::to_owned)
    .into();
    eventually(
        "the web servers', workers' and beat's StatefulSets",
        || (stored_names::<StatefulSet>(&harness) == expected).then_some(()),
        || stored_names::<StatefulSet>(&harness),
    )
    .await;
    eventually(
        "a budget per role",
        || {
            let budgets = stored_names::<PodDisruptionBudget>(&harness);
            [
                "simple-superset-beat",
                "simple-superset-node",
                "simple-superset-worker",
            ]
            .iter()
            .all(|name| budgets.contains(*name))
            .then_some(())
        },
        || stored_names::<PodDisruptionBudget>(&harness),
    )
    .await;
}

#[tokio::test]
async fn a_worker_that_cannot_reach_redis_is_degraded_with_its_reason() {
    let harness = start();
    create_user_secrets(&harness).await;
    let mut patch = workers_and_beat();
    let mut cluster_config = spec(json!({}))["clusterConfig"].clone();
    cluster_config["redis"] = json!({"host": REDIS, "passwordSecret": "redis"});
    patch["clusterConfig"] = cluster_config;
    create_secret(&harness, "redis", &[("password", "p")]).await;
    create_cluster(&harness, spec(patch)).await;
    run_until_settled(&harness, || {}).await;

    harness
        .server
        .patch_status_direct::<Pod>(
            harness.namespace,
            "simple-superset-worker-default-1",
            json!({
                "phase": "Running",
                "containerStatuses": [{
                    "name": "worker", "image": "", "imageID": "", "ready": false,
                    "restartCount": 2,
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                    "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                        "message": "BrokerUnreachable\nRedis at redis.default.svc.cluster.local:6379 did not answer for 60 s: check clusterConfig.redis\n"}}
                }]
            }),
        )
        .expect("the pod status is written");
    step_stateful_sets(&harness);
    let degraded =
        wait_for_degraded::<SupersetCluster>(&harness, CLUSTER, "BrokerUnreachable").await;
    assert!(degraded.message.contains(REDIS), "{degraded:?}");
}
