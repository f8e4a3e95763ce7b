//! Issue 26, item 2: every node serves `/metrics` to Prometheus exactly as the
//! operator's ServiceMonitor scrapes it: HTTPS to the pod, its certificate checked
//! against the discovery ConfigMap's CA for the coordinator Service's name, as the
//! operator's metrics user with the password of `<trino>-metrics`. The coordinator
//! serves every metric the alerts read.

use serde_json::Value;
use strata_model::monitoring::cluster_matchers;
use strata_pod_runner::runner::PodRunner;
use trino_operator::build::alerts::{ACTIVE_WORKERS, rule_groups};
use trino_operator::config::server::{METRICS_USER, SHUTDOWN_USER};

use crate::support::{
    COORDINATOR, NAMESPACE, WORKERS, client_answer, client_plan, fqdn, query_error,
};

/// The name the ServiceMonitor checks every node's certificate for.
fn server_name() -> String {
    format!("simple-trino-coordinator.{NAMESPACE}.svc.cluster.local")
}

async fn scrape(runner: &PodRunner, pod: &str, user: &str, password: &str) -> Value {
    client_answer(
        client_plan(
            runner,
            &["metrics", &fqdn(pod), &server_name(), user, password],
        ),
        "a scrape",
    )
    .await
}

/// Scrapes every node as the ServiceMonitor would, and as others would not get in.
pub async fn served_to_the_metrics_user_alone(runner: &PodRunner, password: &str) {
    for pod in [COORDINATOR, WORKERS[0], WORKERS[1]] {
        let answer = scrape(runner, pod, METRICS_USER, password).await;
        assert_eq!(answer["status"], 200, "{pod}: {answer}");
        let names = answer["names"].as_array().map(Vec::len).unwrap_or_default();
        eprintln!("{pod} serves {names} metrics");
        if pod == COORDINATOR {
            let served: Vec<&str> = answer["names"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            for group in rule_groups(&cluster_matchers(NAMESPACE, "trino", "simple-trino"), 2) {
                for name in group.metric_names() {
                    assert!(
                        served.contains(&name.as_str()),
                        "the coordinator does not serve {name}, which an alert reads"
                    );
                }
            }
            // The two workers, as TrinoWorkersMissing reads them.
            assert_eq!(
                answer["values"][ACTIVE_WORKERS], "2.0",
                "{}",
                answer["values"]
            );
        }
    }
    let wrong = scrape(runner, WORKERS[0], METRICS_USER, "wrong-password").await;
    assert_eq!(wrong["status"], 401, "{wrong}");
    let no_password = scrape(runner, WORKERS[0], METRICS_USER, "").await;
    assert_eq!(no_password["status"], 401, "{no_password}");
    // The operator's users authenticate, but run no query: their passwords live in
    // Secrets that pods and Prometheus read.
    for user in [METRICS_USER, SHUTDOWN_USER] {
        let refused = query_error(runner, user, "SELECT 1").await;
        assert!(refused.contains("Access Denied"), "{user}: {refused}");
    }
}
