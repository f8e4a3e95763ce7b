//! Child kinds from CRDs that another project installs, such as the Prometheus
//! Operator's ServiceMonitor or the Gateway API's HTTPRoute, which a cluster may not
//! have.
//!
//! A controller asks the API server, as it starts, which of its optional kinds it
//! serves. Only those are watched: a watch on a kind that is not served fails for ever,
//! and the caches would never sync. Objects of the other kinds are left out of every
//! apply, and the cluster that asked for them gets a Warning that says what is missing;
//! everything else is applied. A CRD installed later is picked up when the operator
//! restarts, or when a new leadership term starts its controllers again.

use std::collections::BTreeSet;

use kube::Client;
use strata_status::{Reason, SpecWarning};

use crate::cache::ChildKind;
use crate::child::OptionalCrd;

/// The Warning reason when objects of a kind the cluster does not serve were left out.
pub const CRD_NOT_INSTALLED: Reason = strata_status::reason!("CrdNotInstalled");

/// `kinds` split into those to watch (every kind that is not optional, and optional
/// ones the API server serves) and the optional kinds it does not serve.
pub async fn partition(client: &Client, kinds: &[ChildKind]) -> (Vec<ChildKind>, Vec<ChildKind>) {
    let mut served = Vec::new();
    let mut unserved = Vec::new();
    for kind in kinds {
        if !kind.optional() || is_served(client, kind).await {
            served.push(kind.clone());
        } else {
            unserved.push(kind.clone());
        }
    }
    (served, unserved)
}

/// How often discovery is asked before a failure that is not a 404 counts as "not
/// served", and how long it waits in between.
const DISCOVERY_ATTEMPTS: u32 = 3;
const DISCOVERY_RETRY_DELAY: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether the API server lists `kind`'s resource in its group version. A 404 means
/// the group is not served. Any other failure (a timeout, a 5xx) is asked again; when
/// it persists, the kind counts as not served, with a warning: its objects are then
/// left out with a Warning condition, where a watch that never syncs would block every
/// reconcile.
async fn is_served(client: &Client, kind: &ChildKind) -> bool {
    let resource = &kind.resource;
    for attempt in 1..=DISCOVERY_ATTEMPTS {
        match client.list_api_group_resources(&resource.api_version).await {
            Ok(list) => {
                let served = list
                    .resources
                    .iter()
                    .any(|found| found.name == resource.plural);
                if !served {
                    tracing::info!(kind = %resource.kind, api_version = %resource.api_version,
                        "the API server does not serve this optional kind; objects of it are left out");
                }
                return served;
            }
            Err(kube::Error::Api(status)) if status.code == 404 => {
                tracing::info!(kind = %resource.kind, api_version = %resource.api_version,
                    "the API server does not serve this optional kind's group; objects of it are left out");
                return false;
            }
            Err(error) if attempt < DISCOVERY_ATTEMPTS => {
                tracing::warn!(kind = %resource.kind, api_version = %resource.api_version, %error,
                    "could not ask the API server whether it serves this optional kind; asking again");
                tokio::time::sleep(DISCOVERY_RETRY_DELAY).await;
            }
            Err(error) => {
                tracing::warn!(kind = %resource.kind, api_version = %resource.api_version, %error,
                    "could not ask the API server whether it serves this optional kind; objects of it are left out until the operator restarts");
            }
        }
    }
    false
}

/// The Warning for the objects `left_out` (as `Kind/name`) of the `unserved` kinds: the
/// kinds, the CRDs to install for them and the spec fields that ask for them, each
/// named once and in order.
pub fn not_served_warning(left_out: &[String], unserved: &[ChildKind]) -> SpecWarning {
    let missing: Vec<&ChildKind> = unserved
        .iter()
        .filter(|kind| {
            left_out
                .iter()
                .any(|object| object.split('/').next() == Some(kind.resource.kind.as_str()))
        })
        .collect();
    let kinds: Vec<String> = missing
        .iter()
        .map(|kind| format!("{} ({})", kind.resource.kind, kind.resource.api_version))
        .collect();
    let crds: Vec<OptionalCrd> = missing
        .iter()
        .filter_map(|kind| kind.optional_crd())
        .collect();
    let install: BTreeSet<&str> = crds.iter().map(|crd| crd.install).collect();
    let fields: BTreeSet<&str> = crds.iter().map(|crd| crd.asked_for_in).collect();
    let join = |names: BTreeSet<&str>, separator: &str| {
        names.into_iter().collect::<Vec<_>>().join(separator)
    };
    SpecWarning {
        reason: CRD_NOT_INSTALLED,
        message: format!(
            "{} not applied: the API server did not serve {} when the operator's \
             controllers started. Install {}, then restart the operator; or remove what \
             asks for them ({}). Everything else is applied.",
            left_out.join(", "),
            kinds.join(" and "),
            join(install, " and "),
            join(fields, ", "),
        ),
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use strata_model::http_route::HttpRoute;
    use strata_model::monitoring::{PrometheusRule, ServiceMonitor};

    use super::*;

    fn unserved() -> [ChildKind; 3] {
        [
            ChildKind::of::<ServiceMonitor>(),
            ChildKind::of::<PrometheusRule>(),
            ChildKind::of::<HttpRoute>(),
        ]
    }

    #[rstest]
    #[case::a_service_monitor(
        &["ServiceMonitor/simple"],
        "ServiceMonitor/simple not applied: the API server did not serve ServiceMonitor \
         (monitoring.coreos.com/v1) when the operator's controllers started. Install the \
         Prometheus Operator's CRDs, then restart the operator; or remove what asks for them \
         (clusterConfig.monitoring). Everything else is applied."
    )]
    #[case::an_http_route(
        &["HTTPRoute/simple"],
        "HTTPRoute/simple not applied: the API server did not serve HTTPRoute \
         (gateway.networking.k8s.io/v1) when the operator's controllers started. Install the \
         Gateway API's CRDs (standard channel), then restart the operator; or remove what \
         asks for them (clusterConfig.httpRoute). Everything else is applied."
    )]
    #[case::both_projects_kinds(
        &["ServiceMonitor/simple", "PrometheusRule/simple", "HTTPRoute/simple"],
        "ServiceMonitor/simple, PrometheusRule/simple, HTTPRoute/simple not applied: the API \
         server did not serve ServiceMonitor (monitoring.coreos.com/v1) and PrometheusRule \
         (monitoring.coreos.com/v1) and HTTPRoute (gateway.networking.k8s.io/v1) when the \
         operator's controllers started. Install the Gateway API's CRDs (standard channel) \
         and the Prometheus Operator's CRDs, then restart the operator; or remove what asks \
         for them (clusterConfig.httpRoute, clusterConfig.monitoring). Everything else is \
         applied."
    )]
    fn the_warning_names_the_objects_and_what_to_install(
        #[case] left_out: &[&str],
        #[case] expected: &str,
    ) {
        let left_out: Vec<String> = left_out.iter().map(|object| (*object).to_owned()).collect();
        let warning = not_served_warning(&left_out, &unserved());
        assert_eq!(warning.reason, CRD_NOT_INSTALLED);
        assert_eq!(warning.message, expected);
    }

    #[rstest]
    #[case::service_monitor(ChildKind::of::<ServiceMonitor>(), true)]
    #[case::prometheus_rule(ChildKind::of::<PrometheusRule>(), true)]
    #[case::http_route(ChildKind::of::<HttpRoute>(), true)]
    #[case::service(ChildKind::of::<k8s_openapi::api::core::v1::Service>(), false)]
    fn only_the_kinds_of_other_projects_crds_are_optional(
        #[case] kind: ChildKind,
        #[case] optional: bool,
    ) {
        assert_eq!(kind.optional(), optional);
    }
}
