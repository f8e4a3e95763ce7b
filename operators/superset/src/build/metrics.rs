//! Superset's metrics (issue 26, item 2). Superset serves no Prometheus endpoint, and
//! its own statsd logger needs the `statsd` package the image lacks; gunicorn, which
//! serves every request, sends statsd counters and timers itself (`--statsd-host`). A
//! statsd exporter beside it in each pod, from the Prometheus project's image, receives
//! them on the pod's loopback and serves them to Prometheus on [`METRICS`], named by the
//! mapping in [`STATSD_MAPPING`]:
//!
//! | gunicorn sends | Prometheus sees |
//! | --- | --- |
//! | `superset.gunicorn.requests` (counter) | `superset_gunicorn_requests_total` |
//! | `superset.gunicorn.request.status.<code>` (counter) | `superset_gunicorn_responses_total{status="<code>"}` |
//! | `superset.gunicorn.request.duration` (timer) | `superset_gunicorn_request_duration_seconds` (histogram) |
//! | `superset.gunicorn.workers` (gauge) | `superset_gunicorn_workers` |
//! | `superset.gunicorn.log.<level>` (counter) | `superset_gunicorn_log_messages_total{level="<level>"}` |

use k8s_openapi::api::core::v1::{Container, ResourceRequirements, Service};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use strata_model::build::{
    ContainerPort, PrometheusScrape, ScrapeScheme, container_port, http_probe,
    restricted_security_context, volume_mount,
};
use strata_model::monitoring::{MonitoringObjects, ScrapeSecurity, cluster_monitoring};

use super::alerts;
use super::container::CONFIG_VOLUME;
use crate::validate::{ValidatedCluster, ValidatedRoleGroup};

/// The exporter's image: the Prometheus project's own build.
pub const STATSD_EXPORTER_IMAGE: &str = "quay.io/prometheus/statsd-exporter:v0.31.0";
/// The sidecar's name.
pub const STATSD_EXPORTER_CONTAINER: &str = "statsd-exporter";
/// Where gunicorn sends its statsd packets: the pod's loopback, so nothing outside the
/// pod can feed the exporter.
pub const STATSD_ADDRESS: &str = "127.0.0.1:9125";
/// The prefix gunicorn puts before every statsd name.
pub const STATSD_PREFIX: &str = "superset";
/// Where Prometheus scrapes the exporter.
pub const METRICS: ContainerPort = ContainerPort {
    name: "metrics",
    number: 9102,
};
/// The mapping's key in the role group ConfigMap, and its file name.
pub const STATSD_MAPPING_FILE: &str = "statsd-mapping.yaml";
/// Where the sidecar mounts the role group ConfigMap.
const STATSD_CONFIG_DIR: &str = "/etc/statsd-exporter";

/// How the exporter names gunicorn's statsd metrics. Unmapped names keep the
/// exporter's default naming; a timer (milliseconds, which the exporter turns into
/// seconds) becomes a histogram, with buckets from 5 ms to a minute.
pub const STATSD_MAPPING: &str = r#"defaults:
  observer_type: histogram
  match_type: glob
mappings:
  - match: "superset.gunicorn.request.status.*"
    name: "superset_gunicorn_responses_total"
    labels:
      status: "$1"
  - match: "superset.gunicorn.requests"
    name: "superset_gunicorn_requests_total"
  - match: "superset.gunicorn.request.duration"
    name: "superset_gunicorn_request_duration_seconds"
    histogram_options:
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]
  - match: "superset.gunicorn.workers"
    name: "superset_gunicorn_workers"
  - match: "superset.gunicorn.log.*"
    name: "superset_gunicorn_log_messages_total"
    labels:
      level: "$1"
"#;

/// gunicorn's flags that send its statsd metrics to the sidecar.
pub fn gunicorn_statsd_args() -> [String; 4] {
    [
        "--statsd-host".to_owned(),
        STATSD_ADDRESS.to_owned(),
        "--statsd-prefix".to_owned(),
        STATSD_PREFIX.to_owned(),
    ]
}

/// The exporter beside gunicorn: statsd over UDP on the loopback only (TCP off), the
/// metrics on [`METRICS`]. Its own small resources: it holds a few dozen series.
pub fn statsd_exporter(cluster: &ValidatedCluster) -> Container {
    let quantity = |value: &str| Quantity(value.to_owned());
    Container {
        name: STATSD_EXPORTER_CONTAINER.to_owned(),
        image: Some(STATSD_EXPORTER_IMAGE.to_owned()),
        image_pull_policy: Some(cluster.identity.image.pull_policy.to_string()),
        command: Some(vec!["/bin/statsd_exporter".to_owned()]),
        args: Some(vec![
            format!("--statsd.listen-udp={STATSD_ADDRESS}"),
            "--statsd.listen-tcp=".to_owned(),
            format!("--web.listen-address=:{}", METRICS.number),
            format!("--statsd.mapping-config={STATSD_CONFIG_DIR}/{STATSD_MAPPING_FILE}"),
        ]),
        ports: Some(vec![container_port(METRICS)]),
        resources: Some(ResourceRequirements {
            requests: Some(
                [
                    ("cpu".to_owned(), quantity("10m")),
                    ("memory".to_owned(), quantity("32Mi")),
                ]
                .into(),
            ),
            limits: Some(
                [
                    ("cpu".to_owned(), quantity("100m")),
                    ("memory".to_owned(), quantity("64Mi")),
                ]
                .into(),
            ),
            ..ResourceRequirements::default()
        }),
        liveness_probe: Some(http_probe("/metrics", METRICS, 10, 6)),
        security_context: Some(restricted_security_context()),
        volume_mounts: Some(vec![volume_mount(CONFIG_VOLUME, STATSD_CONFIG_DIR, true)]),
        ..Container::default()
    }
}

/// `<superset>-node-<rg>-metrics`: the exporter of each pod.
pub fn metrics_service(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> Service {
    group.metrics_service(
        &cluster.identity.namespace,
        PrometheusScrape {
            port: METRICS,
            path: "/metrics",
            scheme: ScrapeScheme::Http,
        },
    )
}

/// The ServiceMonitor and PrometheusRule the cluster asks for, over its metrics
/// `services`.
pub fn monitoring_objects(cluster: &ValidatedCluster, services: &[&Service]) -> MonitoringObjects {
    cluster_monitoring(
        &cluster.monitoring,
        &cluster.identity,
        services,
        &ScrapeSecurity::default(),
        |matchers| {
            let mut groups = alerts::rule_groups(matchers);
            groups.extend(alerts::celery_group(&celery_stateful_sets(cluster)));
            groups
        },
    )
}

/// The StatefulSets of the cluster's Celery workers and beat, for their alerts.
pub fn celery_stateful_sets(cluster: &ValidatedCluster) -> alerts::CeleryStatefulSets {
    alerts::CeleryStatefulSets {
        namespace: cluster.identity.namespace.clone(),
        cluster: cluster.identity.name.as_str().to_owned(),
        workers: cluster
            .workers
            .iter()
            .flat_map(|role| &role.groups)
            .map(|group| group.name.object_name().to_owned())
            .collect(),
        beat: cluster
            .beat
            .iter()
            .flat_map(|role| &role.groups)
            .map(|group| group.name.object_name().to_owned())
            .collect(),
    }
}
