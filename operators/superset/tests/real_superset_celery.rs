//! Superset's Celery roles through the pod runner, as rendered (issue 26, item 1): the
//! web server, a worker and beat of `examples/superset/superset-celery.yaml`, on
//! Superset 6.1.0 (the image directory around the PyPI venv), a real PostgreSQL and a
//! real Redis (Debian's `redis-server`) with a password, serving TLS alone with a
//! certificate of its own CA, which Superset gets from a ConfigMap
//! (`clusterConfig.redis.tls`), each in a pod of its own behind the Service names the
//! spec gives.
//!
//! It proves, on the real products:
//! - a worker started before Redis runs stops with `BrokerUnreachable` in its
//!   termination message, which names the Service and never the password, and takes
//!   tasks once Redis runs (its restart, as the kubelet's back-off brings it);
//! - beat sends `reports.scheduler` every minute and the worker runs it: Celery's own
//!   statistics count it, and its results sit in Redis' results database as SUCCESS;
//! - the web server's caches and SQL Lab's results reach Redis over TLS too;
//! - a deleted worker stops with Celery's warm shutdown, well within its grace period.
//!
//! Ignored by default (it needs root, the Superset image directory, PostgreSQL and
//! Redis); `cargo xtask test` provisions them and runs it. Every process is stopped by
//! its PID.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use strata_pod_runner::manifest::apply_all;
use strata_pod_runner::runner::{PodRunner, RunnerOptions};
use strata_pod_runner::status::State;
use strata_testing::tools::{self, REDIS_SERVER, SUPERSET_IMAGE};

use self::support::{DATABASE_POD, NAMESPACE, database_objects, example_objects, images};

const REDIS_POD: &str = "redis-0";
const REDIS_PASSWORD: &str = "r3dis p@ss:wörd/1";
const REDIS_HOST: &str = "redis.default.svc.cluster.local";
const POD: &str = "superset-celery-node-default-0";
const WORKER_POD: &str = "superset-celery-worker-default-0";
const BEAT_POD: &str = "superset-celery-beat-default-0";

/// An image directory for Redis in `dir`: no image paths, the host's programs on `PATH`,
/// run as `nobody`.
fn redis_image(dir: &std::path::Path) {
    let server = tools::required_path(REDIS_SERVER).unwrap_or_else(|error| panic!("{error}"));
    let bin = server.parent().expect("redis-server's directory");
    std::fs::create_dir_all(dir).expect("the Redis image directory");
    let manifest = json!({
        "references": ["docker.io/library/redis:7.0"],
        "paths": [],
        "env": [["PATH", format!("{}:/usr/bin:/bin", bin.display())]],
        "workingDir": "/",
        "user": [65534, 65534]
    });
    std::fs::write(dir.join("strata-image.json"), manifest.to_string())
        .expect("the Redis image's manifest");
}

/// Redis's CA for Superset, as trust-manager would publish it.
const REDIS_CA_CONFIG_MAP: &str = "redis-ca";

/// Redis with a password from its Secret, serving TLS alone with a certificate for its
/// Service name, persisting nothing; the CA's ConfigMap for Superset; its Service. The
/// Secrets and the ConfigMap come first.
fn redis_objects() -> Vec<Value> {
    let (ca_pem, server) = support::server_certificates("redis-ca", REDIS_HOST);
    vec![
        support::secret("redis", json!({"password": REDIS_PASSWORD})),
        support::secret(
            "redis-tls",
            json!({"tls.crt": server.certificate_pem(), "tls.key": server.key_pem(), "ca.crt": ca_pem}),
        ),
        support::named_ca_config_map(REDIS_CA_CONFIG_MAP, &ca_pem),
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": REDIS_POD, "namespace": NAMESPACE, "labels": {"app": "redis"}},
            "spec": {
                "terminationGracePeriodSeconds": 5,
                "containers": [{
                    "name": "redis",
                    "image": "docker.io/library/redis:7.0",
                    "command": ["bash", "-c", "exec redis-server --port 0 --tls-port 6379 --tls-cert-file /tls/tls.crt --tls-key-file /tls/tls.key --tls-auth-clients no --bind 0.0.0.0 --protected-mode no --save '' --appendonly no --dir /data --requirepass \"$REDIS_PASSWORD\""],
                    "env": [{"name": "REDIS_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "redis", "key": "password"}}}],
                    "readinessProbe": {"exec": {"command": ["bash", "-c", format!("REDISCLI_AUTH=\"$REDIS_PASSWORD\" {REDIS_CLI} ping | grep -q PONG")]}, "periodSeconds": 2},
                    "volumeMounts": [
                        {"name": "data", "mountPath": "/data"},
                        {"name": "tls", "mountPath": "/tls", "readOnly": true}
                    ]
                }],
                "volumes": [
                    {"name": "data", "emptyDir": {}},
                    {"name": "tls", "secret": {"secretName": "redis-tls", "defaultMode": 0o444}}
                ]
            }
        }),
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "redis", "namespace": NAMESPACE},
            "spec": {"selector": {"app": "redis"}, "ports": [{"name": "redis", "port": 6379}]}
        }),
    ]
}

/// `redis-cli` in the Redis pod, over TLS.
const REDIS_CLI: &str = "redis-cli --tls --cacert /tls/ca.crt";

/// The example with one worker pod of one process, as this machine has room for.
fn celery_objects() -> Vec<Value> {
    example_objects("superset-celery.yaml", |cluster| {
        assert_eq!(
            cluster["spec"]["clusterConfig"]["redis"],
            json!({"host": REDIS_HOST, "passwordSecret": "redis"})
        );
        // Security review, finding 22: Redis over TLS, checked against a CA of its own.
        cluster["spec"]["clusterConfig"]["redis"]["tls"] =
            json!({"caCertificate": {"configMapName": REDIS_CA_CONFIG_MAP}});
        cluster["spec"]["workers"]["config"]["concurrency"] = json!(1);
        cluster["spec"]["workers"]["roleGroups"]["default"]["replicas"] = json!(1);
    })
}

/// `python -c script` in the web server's container; its exit code and output.
async fn web_server_python(runner: &PodRunner, script: &str) -> (i32, String) {
    runner
        .exec(
            NAMESPACE,
            POD,
            "superset",
            &["python", "-c", script],
            Duration::from_secs(60),
        )
        .await
        .unwrap_or_else(|error| panic!("{error}"))
        .expect("the web server's pod answers")
}

/// `redis-cli` in the Redis pod, on database `database`; its output.
async fn redis_cli(runner: &PodRunner, database: u8, arguments: &str) -> String {
    let command =
        format!("REDISCLI_AUTH=\"$REDIS_PASSWORD\" {REDIS_CLI} -n {database} {arguments}");
    let (code, output) = runner
        .exec(
            NAMESPACE,
            REDIS_POD,
            "redis",
            &["bash", "-c", &command],
            Duration::from_secs(30),
        )
        .await
        .unwrap_or_else(|error| panic!("{error}"))
        .expect("redis-cli answers");
    assert_eq!(code, 0, "{output}");
    output
}

/// Celery's statistics of every worker, asked through the broker from the worker pod
/// with the pod's own settings (`strata_celery.redis_url`).
async fn worker_stats(runner: &PodRunner) -> Value {
    let script = "import json; from celery import Celery; \
                  from strata_celery import redis_tls, redis_url; \
                  app = Celery(broker=redis_url(0)); app.conf.broker_use_ssl = redis_tls(); \
                  print(json.dumps(app.control.inspect(timeout=5).stats()))";
    let (code, output) = runner
        .exec(
            NAMESPACE,
            WORKER_POD,
            "worker",
            &["python", "-c", script],
            Duration::from_secs(60),
        )
        .await
        .unwrap_or_else(|error| panic!("{error}"))
        .expect("the worker pod answers");
    assert_eq!(code, 0, "{output}");
    serde_json::from_str(output.trim().lines().last().unwrap_or("null"))
        .unwrap_or_else(|error| panic!("{error}: {output}"))
}

/// The worker container's termination message once it holds `reason`.
async fn worker_stopped_with(runner: &PodRunner, reason: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let message = runner
            .status(NAMESPACE, WORKER_POD)
            .and_then(|status| {
                status
                    .containers
                    .into_iter()
                    .find(|container| container.name == "worker")
            })
            .and_then(|container| match container.state {
                State::Terminated(ended) => ended.message,
                _ => container.last_state.and_then(|ended| ended.message),
            });
        match message {
            Some(message) if message.contains(reason) => return message,
            _ if Instant::now() > deadline => {
                panic!("no {reason} from the worker: {message:?}")
            }
            _ => tokio::time::sleep(Duration::from_secs(2)).await,
        }
    }
}

fn runner(scratch: &std::path::Path) -> PodRunner {
    let mut images = images(scratch, &[SUPERSET_IMAGE]);
    let redis = scratch.join("redis-image");
    redis_image(&redis);
    images.add(&redis).unwrap_or_else(|error| panic!("{error}"));
    PodRunner::new(RunnerOptions::new(images))
        .unwrap_or_else(|error| panic!("the pod runner cannot start: {error}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root, the Superset image directory, PostgreSQL and Redis; run by cargo xtask test"]
async fn beat_schedules_the_report_scheduler_and_the_worker_runs_it_on_a_real_redis() {
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let mut runner = runner(scratch.path());
    let (database, _) = database_objects();
    apply_all(&mut runner, &database).unwrap_or_else(|error| panic!("{error}"));
    runner
        .wait_ready(NAMESPACE, &[DATABASE_POD], Duration::from_secs(60))
        .await
        .unwrap_or_else(|report| panic!("{report}"));

    // Superset before Redis: the web server migrates the database meanwhile, and the
    // worker gives up on the broker with a reason of its own.
    let redis = redis_objects();
    apply_all(&mut runner, &redis[..3]).unwrap_or_else(|error| panic!("{error}"));
    apply_all(&mut runner, &celery_objects()).unwrap_or_else(|error| panic!("{error}"));
    let refused = worker_stopped_with(&runner, "BrokerUnreachable").await;
    eprintln!("without Redis, the worker stopped: {refused}");
    assert!(refused.contains(&format!("{REDIS_HOST}:6379")), "{refused}");
    assert!(!refused.contains("p@ss"), "the password leaked: {refused}");

    apply_all(&mut runner, &redis[3..]).unwrap_or_else(|error| panic!("{error}"));
    let started = Instant::now();
    runner
        .wait_ready(
            NAMESPACE,
            &[REDIS_POD, POD, WORKER_POD, BEAT_POD],
            Duration::from_secs(600),
        )
        .await
        .unwrap_or_else(|report| panic!("{report}"));
    eprintln!(
        "Redis, the web server, the worker and beat were Ready {:?} after Redis was applied",
        started.elapsed()
    );

    // Beat sends the report scheduler at every minute; the worker runs it against the
    // metadata database, and stores its result in Redis.
    let deadline = Instant::now() + Duration::from_secs(180);
    let runs = loop {
        let stats = worker_stats(&runner).await;
        let runs = stats
            .as_object()
            .into_iter()
            .flat_map(|workers| workers.values())
            .filter_map(|worker| worker["total"]["reports.scheduler"].as_u64())
            .sum::<u64>();
        if runs > 0 {
            break runs;
        }
        assert!(
            Instant::now() < deadline,
            "no reports.scheduler ran in 3 minutes: {stats}"
        );
        tokio::time::sleep(Duration::from_secs(5)).await;
    };
    eprintln!("the worker ran reports.scheduler {runs} time(s)");
    let results = redis_cli(&runner, 1, "--scan --pattern 'celery-task-meta-*'").await;
    let keys: Vec<&str> = results.lines().filter(|key| !key.is_empty()).collect();
    assert!(!keys.is_empty(), "no task result in Redis' database 1");
    for key in keys {
        let result = redis_cli(&runner, 1, &format!("GET '{key}'")).await;
        assert!(
            result.contains("\"status\": \"SUCCESS\""),
            "{key}: {result}"
        );
    }

    // The web server's caches and SQL Lab's results reach Redis over TLS too, with
    // superset_config.py's own settings.
    let script = "import superset_config as c; from flask import Flask; \
                  from flask_caching import Cache; \
                  cache = Cache(Flask('probe'), config=dict(c.CACHE_CONFIG)); \
                  cache.set('strata-probe', 'cached'); \
                  c.RESULTS_BACKEND.set('strata-probe', 'result'); \
                  print(cache.get('strata-probe'), c.RESULTS_BACKEND.get('strata-probe'))";
    let (code, output) = web_server_python(&runner, script).await;
    assert!(
        code == 0 && output.trim_end().ends_with("cached result"),
        "{output}"
    );
    for (database, key) in [
        (2, "superset_strata-probe"),
        (3, "superset_results_strata-probe"),
    ] {
        let found = redis_cli(&runner, database, &format!("EXISTS '{key}'")).await;
        assert_eq!(found.trim(), "1", "{key} in database {database}");
    }

    // Finding 25: a refused login through the web server's API is counted in Redis,
    // where every web server reads the same count, over the same TLS.
    let login = "import json, urllib.request, urllib.error\n\
                 body = json.dumps({'username': 'mallory', 'password': 'guess', 'provider': 'db', 'refresh': False})\n\
                 request = urllib.request.Request('http://127.0.0.1:8088/api/v1/security/login', \
                 data=body.encode(), headers={'Content-Type': 'application/json'})\n\
                 try:\n\
                 \x20   urllib.request.urlopen(request, timeout=30)\n\
                 except urllib.error.HTTPError as error:\n\
                 \x20   print('status', error.code)\n";
    let (code, output) = web_server_python(&runner, login).await;
    assert!(
        code == 0 && output.contains("status 401"),
        "{code}: {output}"
    );
    let counted = redis_cli(&runner, 2, "--scan --pattern 'LIMITS*'").await;
    assert!(
        counted.lines().any(|key| key.contains("SecurityApi")),
        "no login count in Redis' database 2: {counted:?}"
    );

    // The worker is Celery itself, so the deletion's SIGTERM reaches it: a warm
    // shutdown, well within its 5 minutes.
    let attempt = runner
        .status(NAMESPACE, WORKER_POD)
        .and_then(|status| {
            status
                .containers
                .into_iter()
                .find(|container| container.name == "worker")
        })
        .map_or(0, |container| container.restart_count);
    let log = runner
        .log(NAMESPACE, WORKER_POD, "worker", attempt)
        .expect("the worker's log");
    let asked = Instant::now();
    let stopping = runner
        .begin_delete(NAMESPACE, WORKER_POD)
        .unwrap_or_else(|error| panic!("{error}"));
    let ended = stopping.stop(None).await;
    let stopped = asked.elapsed();
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    runner
        .finish_delete(ended)
        .unwrap_or_else(|error| panic!("{error}"));
    eprintln!("the worker stopped {stopped:?} after its deletion");
    assert!(stopped < Duration::from_secs(60), "stopped in {stopped:?}");
    assert!(
        said.contains("worker: Warm shutdown (MainProcess)"),
        "no warm shutdown in the worker's log:\n{said}"
    );
    runner.shutdown().await;
}
