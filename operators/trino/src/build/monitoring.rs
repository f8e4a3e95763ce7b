//! What a Prometheus needs to scrape Trino (issue 26, item 2): every node serves
//! `/metrics` on its server port, so with TLS the scrape is HTTPS, and Trino answers it
//! only for an authenticated user who may read system information.
//!
//! - The certificates are checked against the cluster's CA, from the discovery
//!   ConfigMap, and for the coordinator Service's FQDN: Prometheus dials pod IPs, which
//!   no certificate names, and the coordinator Service's FQDN is the one name every
//!   certificate of the cluster covers (each role group's certificate of the operator's,
//!   and a user's certificate, which must cover it).
//! - Prometheus authenticates as the operator's metrics user, with the password of
//!   `<trino>-metrics`; without authentication Trino refuses any password, so it sends
//!   the user name alone (the Secret's empty `noPassword`).

use k8s_openapi::api::core::v1::Service;
use strata_model::monitoring::{
    BasicAuth, CaSource, KeyReference, MonitoringObjects, ScrapeSecurity, TlsConfig,
    cluster_monitoring,
};

use super::alerts;
use super::certificates::coordinator_service_names;
use super::security::{discovery, metrics_credentials, metrics_secret_name};
use crate::validate::{TrinoRole, ValidatedCluster};

/// How Prometheus checks every node and proves itself to it.
pub fn scrape_security(cluster: &ValidatedCluster) -> ScrapeSecurity {
    let secret_key = |key: &str| KeyReference {
        name: metrics_secret_name(cluster),
        key: key.to_owned(),
    };
    let password = if cluster.security.authenticates() {
        metrics_credentials::PASSWORD
    } else {
        metrics_credentials::NO_PASSWORD
    };
    ScrapeSecurity {
        tls: cluster.security.tls.as_ref().map(|_| TlsConfig {
            ca: CaSource {
                config_map: KeyReference {
                    name: cluster.identity.name.as_str().to_owned(),
                    key: discovery::CA.to_owned(),
                },
            },
            server_name: coordinator_service_names(cluster)
                .into_iter()
                .next()
                .unwrap_or_default(),
        }),
        basic_auth: Some(BasicAuth {
            username: secret_key(metrics_credentials::USERNAME),
            password: secret_key(password),
        }),
    }
}

/// The ServiceMonitor and PrometheusRule the cluster asks for, over its metrics
/// `services`.
pub fn monitoring_objects(cluster: &ValidatedCluster, services: &[&Service]) -> MonitoringObjects {
    let workers = cluster
        .role(TrinoRole::Worker)
        .map(|role| role.replicas())
        .unwrap_or_default();
    cluster_monitoring(
        &cluster.monitoring,
        &cluster.identity,
        services,
        &scrape_security(cluster),
        |matchers| alerts::rule_groups(matchers, workers),
    )
}
