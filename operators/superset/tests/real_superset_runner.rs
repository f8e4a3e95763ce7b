//! The example's Superset pod through the pod runner, as rendered: its init container
//! and its gunicorn command on Superset 6.1.0 (the image directory around the PyPI
//! venv), against a real PostgreSQL in a pod of its own (Debian's server programs)
//! behind the Service name the example names, taking TLS connections only, which
//! Superset checks against the CA from a ConfigMap. Nothing is retyped: gunicorn binds
//! `0.0.0.0:8088` in its own network namespace.
//!
//! Ignored by default (it needs root, the Superset image directory and PostgreSQL);
//! `cargo xtask test` provisions them and runs it. Every process is stopped by its PID.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use strata_operator::pod_security::PodSecurity;
use strata_pod_runner::manifest::apply_all;
use strata_pod_runner::openshift::RestrictedV2;
use strata_pod_runner::runner::{PodRunner, RunnerOptions};
use strata_testing::tools::SUPERSET_IMAGE;

use self::support::{
    ADMIN_PASSWORD, DATABASE_POD, DATABASE_SERVICE_ACCOUNT, NAMESPACE, POD, ca_config_map,
    database_certificates, database_objects, images, init_failure, query, superset_objects,
};

/// The admin row in the metadata database.
async fn admin_row(runner: &PodRunner) -> String {
    query(runner, "SELECT username, password FROM ab_user").await
}

/// How many of the `superset` user's sessions there are, and whether all are on TLS.
async fn superset_sessions(runner: &PodRunner) -> String {
    query(
        runner,
        "SELECT count(*), bool_and(ssl) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) \
         WHERE usename = 'superset'",
    )
    .await
}

/// A plaintext login as the `superset` user over the pod network: the exit code and
/// what `psql` said.
async fn plaintext_login(runner: &PodRunner) -> (i32, String) {
    let address = runner
        .address(NAMESPACE, DATABASE_POD)
        .expect("the database's address");
    let target = format!("host={address} user=superset dbname=superset sslmode=disable");
    let command = format!("PGPASSWORD=\"$DATABASE_PASSWORD\" psql '{target}' -tAc 'SELECT 1' 2>&1");
    runner
        .exec(
            NAMESPACE,
            DATABASE_POD,
            "postgresql",
            &["bash", "-c", &command],
            Duration::from_secs(30),
        )
        .await
        .unwrap_or_else(|error| panic!("{error}"))
        .expect("psql answers")
}

/// Logs in through Superset's API from the database pod's network; the answer's status
/// and body.
fn login(runner: &PodRunner) -> (u16, String) {
    let address = format!(
        "{}:8088",
        runner.address(NAMESPACE, POD).expect("the pod's address")
    );
    let body =
        json!({"username": "admin", "password": ADMIN_PASSWORD, "provider": "db", "refresh": true})
            .to_string();
    runner
        .in_pod(NAMESPACE, DATABASE_POD, move || {
            strata_testing::http::request(
                &address,
                "POST",
                "/api/v1/security/login",
                &[("Content-Type", "application/json")],
                Some(&body),
            )
        })
        .unwrap_or_else(|error| panic!("{error}"))
        .map(|response| (response.status, response.body))
        .unwrap_or_else(|error| panic!("{error}"))
}

/// The statsd exporter's metrics, scraped from the database pod's network as
/// Prometheus would scrape the pod.
fn scrape(runner: &PodRunner) -> String {
    let address = format!(
        "{}:{}",
        runner.address(NAMESPACE, POD).expect("the pod's address"),
        superset_operator::build::metrics::METRICS.number
    );
    runner
        .in_pod(NAMESPACE, DATABASE_POD, move || {
            strata_testing::http::request(&address, "GET", "/metrics", &[], None)
        })
        .unwrap_or_else(|error| panic!("{error}"))
        .map(|response| {
            assert_eq!(response.status, 200, "{}", response.body);
            response.body
        })
        .unwrap_or_else(|error| panic!("{error}"))
}

/// A runner with the Superset image directory and PostgreSQL's that admits pods as
/// OpenShift's restricted-v2 does (issue 26, item 4): Superset runs with an arbitrary uid
/// in group 0, and the database under `anyuid`. The fixed uid is proven by
/// `real_superset_trino`.
fn runner(scratch: &std::path::Path) -> PodRunner {
    let mut options = RunnerOptions::new(images(scratch, &[SUPERSET_IMAGE]));
    options.openshift = Some(RestrictedV2::random().with_anyuid(DATABASE_SERVICE_ACCOUNT));
    PodRunner::new(options).unwrap_or_else(|error| panic!("the pod runner cannot start: {error}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root, the Superset image directory and PostgreSQL; run by cargo xtask test"]
async fn the_rendered_pod_initialises_the_database_serves_logins_and_stops() {
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let mut runner = runner(scratch.path());
    let (database, database_ca) = database_objects();
    apply_all(&mut runner, &database).unwrap_or_else(|error| panic!("{error}"));
    runner
        .wait_ready(NAMESPACE, &[DATABASE_POD], Duration::from_secs(60))
        .await
        .unwrap_or_else(|report| panic!("{report}"));

    // A CA that did not sign the server's certificate: the init container stops
    // before any migration, naming the database.
    let mut superset = superset_objects(|_| {});
    for object in &mut superset {
        PodSecurity::Openshift.apply_to_value(object);
    }
    let (stranger, _) = database_certificates();
    apply_all(&mut runner, &[ca_config_map(&stranger)]).unwrap_or_else(|error| panic!("{error}"));
    apply_all(&mut runner, &superset).unwrap_or_else(|error| panic!("{error}"));
    let refused = init_failure(&runner, "DatabaseUnreachable").await;
    eprintln!("with another CA, the init container stopped: {refused}");
    runner
        .delete(NAMESPACE, POD)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    apply_all(&mut runner, &[ca_config_map(&database_ca)])
        .unwrap_or_else(|error| panic!("{error}"));

    // The init container, then gunicorn, as rendered; the probes ask the real /health.
    apply_all(&mut runner, &superset).unwrap_or_else(|error| panic!("{error}"));
    let started = Instant::now();
    runner
        .wait_ready(NAMESPACE, &[POD], Duration::from_secs(300))
        .await
        .unwrap_or_else(|report| panic!("{report}"));
    eprintln!(
        "the Superset pod was Ready {:?} after it was applied",
        started.elapsed()
    );
    let admin_before = admin_row(&runner).await;
    assert!(admin_before.starts_with("admin|"), "{admin_before}");
    let (status, body) = login(&runner);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("access_token"), "{body}");
    // Issue 26, item 2: gunicorn's statsd metrics reach Prometheus through the
    // exporter beside it: every metric the alerts read is served, the login's 200
    // among the responses.
    let metrics = scrape(&runner);
    let served: Vec<&str> = metrics
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split(['{', ' ']).next())
        .collect();
    for group in superset_operator::build::alerts::rule_groups(
        &strata_model::monitoring::cluster_matchers(NAMESPACE, "superset", "simple-superset"),
    ) {
        for name in group.metric_names() {
            assert!(
                served.contains(&name.as_str()),
                "{name} is not served:\n{metrics}"
            );
        }
    }
    assert!(
        metrics.contains("superset_gunicorn_responses_total{status=\"200\"}"),
        "{metrics}"
    );
    // The database takes nothing but TLS, so the migrations and the login went over
    // it; the web server's pooled sessions say so too.
    let (code, refused) = plaintext_login(&runner).await;
    assert!(
        code != 0 && refused.contains("no encryption"),
        "a plaintext login: {code} {refused}"
    );
    let sessions = superset_sessions(&runner).await;
    assert!(
        sessions.ends_with("|t") && !sessions.starts_with("0|"),
        "Superset's sessions (count|all on TLS): {sessions}"
    );

    // gunicorn is the container's PID 1 (`exec`): a deletion ends it on SIGTERM, well
    // within the pod's grace period.
    let asked = Instant::now();
    runner
        .delete(NAMESPACE, POD)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let stopped = asked.elapsed();
    eprintln!("the Superset pod stopped {stopped:?} after its deletion");
    assert!(stopped < Duration::from_secs(60), "stopped in {stopped:?}");

    // A second rollout: its init changes nothing, and the admin logs in again.
    apply_all(&mut runner, &superset).unwrap_or_else(|error| panic!("{error}"));
    runner
        .wait_ready(NAMESPACE, &[POD], Duration::from_secs(300))
        .await
        .unwrap_or_else(|report| panic!("{report}"));
    assert_eq!(admin_row(&runner).await, admin_before);
    assert_eq!(login(&runner).0, 200);
    runner.shutdown().await;
}
