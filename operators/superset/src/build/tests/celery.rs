//! Celery: what the spec may ask, and the workers' and beat's objects.

use pretty_assertions::assert_eq;
use rstest::rstest;
use serde_json::{Value, json};
use strata_operator::error::ReconcileError;

use super::objects_of;
use crate::validate::tests::cluster;
use crate::validate::{DEFAULT_CLUSTER_DOMAIN, ValidatedCluster};
use strata_testing::manifests::named;

const REDIS: &str = "redis.default.svc.cluster.local";

/// The cluster of the other tests, with `redis` and `spec` merged in.
fn celery_cluster(redis: Value, spec: Value) -> Result<ValidatedCluster, ReconcileError> {
    let config = if redis.is_null() {
        json!({})
    } else {
        json!({ "redis": redis })
    };
    let mut cluster = serde_json::to_value(cluster(config, Value::Null))
        .map_err(|error| ReconcileError::operator_bug("Fixture", error.to_string()))?;
    if let (Some(target), Value::Object(patch)) = (cluster["spec"].as_object_mut(), spec) {
        target.extend(patch);
    }
    let cluster = serde_json::from_value(cluster)
        .map_err(|error| ReconcileError::operator_bug("Fixture", error.to_string()))?;
    ValidatedCluster::new(&cluster, DEFAULT_CLUSTER_DOMAIN)
}

fn workers_and_beat() -> Value {
    json!({
        "workers": {"roleGroups": {"default": {"replicas": 3}}},
        "beat": {"roleGroups": {"default": {}}}
    })
}

fn reason(result: Result<ValidatedCluster, ReconcileError>) -> String {
    match result {
        Ok(_) => "accepted".to_owned(),
        Err(error) => error.reason().to_owned(),
    }
}

#[rstest]
#[case::workers_without_a_broker(Value::Null, json!({"workers": {"roleGroups": {"default": {}}}}), "CeleryWithoutBroker")]
#[case::beat_without_a_broker(Value::Null, json!({"beat": {"roleGroups": {"default": {}}}}), "CeleryWithoutBroker")]
#[case::redis_naming_nothing(json!({}), workers_and_beat(), "InvalidRedis")]
#[case::redis_by_host_and_url(json!({"host": REDIS, "urlSecret": "redis-url"}), workers_and_beat(), "InvalidRedis")]
#[case::a_url_with_a_password_secret(json!({"urlSecret": "redis-url", "passwordSecret": "redis"}), workers_and_beat(), "InvalidRedis")]
#[case::an_empty_host(json!({"host": " "}), workers_and_beat(), "InvalidRedis")]
#[case::a_host_with_a_port(json!({"host": "redis:6379"}), workers_and_beat(), "InvalidRedis")]
#[case::port_zero(json!({"host": REDIS, "port": 0, "passwordSecret": "redis"}), workers_and_beat(), "InvalidRedis")]
#[case::a_host_without_a_password(json!({"host": REDIS}), workers_and_beat(), "InsecureRedis")]
#[case::caches_alone_on_a_host_without_a_password(json!({"host": REDIS}), json!({}), "InsecureRedis")]
#[case::an_ipv4_host(json!({"host": "10.0.0.7", "passwordSecret": "redis"}), workers_and_beat(), "accepted")]
#[case::databases_past_the_sixteenth(json!({"host": REDIS, "firstDatabase": 13, "passwordSecret": "redis"}), workers_and_beat(), "InvalidRedis")]
#[case::two_beats(json!({"host": REDIS, "passwordSecret": "redis"}), json!({"beat": {"roleGroups": {"default": {"replicas": 2}}}}), "BeatNotSingle")]
#[case::a_beat_of_no_pod(json!({"host": REDIS, "passwordSecret": "redis"}), json!({"beat": {"roleGroups": {"default": {"replicas": 0}}}}), "BeatNotSingle")]
#[case::beat_in_two_groups(json!({"host": REDIS, "passwordSecret": "redis"}), json!({"beat": {"roleGroups": {"a": {}, "b": {}}}}), "BeatNotSingle")]
#[case::workers_without_groups(json!({"host": REDIS, "passwordSecret": "redis"}), json!({"workers": {"roleGroups": {}}}), "NoRoleGroups")]
#[case::redis_alone_for_the_caches(json!({"host": REDIS, "passwordSecret": "redis"}), json!({}), "accepted")]
#[case::workers_and_beat_on_a_url(json!({"urlSecret": "redis-url", "firstDatabase": 12}), workers_and_beat(), "accepted")]
#[case::tls_with_the_system_trust_store(json!({"host": REDIS, "passwordSecret": "redis", "tls": {}}), workers_and_beat(), "accepted")]
#[case::tls_with_a_ca_in_a_config_map(json!({"host": REDIS, "passwordSecret": "redis", "tls": {"caCertificate": {"configMapName": "redis-ca"}}}), workers_and_beat(), "accepted")]
#[case::a_ca_in_two_objects(json!({"host": REDIS, "passwordSecret": "redis", "tls": {"caCertificate": {"configMapName": "redis-ca", "secretName": "redis-ca"}}}), workers_and_beat(), "InvalidRedisTls")]
#[case::a_ca_in_no_object(json!({"urlSecret": "redis-url", "tls": {"caCertificate": {}}}), workers_and_beat(), "InvalidRedisTls")]
fn celery_specs_are_checked(#[case] redis: Value, #[case] spec: Value, #[case] expected: &str) {
    assert_eq!(reason(celery_cluster(redis, spec)), expected);
}

#[rstest]
#[case::password_by_host(json!({"host": REDIS, "passwordSecret": "redis"}), Some(("redis", "password")))]
#[case::whole_url(json!({"urlSecret": "redis-url"}), Some(("redis-url", "url")))]
fn the_redis_secret_is_read_by_reference(
    #[case] redis: Value,
    #[case] expected: Option<(&str, &str)>,
) -> Result<(), ReconcileError> {
    let cluster = celery_cluster(redis, workers_and_beat())?;
    let secret = cluster
        .secrets()
        .into_iter()
        .find(|secret| secret.field.starts_with("clusterConfig.redis"))
        .map(|secret| (secret.name, secret.keys));
    assert_eq!(
        secret,
        expected.map(|(name, key)| (name.to_owned(), vec![key]))
    );
    Ok(())
}

#[test]
fn workers_and_beat_get_their_objects_and_budgets() -> Result<(), ReconcileError> {
    let objects = objects_of(&celery_cluster(
        json!({"host": REDIS, "passwordSecret": "redis"}),
        workers_and_beat(),
    )?)?;
    let names = strata_testing::manifests::object_names(&objects);
    for expected in [
        "ConfigMap/simple-superset-worker-default",
        "Service/simple-superset-worker-default",
        "StatefulSet/simple-superset-worker-default",
        "PodDisruptionBudget/simple-superset-worker",
        "ConfigMap/simple-superset-beat-default",
        "Service/simple-superset-beat-default",
        "StatefulSet/simple-superset-beat-default",
        "PodDisruptionBudget/simple-superset-beat",
    ] {
        assert!(names.contains(expected), "{expected} is missing: {names:?}");
    }
    let workers = named(&objects, "StatefulSet", "simple-superset-worker-default");
    assert_eq!(workers["spec"]["replicas"], 3);
    assert_eq!(workers["spec"]["podManagementPolicy"], "Parallel");
    let pod = &workers["spec"]["template"]["spec"];
    assert_eq!(pod["terminationGracePeriodSeconds"], 300);
    assert_eq!(pod.get("initContainers"), None, "only web servers migrate");
    let worker = &pod["containers"][0];
    assert_eq!(worker["name"], "worker");
    assert_eq!(
        worker["command"],
        json!([
            "python",
            "/strata/config/strata_celery.py",
            "run",
            "0",
            "celery",
            "--app=superset.tasks.celery_app:app",
            "worker",
            "--pool=prefork",
            "--concurrency=2",
            "--optimization=fair",
            "--without-gossip",
            "--without-mingle",
            "--loglevel=INFO"
        ])
    );
    assert_eq!(
        worker["readinessProbe"]["exec"]["command"][2],
        "exec python /strata/config/strata_celery.py ping 0"
    );
    let env = worker["env"].as_array().cloned().unwrap_or_default();
    let variable = |name: &str| {
        env.iter()
            .find(|variable| variable["name"] == name)
            .cloned()
    };
    assert_eq!(
        variable("STRATA_REDIS_PASSWORD").map(|variable| variable["valueFrom"].clone()),
        Some(json!({"secretKeyRef": {"name": "redis", "key": "password", "optional": false}}))
    );
    assert_eq!(
        variable("STRATA_REDIS_HOST").map(|variable| variable["value"].clone()),
        Some(json!(REDIS))
    );
    let beat = named(&objects, "StatefulSet", "simple-superset-beat-default");
    assert_eq!(beat["spec"]["replicas"], 1);
    assert_eq!(
        beat["spec"]["template"]["spec"]["containers"][0]["command"][6],
        "beat"
    );
    let worker_pdb = named(&objects, "PodDisruptionBudget", "simple-superset-worker");
    assert_eq!(worker_pdb["spec"]["maxUnavailable"], 1);
    Ok(())
}

#[test]
fn every_pod_shares_the_redis_config_and_alerts_need_workers_and_beat() -> Result<(), ReconcileError>
{
    let with_both = objects_of(&celery_cluster(
        json!({"urlSecret": "redis-url", "firstDatabase": 4}),
        workers_and_beat(),
    )?)?;
    for config_map in [
        "simple-superset-node-default",
        "simple-superset-worker-default",
        "simple-superset-beat-default",
    ] {
        let data = &named(&with_both, "ConfigMap", config_map)["data"];
        let config = data["superset_config.py"].as_str().unwrap_or_default();
        for expected in [
            "\"broker_url\": redis_url(4)",
            "\"result_backend\": redis_url(5)",
            "\"CACHE_REDIS_URL\": redis_url(6)",
            "RESULTS_BACKEND = RedisCache(host=redis_client(7)",
            "FEATURE_FLAGS = {\"ALERT_REPORTS\": True}",
        ] {
            assert!(
                config.contains(expected),
                "{config_map}: {expected}:\n{config}"
            );
        }
        assert!(data["strata_celery.py"].is_string(), "{config_map}");
    }
    let workers_only = objects_of(&celery_cluster(
        json!({"host": REDIS, "passwordSecret": "redis"}),
        json!({"workers": {"roleGroups": {"default": {}}}}),
    )?)?;
    let config = named(&workers_only, "ConfigMap", "simple-superset-node-default")["data"]
        ["superset_config.py"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(config.contains("CELERY_CONFIG = "), "{config}");
    assert!(
        !config.contains("ALERT_REPORTS"),
        "no beat, no schedules: {config}"
    );
    Ok(())
}

#[test]
fn redis_tls_reaches_every_pod_with_its_ca_and_nothing_else_of_the_secret()
-> Result<(), ReconcileError> {
    let objects = objects_of(&celery_cluster(
        json!({"host": REDIS, "passwordSecret": "redis", "tls": {"caCertificate": {"secretName": "redis-tls"}}}),
        workers_and_beat(),
    )?)?;
    for set in [
        "simple-superset-node-default",
        "simple-superset-worker-default",
        "simple-superset-beat-default",
    ] {
        let pod = &named(&objects, "StatefulSet", set)["spec"]["template"]["spec"];
        let volume = pod["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|volume| volume["name"] == "redis-ca")
            .unwrap_or_else(|| panic!("{set}: no redis-ca volume"));
        assert_eq!(
            volume["secret"],
            json!({"secretName": "redis-tls", "items": [{"key": "ca.crt", "path": "ca.crt"}]}),
            "{set}: only ca.crt, never the Secret's key"
        );
        for container in pod["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .chain(pod["initContainers"].as_array().into_iter().flatten())
            .filter(|container| container["name"] != "statsd-exporter")
        {
            let env = &container["env"];
            let value = |name: &str| {
                env.as_array()
                    .into_iter()
                    .flatten()
                    .find(|variable| variable["name"] == name)
                    .map(|variable| variable["value"].clone())
            };
            assert_eq!(
                value("STRATA_REDIS_TLS"),
                Some(json!("true")),
                "{set}: {container}"
            );
            assert_eq!(
                value("STRATA_REDIS_CA_FILE"),
                Some(json!("/strata/redis-tls/ca.crt")),
                "{set}"
            );
            assert!(
                container["volumeMounts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|mount| mount["name"] == "redis-ca"
                        && mount["mountPath"] == "/strata/redis-tls"),
                "{set}: {container}"
            );
        }
    }
    Ok(())
}
